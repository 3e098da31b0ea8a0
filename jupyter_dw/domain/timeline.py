"""A workload's life as a few spans in words, each with its start and end: what every surface
draws as one bar (a cluster's waiting, head, workers, each resize; a job's waiting and
running), made from the milestones' and the job's own times."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_dw.domain.lenient import timestamp
from jupyter_dw.domain.milestones import Milestone, milestone_words

LIVE_STATES = frozenset(
    {"queued", "waiting-for-capacity", "admitted", "starting", "stalled", "ready"}
)
"""States in which a span still open is the one under way (the others ended it)."""

_ENDINGS = ("Evicted", "Preempted", "Stopped", "Deleting")


@dataclass(frozen=True)
class Span:
    """One part of the bar: ``step`` names it for code (``queue``, ``capacity``, ``head``,
    ``workers``, ``resize-queue:<n>``, ``resize-workers:<n>``), ``words`` for people."""

    step: str
    words: str
    start: str | None
    end: str | None
    """When it ended (RFC 3339); None while under way, or when the time is unrecorded."""
    done: bool
    current: bool = False
    """The span under way now (at most one): the bar animates it and counts its time."""
    detail: str | None = None

    @property
    def seconds(self) -> float | None:
        """How long it took, when both ends are known."""
        start, end = timestamp(self.start), timestamp(self.end)
        return max(0.0, (end - start).total_seconds()) if start and end else None

    def to_json(self) -> dict[str, Any]:
        """``{"step", "words", "start", "end", "seconds", "done", "current", "detail"}``."""
        return {
            "step": self.step,
            "words": self.words,
            "start": self.start,
            "end": self.end,
            "seconds": self.seconds,
            "done": self.done,
            "current": self.current,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Timeline:
    """The spans in order, and the milestone that ended the cluster's run (evicted,
    preempted, stopped, being deleted), if one did."""

    spans: tuple[Span, ...]
    ending: Milestone | None

    def to_json(self) -> dict[str, Any]:
        """``{"spans": [...], "ending": {"name", "words", "time"} | null}``."""
        ending = self.ending
        return {
            "spans": [s.to_json() for s in self.spans],
            "ending": (
                {"name": ending.name, "words": milestone_words(ending.name), "time": ending.time}
                if ending
                else None
            ),
        }


def cluster_timeline(steps: Sequence[Milestone], state: str, workers_desired: int) -> Timeline:
    """The spans ``steps`` (a cluster's milestones, in order) make, for a cluster in
    ``state`` wanting ``workers_desired`` workers.

    Worker milestones fold into one ``workers`` span (``4/4 workers``): the first size's,
    those ready by ``Ready``; later ones belong to the resizes that asked for them."""
    at = {m.name: m.time for m in steps}
    ending = next((m for m in reversed(steps) if m.name in _ENDINGS), None)
    spans: list[_Open] = []
    admission = "QuotaReserved" if "QuotaReserved" in at else "Admitted"
    spans.append(_Open("queue", "waiting in the queue", at.get("Submitted"), admission, at))
    if "CapacityProvisioned" in at or state == "waiting-for-capacity":
        spans.append(
            _Open("capacity", "waiting for capacity", at.get("QuotaReserved"), "Admitted", at)
        )
    if "Admitted" in at:
        spans.append(_Open("head", "starting the head", at.get("Admitted"), "HeadReady", at))
        first_size = _first_size(steps, at, workers_desired)
        # Workers start once the head is up (they wait for its GCS): a span only from then.
        if first_size and ("HeadReady" in at or any(n.startswith("WorkerReady:") for n in at)):
            spans.append(_workers_span(steps, at, first_size))
    spans += _resize_spans(steps, at)
    live = state in LIVE_STATES and ending is None
    open_spans = [s for s in spans if not s.done]
    current = open_spans[0] if live and open_spans else None
    return Timeline(
        tuple(
            s.closed(
                current=s is current,
                end=s.end if s.done or live or ending is None else ending.time,
            )
            for s in spans
        ),
        ending,
    )


@dataclass
class _Open:
    """A span being built: it is done once ``until`` (a milestone's name) is reached."""

    step: str
    words: str
    start: str | None
    until: str
    at: dict[str, str | None]
    detail: str | None = None
    reached: bool | None = None

    @property
    def done(self) -> bool:
        return self.until in self.at if self.reached is None else self.reached

    @property
    def end(self) -> str | None:
        return self.at.get(self.until) if self.done else None

    def closed(self, current: bool, end: str | None) -> Span:
        return Span(self.step, self.words, self.start, end, self.done, current, self.detail)


def _first_size(steps: Sequence[Milestone], at: dict[str, str | None], desired: int) -> int:
    """How many workers the first admission started: those ready by ``Ready`` once it is
    reached (an elastic cluster resized since wants another count), else the desired."""
    if "Ready" not in at:
        return desired
    ready_at = next(i for i, m in enumerate(steps) if m.name == "Ready")
    ready_time = at["Ready"]
    workers = [
        m
        for m in steps[:ready_at]
        if m.name.startswith("WorkerReady:")
        and (ready_time is None or m.time is None or m.time <= ready_time)
    ]
    return len(workers)


def _workers_span(steps: Sequence[Milestone], at: dict[str, str | None], size: int) -> _Open:
    ready = [m for m in steps if m.name.startswith("WorkerReady:")][:size]
    start = at.get("HeadReady") or at.get("Admitted")
    span = _Open("workers", "starting the workers", start, "Ready", at)
    span.detail = f"{len(ready)}/{size} workers"
    if "Ready" not in at and len(ready) >= size:
        span.until, span.reached = ready[-1].name, True
    return span


def _resize_spans(steps: Sequence[Milestone], at: dict[str, str | None]) -> list[_Open]:
    """A resize's wait for quota, then its workers' start, per ``ScaleRequested:<n>``."""
    spans: list[_Open] = []
    for milestone in steps:
        kind, _, count = milestone.name.partition(":")
        if kind != "ScaleRequested":
            continue
        admitted = f"ScaleAdmitted:{count}"
        spans.append(
            _Open(
                f"resize-queue:{count}", f"resize to {count}: waiting", milestone.time, admitted, at
            )
        )
        if admitted in at:
            spans.append(
                _Open(
                    f"resize-workers:{count}",
                    f"resize to {count}: taking effect",
                    at[admitted],
                    f"ScaledTo:{count}",
                    at,
                )
            )
    return spans


def job_timeline(
    created: str | None, admitted_at: str | None, end_time: str | None, state: str, final: bool
) -> Timeline:
    """A job's spans: ``queue`` (created to admitted), then ``running`` (admitted to its
    end); its final state, at ``end_time``, is the ending."""
    at: dict[str, str | None] = {"Submitted": created}
    if admitted_at:
        at["Admitted"] = admitted_at
    if final:
        at["Ended"] = end_time
    spans = [_Open("queue", "waiting in the queue", created, "Admitted", at)]
    if admitted_at:
        spans.append(_Open("running", "running", admitted_at, "Ended", at))
    if final and not admitted_at:  # ended without being admitted (deleted, rejected)
        spans[0].until = "Ended"
        spans[0].reached = False
    ending = Milestone(state.capitalize(), end_time) if final else None
    live = not final and state != "deleting"
    open_spans = [s for s in spans if not s.done]
    current = open_spans[0] if live and open_spans else None
    return Timeline(
        tuple(
            s.closed(current=s is current, end=s.end if s.done or live else end_time) for s in spans
        ),
        ending,
    )
