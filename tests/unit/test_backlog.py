"""The events socket's backlog: one waiting change per object, the latest, merged events."""

from __future__ import annotations

from typing import Any

from jupyter_dw.core.backlog import ChangeBacklog


def test_backlog_keeps_the_latest_change_of_each_object():
    backlog = ChangeBacklog(limit=2)

    def obj(name: str, value: int) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "ns"}, "value": value}

    assert backlog.put(("workloads", "ADDED", obj("a", 1))) is True
    assert backlog.put(("workloads", "MODIFIED", obj("a", 2))) is False
    assert backlog.put(("workloads", "MODIFIED", obj("b", 1))) is False
    assert backlog.put(("workloads", "MODIFIED", obj("c", 1))) is False  # past the limit
    assert backlog.overflowed and len(backlog) == 2 and backlog.coalesced == 1
    assert backlog.take() == ("workloads", "ADDED", obj("a", 2))
    assert backlog.put(("workloads", "DELETED", obj("b", 2))) is False
    assert backlog.take() == ("workloads", "DELETED", obj("b", 2))
    assert backlog.take() is None
