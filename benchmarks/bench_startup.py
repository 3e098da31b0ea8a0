"""What jupyter_dw adds to a Jupyter server's start, and how soon its first answer comes.

``--pairs`` pairs of ``jupyter server`` starts (the order within a pair alternates), one with
jupyter_dw enabled and one without (``ServerApp.jpserver_extensions``), on the local control
plane (started if needed; the server reads it through the administrator's kubeconfig, in a
namespace of its own with one LocalQueue):

- **start**: from spawning the process to the first 200 of ``GET api/status`` (polled every
  2 ms): the server is up. Added = with - without, per pair.
- **first answer**: with jupyter_dw, from that moment to the first 200 of ``GET dw/api/queues``
  (the sidebar's first request: discovery, access reviews, the queue caches' first lists).

The run without the extension checks ``dw/api/version`` answers 404 (it really is off).

jupyter_dw's bytecode is compiled first, as installing its wheel does (pip compiles every
module it installs). Here it is installed editable from the source tree, and with
``PYTHONDONTWRITEBYTECODE`` set (as on this machine) every start would compile jupyter_dw's
modules from source again (about 45 ms), while jupyter_server's and JupyterLab's come compiled.

Usage: ``.venv/bin/python -m benchmarks.bench_startup [--pairs 10] [--json FILE] [--smoke]``
(``--smoke``: 2 pairs).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import tempfile
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client

import jupyter_dw
from benchmarks.testbed import connect
from benchmarks.workbench import JupyterServer
from tests.cluster.fixtures import KueueObjects


def start(work: Path, namespace: str, extension: bool, index: int) -> dict[str, float]:
    """One start; seconds to ``api/status`` and (with the extension) to ``dw/api/queues``."""
    server = JupyterServer(
        work,
        dict(os.environ),
        extension=extension,
        extra_args=(f"--JupyterDW.namespace={namespace}",),
        log_name=f"server-{index}-{'with' if extension else 'without'}.log",
    )
    try:
        up = server.wait_answer("api/status")
        figures = {"start": up - server.spawned}
        if extension:
            figures["first_answer"] = server.wait_answer("dw/api/queues") - up
        else:
            status, _ = server.request("dw/api/version")
            assert status == 404, f"jupyter_dw answered {status} while disabled"
        return figures
    finally:
        server.stop()


def quantiles(values: list[float]) -> dict[str, float]:
    ms = sorted(v * 1000 for v in values)
    return {
        "median_ms": round(statistics.median(ms), 1),
        "max_ms": round(ms[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--smoke", action="store_true", help="tiny: every figure measured")
    args = parser.parse_args()
    if args.smoke:
        args.pairs = 2
    compileall.compile_dir(Path(jupyter_dw.__file__).parent, quiet=1)
    _, api, version = connect()
    namespace = f"bench-startup-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": namespace}})
    kueue = KueueObjects(api, version, namespace, prefix=namespace)
    kueue.local_queue("team", kueue.cluster_queue("cq", {kueue.flavor("f"): {"cpu": "4"}}))
    with_ext: list[float] = []
    without: list[float] = []
    added: list[float] = []
    first: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="dw-bench-startup-") as tmp:
            for pair in range(args.pairs):
                order = (True, False) if pair % 2 == 0 else (False, True)
                runs = {ext: start(Path(tmp), namespace, ext, pair) for ext in order}
                with_ext.append(runs[True]["start"])
                without.append(runs[False]["start"])
                added.append(runs[True]["start"] - runs[False]["start"])
                first.append(runs[True]["first_answer"])
                print(
                    f"pair {pair + 1}: with {runs[True]['start'] * 1000:.0f} ms, without "
                    f"{runs[False]['start'] * 1000:.0f} ms, first dw answer "
                    f"{runs[True]['first_answer'] * 1000:.0f} ms later"
                )
    finally:
        kueue.cleanup()
        core.delete_namespace(namespace)
    results: dict[str, Any] = {
        "pairs": args.pairs,
        "with_extension": quantiles(with_ext),
        "without_extension": quantiles(without),
        "added": {"median_ms": round(statistics.median(added) * 1000, 1)},
        "first_answer": quantiles(first),
        "load_average": os.getloadavg()[0],
    }
    print(
        f"\nstart (spawn -> api/status), median of {args.pairs} pairs: with jupyter_dw "
        f"{results['with_extension']['median_ms']} ms, without "
        f"{results['without_extension']['median_ms']} ms; added (paired) "
        f"{results['added']['median_ms']} ms; first GET dw/api/queues "
        f"{results['first_answer']['median_ms']} ms after start (max "
        f"{results['first_answer']['max_ms']} ms)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
