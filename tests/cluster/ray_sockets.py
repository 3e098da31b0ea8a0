"""The Internet sockets of a running Ray head's processes, sampled while it works: which
addresses its GCS, raylet, dashboard, client server and workers listen on and connect over.

Every process of a test-bed head (:mod:`.ray_head`) is in the session its ``ray start --block``
leads; the sampler reads the sockets of that session's processes (and of the start process's
descendants, should one leave the session) with psutil, every ``interval`` seconds from a
thread of its own, until stopped. A connection shorter than the interval may go unseen;
listening sockets and Ray's long-lived gRPC channels are seen.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class RaySocket:
    process: str  # the process's name (gcs_server, raylet, ray::IDLE, ...)
    kind: str  # tcp or udp
    status: str  # psutil's: LISTEN, ESTABLISHED, ... (NONE for UDP)
    local: str  # address:port
    remote: str  # address:port, "" when not connected

    @property
    def loopback_only(self) -> bool:
        """Bound to a loopback address, and connected to one if connected at all."""
        return all(_loopback(a) for a in (self.local, self.remote) if a)

    def __str__(self) -> str:
        peer = f" -> {self.remote}" if self.remote else ""
        return f"{self.process}: {self.kind} {self.status} {self.local}{peer}"


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.rsplit(":", 1)[0].strip("[]"))
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _address(addr: tuple[str, int] | tuple[()]) -> str:
    if not addr:
        return ""
    host, port = addr[0], addr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def head_processes(root: int) -> list[psutil.Process]:
    """The process ``root`` (a head's ``ray start``), its descendants, and every process of
    the session it leads."""
    found: dict[int, psutil.Process] = {}
    with contextlib.suppress(psutil.NoSuchProcess):
        start = psutil.Process(root)
        found[root] = start
        for child in start.children(recursive=True):
            found[child.pid] = child
    for process in psutil.process_iter():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if process.pid not in found and os.getsid(process.pid) == root:
                found[process.pid] = process
    return list(found.values())


def sockets_of(root: int) -> set[RaySocket]:
    """The Internet sockets (TCP and UDP, IPv4 and IPv6) of the head's processes now. One
    read of the machine's socket tables (cheaper than one per process), kept to the head's."""
    processes = {process.pid: process for process in head_processes(root)}
    seen: set[RaySocket] = set()
    for c in psutil.net_connections(kind="inet"):
        process = processes.get(c.pid) if c.pid is not None else None
        if process is None:
            continue
        try:
            name = process.name()
        except psutil.NoSuchProcess:
            continue  # ended between the two reads
        kind = "tcp" if c.type == socket.SOCK_STREAM else "udp"
        seen.add(RaySocket(name, kind, c.status, _address(c.laddr), _address(c.raddr)))
    return seen


@dataclass
class Sampling:
    seen: set[RaySocket]
    samples: int = 0


@contextlib.contextmanager
def sampling(root: int, interval: float = 0.1) -> Iterator[Sampling]:
    """Sample the head's sockets from a thread while in the block; the result holds every
    socket seen and how many samples were taken (one more after the block ends)."""
    result = Sampling(set())
    stop = threading.Event()

    def sample() -> None:
        while True:
            result.seen |= sockets_of(root)
            result.samples += 1
            if stop.wait(interval):
                return

    thread = threading.Thread(target=sample, name="ray-sockets", daemon=True)
    thread.start()
    try:
        yield result
    finally:
        stop.set()
        thread.join()
    result.seen |= sockets_of(root)
    result.samples += 1
