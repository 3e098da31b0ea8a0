"""Kueue's long waiting messages in one short line ("needs 1.5 CPU more in flavor gpu-a"),
for a card or a cell; the full message stays beside it. The patterns are the scheduler's
(kueue pkg/scheduler/flavorassigner and scheduler.go, the same in 0.14 and 0.19)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from decimal import Decimal

from jupyter_dw.domain.fit_words import human
from jupyter_dw.domain.quantity import parse_quantity

_Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]


def _amount(resource: str, quantity: str) -> str:
    """``1.5 CPU`` (cores, as people count them; not ``1500m``), ``4Gi memory``."""
    try:
        value = parse_quantity(quantity)
    except ValueError:
        return f"{quantity} {_noun(resource)}"
    if resource == "cpu":
        return f"{value.normalize():f} CPU"
    return human(resource, value)


def _noun(resource: str) -> str:
    return "CPU" if resource == "cpu" else resource


_MORE_NEEDED = re.compile(r"insufficient unused quota for (\S+) in flavor (\S+), (\S+) more needed")

_RULES: tuple[_Rule, ...] = (
    (
        re.compile(r"insufficient quota for (\S+) in flavor (\S+),.*?> maximum capacity \((\S+)\)"),
        lambda m: f"more {_noun(m[1])} than flavor {m[2]} has at all ({_amount(m[1], m[3])})",
    ),
    (
        re.compile(r"untolerated taint (.+?) in flavor (\S+?)(?:,|;|$)"),
        lambda m: f"flavor {m[2]} has a taint it does not tolerate",
    ),
    (
        re.compile(r"flavor (\S+) doesn't match node affinity"),
        lambda m: f"flavor {m[1]} does not match its node affinity",
    ),
    (
        re.compile(r"Workload no longer fits after processing another workload"),
        lambda m: "another workload took the quota first; Kueue tries again",
    ),
    (
        re.compile(r"overlapping preemption targets with another workload"),
        lambda m: "waits for another workload's preemptions",
    ),
    (
        re.compile(r"The workload has failed admission checks"),
        lambda m: "an admission check failed",
    ),
    (re.compile(r"ClusterQueue (\S+) is inactive"), lambda m: f"ClusterQueue {m[1]} is inactive"),
    (re.compile(r"ClusterQueue (\S+) not found"), lambda m: f"ClusterQueue {m[1]} does not exist"),
    (
        re.compile(r"Pending the preemption of (\d+) workload"),
        lambda m: f"preempting {m[1]} workload{'' if m[1] == '1' else 's'}",
    ),
)

MAX_PARTS = 2
"""Reasons shown before ``and N more`` (the full message has them all)."""


@functools.lru_cache(maxsize=4096)
def short_reason(message: str | None) -> str | None:
    """Kueue's waiting ``message`` in one short line, or None when no known pattern is in it
    (a surface then shows the message itself). Remembered: every record's JSON asks, a
    snapshot holds thousands of Workloads, and their messages repeat."""
    if not message:
        return None
    found = _shortfalls(message)
    for pattern, words in _RULES:
        for match in pattern.finditer(message):
            found.append((match.start(), words(match)))
    parts = list(dict.fromkeys(text for _, text in sorted(found)))  # in order, once each
    if not parts:
        return None
    more = len(parts) - MAX_PARTS
    line = "; ".join(parts[:MAX_PARTS])
    return f"{line}; and {more} more" if more > 0 else line


def _shortfalls(message: str) -> list[tuple[int, str]]:
    """What is missing per flavor, one part each (``needs 2.2 CPU and 512Mi memory more in
    flavor x``) where the first shortfall of it stands. Kueue counts a pod set's shortfall
    with the pod sets before it (its assumed usage), so the last pod set's is the whole
    workload's: per resource, the largest one said."""
    needed: dict[str, dict[str, tuple[Decimal, str]]] = {}
    first: dict[str, int] = {}
    for match in _MORE_NEEDED.finditer(message):
        resource, flavor, quantity = match[1], match[2], match[3]
        first.setdefault(flavor, match.start())
        try:
            value = parse_quantity(quantity)
        except ValueError:
            value = Decimal(0)
        known = needed.setdefault(flavor, {}).get(resource)
        if known is None or value > known[0]:
            needed[flavor][resource] = (value, quantity)
    return [
        (
            first[flavor],
            "needs "
            + " and ".join(_amount(r, q) for r, (_, q) in resources.items())
            + f" more in flavor {flavor}",
        )
        for flavor, resources in needed.items()
    ]


class Summarized:
    """A record holding Kueue's ``message``: its ``summary`` is that message in one line."""

    __slots__ = ()  # a record with slots of its own stays without a __dict__
    message: str | None

    @property
    def summary(self) -> str | None:
        """Kueue's waiting ``message`` in one short line (:func:`short_reason`)."""
        return short_reason(self.message)
