"""The session parses a queue object again only when its cache replaced it (issue 19: the
cost of an answer after a change follows what changed, not the size of the cluster)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from jupyter_dw.core.queue_state import Parser as _Parser
from jupyter_dw.core.queue_state import _memo_of
from jupyter_dw.domain.kueue_model import KueueObjectError
from jupyter_dw.k8s.session import KubeSession


def queue(name: str, cluster_queue: str = "cq") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"clusterQueue": cluster_queue}}


def test_an_unchanged_object_is_not_parsed_again_a_replaced_one_is():
    parsed: list[str] = []

    def parse(obj: dict[str, Any]) -> tuple[str, str]:
        name = obj["metadata"]["name"]
        if name == "broken":
            raise KueueObjectError("no")
        parsed.append(name)
        return name, obj["spec"]["clusterQueue"]

    a, b, broken = queue("a"), queue("b"), queue("broken")
    first = _Parser({})
    assert first([a, b, broken], parse) == (("a", "cq"), ("b", "cq"))  # broken: skipped
    assert parsed == ["a", "b"]

    # The cache replaces an object's dict when the object changes: b2 is b modified.
    b2 = queue("b", "other")
    second = _Parser(first.parsed)
    assert second([a, b2, broken], parse) == (("a", "cq"), ("b", "other"))
    assert parsed == ["a", "b", "b"]
    # Only what the second parse saw is kept for the next: b's old dict is let go.
    assert {id(o) for o, _ in second.parsed.values()} == {id(a), id(b2)}


def test_one_memo_per_session_shared_by_every_caller_and_let_go_with_it():
    # The queue service reuses its last answer while it is handed the very same QueueState,
    # so every caller of one session must reach one memo; another session has its own.
    first, second = KubeSession(), KubeSession()
    assert _memo_of(first) is _memo_of(first)
    assert _memo_of(first) is not _memo_of(second)
    held = weakref.ref(_memo_of(second))
    del second
    gc.collect()
    assert held() is None  # a session's memo (and the caches it keeps) goes with it
