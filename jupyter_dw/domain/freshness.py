"""Whether what a watch cache holds can be trusted as the cluster's state now.
``live``, ``reconnecting`` or ``stale``, with why and since when, and the worst of several:
docs/explanation/watch-health.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from jupyter_dw.domain.json_decode import DecodeError, decode_fields
from jupyter_dw.domain.lenient import timestamp

LIVE, RECONNECTING, STALE = "live", "reconnecting", "stale"
STATES = (LIVE, RECONNECTING, STALE)
_RANK = {state: rank for rank, state in enumerate(STATES)}


@dataclass(frozen=True)
class Freshness:
    """``state`` (``live``/``reconnecting``/``stale``), ``reason`` and ``since``."""

    state: str = LIVE
    reason: str | None = None
    since: float | None = None

    def __post_init__(self) -> None:
        if self.state not in _RANK:
            raise ValueError(f"unknown freshness state {self.state!r}")

    @property
    def live(self) -> bool:
        """True when the state can be trusted as current."""
        return self.state == LIVE

    def moved_to(self, state: str, reason: str | None, now: float) -> Freshness:
        """This freshness after an observation of ``state``: ``since`` is kept while the state
        stays the same (a new reason does not restart it), and set to ``now`` on a change."""
        if state == LIVE:
            return self if self.state == LIVE else Freshness(LIVE, None, now)
        since = self.since if state == self.state and self.since is not None else now
        return Freshness(state, reason, since)

    def to_json(self) -> dict[str, Any]:
        """``{"state", "reason", "since"}`` (``since``: RFC 3339 UTC, or null)."""
        return {"state": self.state, "reason": self.reason, "since": _rfc3339(self.since)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Freshness:
        """What :meth:`to_json` made (``since`` back to seconds, to its milliseconds)."""
        moment = timestamp(data["since"])
        if moment is None and data["since"] is not None:
            raise DecodeError(f"must be an RFC 3339 time, got {data['since']!r}", "since")
        return decode_fields(cls, data, since=moment.timestamp() if moment else None)


FRESH = Freshness()
"""Live, with no known start (a part that was never observed otherwise)."""


def worst(parts: Iterable[Freshness]) -> Freshness:
    """The least trustworthy of ``parts`` (the earliest ``since`` among equals); live when
    there are none."""
    found = FRESH
    for part in parts:
        rank, found_rank = _RANK[part.state], _RANK[found.state]
        earlier = (part.since or float("inf")) < (found.since or float("inf"))
        if rank > found_rank or (rank == found_rank and rank > 0 and earlier):
            found = part
    return found


def _rfc3339(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class WatchHealth:
    """The health of every watch cache (by resource plural) and of Kueue's controller (whether
    Kueue answers, so the Workloads' state keeps being updated)."""

    caches: dict[str, Freshness]
    kueue_controller: Freshness = FRESH

    @property
    def freshness(self) -> Freshness:
        """The worst of all: what a banner over everything shows."""
        return worst([*self.caches.values(), self.kueue_controller])

    def of_cluster(self, plurals: Iterable[str], follows_workload: bool) -> Freshness:
        """A Ray cluster's freshness: the worst of the caches its state is read from
        (``plurals``) and, when Kueue manages it (``follows_workload``), Kueue's controller."""
        parts = [self.caches[plural] for plural in plurals if plural in self.caches]
        if follows_workload:
            parts.append(self.kueue_controller)
        return worst(parts)

    def to_json(self) -> dict[str, Any]:
        """``{"freshness", "caches": {plural: Freshness}, "kueue_controller"}``."""
        return {
            "freshness": self.freshness.to_json(),
            "caches": {plural: f.to_json() for plural, f in sorted(self.caches.items())},
            "kueue_controller": self.kueue_controller.to_json(),
        }
