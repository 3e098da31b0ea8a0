"""What the first cell costs: ``import jupyter_dw`` + ``%load_ext jupyter_dw`` in a fresh
process, wall time and peak memory, with baselines from the same run.

Each measurement runs in its own fresh Python process with IPython's shell already created
(a kernel has it before the first cell runs), so the figures are what the cell adds:

- **first cell**: ``import jupyter_dw`` + ``%load_ext jupyter_dw`` (the product);
- **baseline: IPython only**: the same process doing nothing else (its peak memory is the
  floor every kernel pays);
- **reference: eager**: importing the whole kernel side at once (API, widgets, the Kubernetes
  client) -- what the first cell would cost if nothing were lazy.

Usage: ``.venv/bin/python -m benchmarks.bench_first_cell [--runs 7]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = """
import json, resource, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
{body}
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"seconds": seconds, "peak_kib": peak, "before_kib": before}}))
"""

CASES = {
    "first cell": "import jupyter_dw\nshell.run_line_magic('load_ext', 'jupyter_dw')",
    "baseline: IPython only": "pass",
    "reference: eager": (
        "import jupyter_dw\nshell.run_line_magic('load_ext', 'jupyter_dw')\n"
        "import jupyter_dw.notebook.api, jupyter_dw.notebook.widgets"
    ),
}


def measure(body: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body)], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"first cell, {args.runs} fresh processes each (median)")
    for name, body in CASES.items():
        runs = [measure(body) for _ in range(args.runs)]
        seconds = statistics.median(r["seconds"] for r in runs)
        peak = statistics.median(r["peak_kib"] for r in runs) / 1024
        added = statistics.median(r["peak_kib"] - r["before_kib"] for r in runs) / 1024
        print(f"{name:<24} {seconds * 1000:7.1f} ms   peak {peak:6.1f} MiB   (+{added:5.1f} MiB)")


if __name__ == "__main__":
    main()
