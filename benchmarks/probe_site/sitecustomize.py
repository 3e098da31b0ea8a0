"""The soak's memory probe (``bench_soak --memory-probe DIR``), loaded by every Python process
started with this directory on ``PYTHONPATH`` and ``DW_MEMORY_PROBE=DIR`` set: the Jupyter
server and the kernels. Every ``DW_MEMORY_PROBE_INTERVAL`` s it writes ``<pid>-<n>.json``: the
RSS, the object counts by type, the largest dicts, lists and sets (with a few of their keys),
pymalloc's arenas (``sys._debugmallocstats``) and glibc's heap (``mallinfo2``); and, unless
``DW_MEMORY_PROBE_TRACE=0``, a ``tracemalloc`` snapshot (12 frames) as ``<pid>-<n>.snap``,
for ``benchmarks/memory_diff.py``.

An experiment, never the product: with ``DW_MEMORY_PROBE_TRIM=SECONDS`` it also calls glibc's
``malloc_trim(0)`` every SECONDS (which gives the free pages inside the heap back to the
kernel, not only its top), and each record says how many trims ran and how long they took;
``bench_soak --env DW_MEMORY_PROBE_TRIM=60`` beside a run without it tells whether RSS that
grows with glibc's free memory is given back.

A diagnosis, not a figure: tracing doubles a process's memory and slows it, so a soak run
with the probe is never the one whose slopes the README gives (without tracing, a probe
costs a walk over the objects, a few hundred milliseconds, every ten samples).
Self-contained on purpose (it runs before anything else is importable).
"""

import ctypes
import gc
import json
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter

LARGEST = 20
"""Containers listed per probe (the longest)."""
LONG = 1000
"""A container shorter than this is never listed."""


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _largest(objects: list) -> list:
    """The longest dicts, lists and sets: type, length, the first few keys or items. Among the
    objects' referents too: a dict of strings and numbers only is not tracked by gc."""
    found = {}
    for o in objects:
        for candidate in (o, *gc.get_referents(o)):
            if type(candidate) in (dict, list, set) and len(candidate) >= LONG:
                found[id(candidate)] = candidate
    longest = sorted(found.values(), key=len, reverse=True)
    return [
        {
            "type": type(o).__name__,
            "length": len(o),
            "sample": [repr(item)[:80] for item in list(o)[:3]],
        }
        for o in longest[:LARGEST]
    ]


def _pymalloc() -> dict:
    """pymalloc's arenas now and at most, from ``sys._debugmallocstats`` (C writes it to fd 2,
    so fd 2 points at a file meanwhile: another thread's line to stderr would go there too)."""
    with tempfile.TemporaryFile("w+") as out:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        stats = {}
        for line in out:
            for key in ("arenas allocated current", "arenas highwater mark"):
                if line.lstrip("# ").startswith(key):
                    stats[key] = line.rsplit("=", 1)[-1].strip().replace(",", "")
        return stats


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mallinfo2():
    """libc's ``mallinfo2``, looked up once: each ``ctypes.CDLL`` makes classes of its own,
    which a probe per call would count as the process's growth."""
    try:
        function = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    function.restype = _MallInfo2
    return function


_MALLINFO2 = _mallinfo2()


def _malloc() -> dict:
    """glibc's heap in MiB, every arena summed (``mallinfo2``): ``in_use`` (blocks handed out:
    Python's objects above 512 bytes, its dicts' tables, and every C library's, OpenSSL's
    included; pymalloc maps its arenas itself),
    ``free`` (held by malloc, not given back: fragmentation) and ``mmapped`` (large blocks).
    RSS growing with ``in_use`` flat and Python's heap flat is fragmentation; ``in_use``
    growing while Python's heap is flat is memory a C library holds. Empty off glibc."""
    if _MALLINFO2 is None:
        return {}
    info = _MALLINFO2()
    mib = 2**20
    return {
        "in_use": info.uordblks / mib,
        "free": info.fordblks / mib,
        "mmapped": info.hblkhd / mib,
        "arena": info.arena / mib,
    }


_TRIMS = {"count": 0, "seconds": 0.0, "longest": 0.0}
"""What the trimming thread did so far (read by the probe; one writer)."""


def _trim(interval: float) -> None:
    trim = ctypes.CDLL(None).malloc_trim
    trim.argtypes = [ctypes.c_size_t]
    while True:
        time.sleep(interval)
        start = time.perf_counter()
        trim(0)
        took = time.perf_counter() - start
        _TRIMS["count"] += 1
        _TRIMS["seconds"] += took
        _TRIMS["longest"] = max(_TRIMS["longest"], took)


def _probe(directory: str, interval: float, traced: bool) -> None:
    index = 0
    while True:
        time.sleep(interval)
        stem = os.path.join(directory, f"{os.getpid()}-{index:03d}")
        if traced:
            tracemalloc.take_snapshot().dump(stem + ".snap")
        objects = gc.get_objects()
        # f-strings: a type's __module__ may be a descriptor, not a string.
        counts = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in objects)
        record = {
            "argv": sys.argv,
            "time": time.time(),
            "rss_mib": _rss_mib(),
            "traced_mib": tracemalloc.get_traced_memory()[0] / 2**20 if traced else None,
            "pymalloc": _pymalloc(),
            "malloc_mib": _malloc(),
            "trims": dict(_TRIMS),
            "largest": _largest(objects),
            "objects": dict(counts.most_common(400)),
        }
        del objects
        with open(stem + ".json", "w") as out:
            json.dump(record, out)
        index += 1


_directory = os.environ.get("DW_MEMORY_PROBE")
if _directory:
    _traced = os.environ.get("DW_MEMORY_PROBE_TRACE", "1") != "0"
    if _traced:
        tracemalloc.start(12)
    threading.Thread(
        target=_probe,
        args=(_directory, float(os.environ.get("DW_MEMORY_PROBE_INTERVAL", "120")), _traced),
        name="memory-probe",
        daemon=True,
    ).start()
    _trim_every = float(os.environ.get("DW_MEMORY_PROBE_TRIM", "0"))
    if _trim_every > 0 and _MALLINFO2 is not None:
        threading.Thread(target=_trim, args=(_trim_every,), name="memory-trim", daemon=True).start()
