"""One order for Workloads Kueue cannot tell apart: a pending list's ties kept as first seen.
Kueue 0.14 re-sorts ties at random on every answer, so rows would jump. Pure. Why:
docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jupyter_dw.domain.lenient import integer as _int
from jupyter_dw.domain.lenient import mapping as _map

Object = dict[str, Any]

_POSITIONS = ("positionInLocalQueue", "positionInClusterQueue")


def _tie_key(item: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """What Kueue orders by that the visibility API shows: priority, creation second (None
    when the answer does not say: then nothing is known to tie)."""
    created = _map(item.get("metadata")).get("creationTimestamp")
    return (item.get("priority"), created) if created else None


def _name(item: Mapping[str, Any]) -> tuple[Any, Any]:
    metadata = _map(item.get("metadata"))
    return metadata.get("namespace"), metadata.get("name")


def keep_tie_order(previous: Sequence[Object], items: Sequence[Object]) -> tuple[Object, ...]:
    """``items`` (a visibility API answer, in Kueue's order) with each run of adjacent ties
    put back in the order ``previous`` listed them (Workloads it did not list keep their new
    order, after those it did); the run's positions are handed out again in the new order.
    Items outside a tie, and the positions the run holds, are unchanged."""
    seen = {_name(item): index for index, item in enumerate(previous)}
    result: list[Object] = []
    start = 0
    while start < len(items):
        end = start + 1
        key = _tie_key(items[start])
        while end < len(items) and key is not None and _tie_key(items[end]) == key:
            end += 1
        run = list(items[start:end])
        if len(run) > 1:
            run = _reordered(run, seen)
        result.extend(run)
        start = end
    return tuple(result)


def _reordered(run: list[Object], seen: Mapping[tuple[Any, Any], int]) -> list[Object]:
    unseen = len(seen)
    ordered = sorted(enumerate(run), key=lambda pair: (seen.get(_name(pair[1]), unseen), pair[0]))
    if [index for index, _ in ordered] == list(range(len(run))):
        return run
    # The positions the run holds, handed out in the new order. A LocalQueue's answer lists
    # only its own Workloads, each with both positions; a run's cluster-queue positions may
    # have another queue's Workloads between them, which keep theirs.
    slots = {
        key: sorted(n for n in (_int(item.get(key)) for item in run) if n is not None)
        for key in _POSITIONS
    }
    if any(len(values) != len(run) for values in slots.values()):
        return [item for _, item in ordered]  # positions missing: reorder only
    return [
        {**item, **{key: slots[key][rank] for key in _POSITIONS}}
        for rank, (_, item) in enumerate(ordered)
    ]
