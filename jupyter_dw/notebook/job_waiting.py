"""What every Kueue-managed job's handle shares (a RayJob's, a TrainJob's): waiting for a
state, woken by the session's watches, with one rule for "passed it" and "can no longer get
there"."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..k8s.errors import KubeError
from .runtime import runtime

FORWARD = ("queued", "admitted", "starting", "running")
"""The way forward: waiting for ``starting`` is over once the job runs or has ended."""

DEAD_ENDS = frozenset({"evicted", "preempted", "rejected", "deleting"})
"""States from which a job does not reach a later one without a new admission."""


class JobInfo(Protocol):
    """What the waiter reads of a job's state (``RayJobInfo``, ``TrainJobInfo``)."""

    @property
    def state(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def message(self) -> str | None: ...
    @property
    def final(self) -> bool: ...


class JobEnded(KubeError):
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
    remove = runtime().core.session.add_listener(lambda *_: changed.set())
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
