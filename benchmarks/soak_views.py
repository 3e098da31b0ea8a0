"""Whether every change of a soak cycle reached every open view (bench_soak.py). Pure: no I/O.

A view is what a person looks at, read as the events socket's messages (``snapshot``,
``cluster``, ``rayjob``; a kernel's live views write the same messages, each its ``to_json()``).
A cycle's changes are two chains of milestones, each in the order they happen: the cluster's
(created, admitted, ready, scaled up, scaled down, deleted) and its RayJob's (created,
admitted, deleted). A view owes the milestones that happened after it opened (a view opened in
the middle of a cycle owes what came after its snapshot; what its snapshot shows counts as
seen), and has seen a chain when the states it was told satisfy its milestones in order
(one state may satisfy several: a message can say admitted and ready at once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any] | None
"""A cluster's or RayJob's record as REST answers it; None once it is gone."""

RAYJOB_ADMITTED_STATES = frozenset(
    {"admitted", "starting", "running", "succeeded", "failed", "stopped"}
)
"""A RayJob's states once Kueue admitted it (it may run and end on KWOK before we look)."""


@dataclass(frozen=True)
class Milestone:
    """One change of a cycle: ``kind`` (``cluster`` or ``rayjob``) ``name`` reached a record
    that ``reached`` says yes to."""

    label: str
    kind: str
    name: str
    reached: Callable[[Record], bool]


@dataclass(frozen=True)
class Cycle:
    """One cycle's objects: cluster ``cluster`` scaled from ``low`` workers to ``high`` and
    back, and RayJob ``rayjob``."""

    index: int
    cluster: str
    rayjob: str
    low: int
    high: int

    def milestones(self) -> tuple[Milestone, ...]:
        """Every milestone of the cycle, in the order the loop makes them happen."""
        low, high = self.low, self.high

        def at(workers: int) -> Callable[[Record], bool]:
            return lambda r: (
                r is not None
                and r.get("state") == "ready"
                and r.get("workers_ready") == workers
                and r.get("workers_admitted") == workers
                and r.get("scale") is None
            )

        def shrunk(r: Record) -> bool:
            return (
                r is not None
                and r.get("workers_admitted") == low
                and r.get("workers_desired") == low
                and r.get("scale") is None
            )

        c, j = self.cluster, self.rayjob
        return (
            Milestone("created", "cluster", c, lambda r: r is not None),
            Milestone("admitted", "cluster", c, lambda r: r is not None and bool(r["admitted"])),
            Milestone("ready", "cluster", c, at(low)),
            Milestone("scaled_up", "cluster", c, at(high)),
            Milestone("scaled_down", "cluster", c, shrunk),
            Milestone("rayjob_created", "rayjob", j, lambda r: r is not None),
            Milestone(
                "rayjob_admitted",
                "rayjob",
                j,
                lambda r: r is not None and r.get("state") in RAYJOB_ADMITTED_STATES,
            ),
            Milestone("rayjob_deleted", "rayjob", j, lambda r: r is None),
            Milestone("deleted", "cluster", c, lambda r: r is None),
        )


SNAPSHOT_LISTS = {"cluster": "clusters", "rayjob": "rayjobs"}
"""Where a ``snapshot`` message lists the records of each kind."""


def records(messages: Iterable[dict[str, Any]], kind: str, name: str) -> list[Record]:
    """What ``messages`` told of ``kind`` ``name``, in order: its record in a snapshot (when
    listed there), then each message about it (None: it is gone)."""
    told: list[Record] = []
    for message in messages:
        if message.get("type") == "snapshot":
            listed = message.get(SNAPSHOT_LISTS[kind]) or []
            told.extend(r for r in listed if r.get("name") == name)
        elif message.get("type") == kind and message.get("name") == name:
            told.append(message.get("state" if kind == "cluster" else kind))
    return told


def missed(messages: Sequence[dict[str, Any]], owed: Sequence[Milestone]) -> list[str]:
    """The labels of ``owed`` that ``messages`` never showed, each chain (a kind and name)
    matched in order."""
    chains: dict[tuple[str, str], list[Milestone]] = {}
    for milestone in owed:
        chains.setdefault((milestone.kind, milestone.name), []).append(milestone)
    lost: list[str] = []
    for (kind, name), chain in chains.items():
        told = records(messages, kind, name)
        start, after_miss, seen_any = 0, False, False
        for milestone in chain:
            # After a lost milestone, the next must come after what was seen before it (ready
            # at 1 worker is no scale-down when the scale-up was never seen); else the same
            # record may show it (a message can say admitted and ready at once).
            begin = start + 1 if after_miss and seen_any else start
            found = next((i for i in range(begin, len(told)) if milestone.reached(told[i])), None)
            if found is None:
                lost.append(milestone.label)
                after_miss = True
            else:
                start, after_miss, seen_any = found, False, True
    return lost


def owed_since(
    cycle: Cycle, seen_before: int, sequence: dict[tuple[int, str], int]
) -> list[Milestone]:
    """The milestones of ``cycle`` a view opened after the loop's ``seen_before``-th
    milestone owes: those the loop saw later (``sequence``: (cycle, label) → the order the
    loop's own view saw them in)."""
    return [m for m in cycle.milestones() if sequence.get((cycle.index, m.label), 0) > seen_before]
