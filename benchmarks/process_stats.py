"""What a running process holds and has spent, read from ``/proc`` (Linux, any PID this user
may read): its CPU seconds, its resident memory (RSS) and its proportional share (PSS), its
threads and open file descriptors.

RSS counts every shared page (the Python interpreter, its libraries) in full in each process,
so the RSS of 150 Python processes adds up to more than they take from the machine; PSS
divides each shared page among the processes that map it, so PSS figures add up.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from tests.cluster.scale import process_cpu_seconds

MIB = 1024 * 1024


def _kib_field(path: str, name: str) -> float | None:
    """The ``name:  N kB`` line of a ``/proc`` file, in MiB (None when it cannot be read)."""
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(f"{name}:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def rss_mib(pid: int) -> float | None:
    """Resident memory of ``pid`` (``VmRSS``), MiB."""
    return _kib_field(f"/proc/{pid}/status", "VmRSS")


def threads(pid: int) -> int | None:
    """Threads of ``pid`` (``Threads`` of its ``status``)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def open_fds(pid: int) -> int | None:
    """File descriptors ``pid`` holds open (sockets, pipes, files: its ``fd`` directory)."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def pss_mib(pid: int) -> float | None:
    """Proportional set size of ``pid`` (``smaps_rollup``), MiB."""
    return _kib_field(f"/proc/{pid}/smaps_rollup", "Pss")


def available_mib() -> float:
    """``MemAvailable`` of the machine, MiB."""
    found = _kib_field("/proc/meminfo", "MemAvailable")
    if found is None:
        raise RuntimeError("/proc/meminfo has no MemAvailable")
    return found


@dataclass(frozen=True)
class GroupSample:
    """One moment of a group of processes: CPU seconds so far and memory, summed."""

    processes: int
    cpu_seconds: float
    rss_mib: float
    pss_mib: float


def sample(pids: Iterable[int]) -> GroupSample:
    """The processes of ``pids`` alive now, summed (one that ended counts nothing)."""
    processes, cpu, rss, pss = 0, 0.0, 0.0, 0.0
    for pid in pids:
        seconds = process_cpu_seconds(pid)
        if seconds is None:
            continue
        processes += 1
        cpu += seconds
        rss += rss_mib(pid) or 0.0
        pss += pss_mib(pid) or 0.0
    return GroupSample(processes, cpu, rss, pss)
