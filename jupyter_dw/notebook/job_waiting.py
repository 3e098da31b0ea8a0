"""What every Kueue-managed job's handle shares (a RayJob's, a TrainJob's): waiting for a
state, woken by the session's watches, with one rule for "passed it" and "can no longer get
there"."""

from __future__ import annotations

import asyncio
import html
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from ..core.errors import DWError
from ..domain.job_kind import JobInfo, JobKind
from .display import usage_html
from .runtime import runtime

FORWARD = ("queued", "admitted", "starting", "running")
"""The way forward: waiting for ``starting`` is over once the job runs or has ended."""

DEAD_ENDS = frozenset({"evicted", "preempted", "rejected", "deleting"})
"""States from which a job does not reach a later one without a new admission."""


Info = TypeVar("Info", bound=JobInfo)
"""A kind's record (``RayJobInfo``, ``TrainJobInfo``): what a handle reads and shows."""


class JobEnded(DWError):
    """A wait for a job's state ended otherwise: the job failed, stopped or was deleted
    first; ``state`` is its last state."""

    code = "job_ended"

    def __init__(self, error: str, reason: str | None, hint: str | None, state: str | None):
        super().__init__(error, reason, hint)
        self.state = state


def reached(
    kind: str, name: str, info: JobInfo | None, state: str, hint: str, ended: type[JobEnded]
) -> Any:
    """``info`` if it is in ``state`` (or past it on the way forward), None to keep waiting;
    raises ``ended`` when the job can no longer get there (``hint`` says what to look at)."""
    if info is None:
        raise ended(f"{kind} {name!r} is gone", None, "It was deleted.", None)
    if (state == "final" and info.final) or info.state == state:
        return info
    if state in FORWARD and info.state in FORWARD[FORWARD.index(state) + 1 :]:
        return info
    if info.final or info.state in DEAD_ENDS:
        raise ended(
            f"{kind} {name!r} is {info.state}",
            f"{info.reason}: {info.message}" if info.message else info.reason,
            hint,
            info.state,
        )
    return None


def wait_until(check: Callable[[], Any], timed_out: Callable[[], Exception], timeout: float) -> Any:
    """Call ``check`` now and after every change the session's watches see, until it returns
    something (its answer) or raises; ``timed_out()`` is raised after ``timeout`` seconds."""
    changed = threading.Event()
    remove = runtime().add_listener(lambda *_: changed.set())
    deadline = time.monotonic() + timeout
    try:
        while True:
            changed.clear()
            done = check()
            if done is not None:
                return done
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not changed.wait(remaining):
                raise timed_out()
    finally:
        remove()


@dataclass
class JobHandle(Generic[Info]):
    """One Kueue-managed job of the namespace, by name (a RayJob's, a TrainJob's handle):
    every read is fresh from the watch caches. A subclass names its kind's description
    (``job_kind``: its ``kind`` and ``plural``), its ``ended`` error and the ``hint`` an ended
    wait gives."""

    job_kind: ClassVar[JobKind[Any, Any]]
    ended: ClassVar[type[JobEnded]] = JobEnded
    hint: ClassVar[str] = "See the reason."

    name: str
    _last: Info | None = field(default=None, repr=False, compare=False)

    @property
    def kind(self) -> str:
        """The kind's name (``RayJob``), as messages say it."""
        return self.job_kind.kind

    @property
    def plural(self) -> str:
        """The kind's plural: its service (:meth:`~jupyter_dw.core.services.DWCore.kind`)."""
        return self.job_kind.plural

    def _jobs(self) -> Any:
        return runtime().core.kind(self.plural)

    def status(self) -> Any:
        """The job now: ``state``, ``reason``, ``message``, ``position_in_local_queue``..."""
        self._last = self._jobs().get(self.name)
        return self._last

    def _now(self) -> Any:
        info = self._jobs().describe_many([self.name]).get(self.name)
        if info is not None:
            self._last = info
        return info

    def _timeout(self, state: str, timeout: float) -> TimeoutError:
        last = self._last
        where = f"it is {last.state}: {last.reason or ''} {last.message or ''}" if last else ""
        return TimeoutError(
            f"{self.kind} {self.name!r} was not {state} after {timeout:g}s; {where}"
        )

    def wait(self, state: str = "final", timeout: float = 600.0) -> Any:
        """Block until the job is in ``state`` (``"final"``: it ended), woken by the
        watches. Raises the kind's ``JobEnded`` when it can no longer get there and
        ``TimeoutError`` after ``timeout`` seconds."""
        self.status()
        return wait_until(
            lambda: reached(self.kind, self.name, self._now(), state, self.hint, self.ended),
            lambda: self._timeout(state, timeout),
            timeout,
        )

    async def wait_async(self, state: str = "final", timeout: float = 600.0) -> Any:
        """:meth:`wait` without blocking the kernel (its widgets stay live)."""
        return await asyncio.to_thread(self.wait, state, timeout)

    def delete(self) -> None:
        """Delete the job; what it made and its Workload follow."""
        self._jobs().delete(self.name)

    def _repr_html_(self) -> str:
        info = self._last or self.status()
        said = f" — {info.reason}: {info.message}" if info.message else ""
        head = f"<b>{self.kind} {html.escape(info.name)}</b>: {html.escape(info.state + said)}"
        # What its pods use of what they hold, in the words of a cluster's card.
        return head + usage_html(info.usage, info.idle_since)
