"""The soak's memory probe (``bench_soak --memory-probe DIR``), loaded by every Python process
started with this directory on ``PYTHONPATH`` and ``DW_MEMORY_PROBE=DIR`` set: the Jupyter
server and the kernels. It traces allocations (``tracemalloc``, 12 frames) and, every
``DW_MEMORY_PROBE_INTERVAL`` s, writes a snapshot (``<pid>-<n>.snap``) and the process's
object counts by type with its RSS (``<pid>-<n>.json``), for ``benchmarks/memory_diff.py``.

A diagnosis, not a figure: tracing doubles a process's memory and slows it, so a soak run
with the probe is never the one whose slopes the README gives. Self-contained on purpose
(it runs before anything else is importable).
"""

import gc
import json
import os
import sys
import threading
import time
import tracemalloc
from collections import Counter


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _probe(directory: str, interval: float) -> None:
    index = 0
    while True:
        time.sleep(interval)
        stem = os.path.join(directory, f"{os.getpid()}-{index:03d}")
        tracemalloc.take_snapshot().dump(stem + ".snap")
        # f-strings: a type's __module__ may be a descriptor, not a string.
        counts = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())
        traced = tracemalloc.get_traced_memory()[0]
        with open(stem + ".json", "w") as out:
            json.dump(
                {
                    "argv": sys.argv,
                    "time": time.time(),
                    "rss_mib": _rss_mib(),
                    "traced_mib": traced / 2**20,
                    "objects": dict(counts.most_common(400)),
                },
                out,
            )
        index += 1


_directory = os.environ.get("DW_MEMORY_PROBE")
if _directory:
    tracemalloc.start(12)
    threading.Thread(
        target=_probe,
        args=(_directory, float(os.environ.get("DW_MEMORY_PROBE_INTERVAL", "120"))),
        name="memory-probe",
        daemon=True,
    ).start()
