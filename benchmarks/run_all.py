"""``make bench``: run every benchmark, write its figures as JSON, render the docs' tables.

Each ``benchmarks/bench_*.py`` runs in its own process with the arguments below (those the
benchmarks page, ``docs/explanation/benchmarks.md``, shows). One that takes ``--json``
writes its figures there; for the others the JSON holds what they printed. Every result
file (``benchmarks/results/<name>.json``, git-ignored) also records the command, its
seconds, its exit status and the machine's load average before and after (figures measured
under load are noisy: the page says the load). Then :mod:`benchmarks.readme_tables`
renders the tables it knows into the benchmarks page.

Usage: ``.venv/bin/python -m benchmarks.run_all [--only NAME ...] [--smoke]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import readme_tables

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

BENCHMARKS: dict[str, list[str]] = {
    "bench_first_cell": [],
    "bench_queues": ["--scale"],
    "bench_live": ["--changes", "60"],
    "bench_scale": ["--changes", "30"],
    "bench_faults": ["--rounds", "100", "--pending", "1", "4", "--creates", "10"],
    "bench_sidebar": ["--queues", "200", "--clusters", "50", "--changes", "40"],
    "bench_jobs": ["--jobs", "20", "--lines", "5"],
    "bench_recovery": ["--runs", "5"],
    "bench_load": [],
    "bench_fleet": [],
    "bench_usage": [],
    "bench_memory": [],
    "bench_startup": ["--pairs", "10"],
    "bench_codeflare": [],
    "bench_decode": [],
    "bench_soak": [],
}
"""Each benchmark and the arguments the benchmarks page's figures were measured with."""
TAKES_JSON = {
    "bench_load",
    "bench_fleet",
    "bench_usage",
    "bench_memory",
    "bench_startup",
    "bench_codeflare",
    "bench_decode",
    "bench_soak",
}
TAKES_SMOKE = {"bench_queues", *TAKES_JSON}


def run(name: str, args: list[str], smoke: bool) -> dict[str, object]:
    out = RESULTS / f"{name}.json"
    argv = [sys.executable, "-m", f"benchmarks.{name}", *(["--smoke"] if smoke else args)]
    if name in TAKES_JSON:
        argv += ["--json", str(out.with_suffix(".figures.json"))]
    print(f"== {' '.join(argv[1:])}", flush=True)
    load_before = os.getloadavg()
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True)
    result: dict[str, object] = {
        "command": " ".join(["python", *argv[1:]]),
        "seconds": round(time.monotonic() - started, 1),
        "returncode": done.returncode,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "stdout": done.stdout[-20000:],
        "stderr": done.stderr[-5000:] if done.returncode else "",
    }
    figures = out.with_suffix(".figures.json")
    if figures.exists():
        result["figures"] = json.loads(figures.read_text())
        figures.unlink()
    out.write_text(json.dumps(result, indent=2))
    print(done.stdout[-3000:], flush=True)
    if done.returncode:
        print(done.stderr[-3000:], file=sys.stderr, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS))
    parser.add_argument("--smoke", action="store_true", help="the smoke runs (where there are)")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    names = args.only or list(BENCHMARKS)
    if args.smoke:
        names = [n for n in names if n in TAKES_SMOKE]
    failed = [n for n in names if run(n, BENCHMARKS[n], args.smoke)["returncode"]]
    if not args.smoke:
        readme_tables.render(RESULTS)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
