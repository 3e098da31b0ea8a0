"""The side-by-side steps as a jupyter_dw user runs them in a kernel (bench_codeflare.py).

Run as a script (``python benchmarks/dw_steps.py NAMESPACE QUEUE CLUSTER``; the namespace
is the service account's, given for symmetry with codeflare_steps.py), never as a module
of the benchmarks package: the process must hold nothing of jupyter_dw, the Kubernetes client
or urllib3 before its first step, as a kernel holds nothing of them before its first cell. It
reads through its Jupyter server when ``JUPYTER_DW_SERVER_LINK`` names one, else on its own
connection. Prints what codeflare_steps.py prints: one JSON line per step (``{"step",
"start", "end"}``, ``time.time()``), ``{"ready_known": t}`` when the wait returns, the
statuses listed, and after the steps which connection the kernel used.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

KERNEL_MODULES = ("asyncio", "IPython")
"""What every kernel has imported before its first cell (ipykernel runs an asyncio loop and an
IPython shell): imported first, outside the steps, as codeflare_steps.py does, so that neither
side's first step pays for what a kernel already holds."""


def step(name: str, call: Any) -> Any:
    start = time.time()
    value = call()
    print(json.dumps({"step": name, "start": start, "end": time.time()}), flush=True)
    return value


def main() -> None:
    queue, name = sys.argv[2:4]  # the namespace is the service account's
    for module in KERNEL_MODULES:
        __import__(module)
    dw = step("import", lambda: __import__("jupyter_dw"))

    def first_call() -> Any:
        # The first attribute of `dw` imports the notebook API (lazily, so that `import
        # jupyter_dw` stays light): that belongs to the first call, and is told apart.
        started = time.time()
        __import__("jupyter_dw.notebook.api")
        print(json.dumps({"api_import_seconds": time.time() - started}), flush=True)
        return dw.queues()

    queues = step("list_queues", first_call)
    assert any(q.name == queue for q in queues), queues
    spec = {"worker_cpu": "1", "worker_memory": "2Gi", "head_cpu": "1", "head_memory": "2Gi"}
    handle = step("create", lambda: dw.submit(name=name, queue=queue, workers=1, **spec))
    step("wait_ready", lambda: handle.wait("ready", timeout=600))
    print(json.dumps({"ready_known": time.time()}), flush=True)
    listed = step("list_clusters", lambda: [(h.name, h.status().state) for h in dw.clusters()])
    assert [n for n, _ in listed] == [name], listed
    print(json.dumps({"listed_status": [s for _, s in listed]}), flush=True)
    step("delete", handle.delete)
    # After the steps: which connection the kernel used (a call, but outside every step).
    print(json.dumps({"connection": dw.context().connection.mode}), flush=True)


if __name__ == "__main__":
    main()
