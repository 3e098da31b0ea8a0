"""The side-by-side steps as a codeflare-sdk user runs them (bench_codeflare.py).

Run by the Python of codeflare-sdk's own virtual environment, never ours: it imports nothing
of jupyter_dw or this repository. ``python codeflare_steps.py NAMESPACE QUEUE CLUSTER``;
``KUBECONFIG`` names the user's kubeconfig. Prints one JSON line per step: ``{"step",
"start", "end"}`` (``time.time()``), and ``{"ready_known": t}`` when ``wait_ready`` returns.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from typing import Any


def step(name: str, call: Any) -> Any:
    start = time.time()
    with contextlib.redirect_stdout(io.StringIO()):  # its tables and progress, not ours
        value = call()
    print(json.dumps({"step": name, "start": start, "end": time.time()}), flush=True)
    return value


KERNEL_MODULES = ("asyncio", "IPython")
"""What every kernel has imported before its first cell: imported first, outside the steps, as
bench_codeflare.py's jupyter_dw side does."""


def main() -> None:
    namespace, queue, name = sys.argv[1:4]
    for module in KERNEL_MODULES:
        __import__(module)
    sdk = step("import", lambda: __import__("codeflare_sdk"))
    queues = step("list_queues", lambda: sdk.list_local_queues(namespace=namespace))
    assert any(q["name"] == queue for q in queues), queues
    config = sdk.ClusterConfiguration(
        name=name,
        namespace=namespace,
        num_workers=1,
        head_cpu_requests=1,
        head_cpu_limits=1,
        head_memory_requests=2,
        head_memory_limits=2,
        worker_cpu_requests=1,
        worker_cpu_limits=1,
        worker_memory_requests=2,
        worker_memory_limits=2,
        local_queue=queue,
        verify_tls=False,
    )
    # apply() then waits up to `timeout` (300 s by default) for a CA Secret that only
    # OpenShift AI's KubeRay makes; upstream KubeRay never does: do not wait for it.
    cluster = step("create", lambda: _apply(sdk, config))
    # KWOK pods run no Ray and have no dashboard route: readiness is KubeRay's status only.
    step("wait_ready", lambda: cluster.wait_ready(timeout=600, dashboard_check=False))
    print(json.dumps({"ready_known": time.time()}), flush=True)
    listed = step("list_clusters", lambda: sdk.list_all_clusters(namespace, print_to_console=False))
    assert [c.name for c in listed] == [name], listed
    status = [str(c.status) for c in listed]
    print(json.dumps({"listed_status": status}), flush=True)
    step("delete", cluster.down)


def _apply(sdk: Any, config: Any) -> Any:
    cluster = sdk.Cluster(config)
    cluster.apply(timeout=0)
    return cluster


if __name__ == "__main__":
    main()
