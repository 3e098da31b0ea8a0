"""The test bed's port chooser never hands out one port twice in a process: a control plane
asks for fifteen before its components bind any, so a repeat would make one of them fail with
"address already in use"."""

from __future__ import annotations

import socket

from tests.cluster.controlplane import free_port


def test_ports_are_free_and_never_handed_out_twice() -> None:
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    for port in ports[:20]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free when handed out
