"""The session parses a queue object again only when its cache replaced it (issue 19: the
cost of an answer after a change follows what changed, not the size of the cluster)."""

from __future__ import annotations

from typing import Any

from jupyter_dw.core.queue_state import Parser as _Parser
from jupyter_dw.domain.kueue_model import KueueObjectError


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
