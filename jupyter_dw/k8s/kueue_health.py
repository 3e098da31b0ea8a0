"""Whether Kueue's controller answers, as the session sees it: its visibility API (served by
Kueue's own process through the API server) answering 503, or one of its webhooks that cannot
be called, means it does not; the Workloads the caches hold are then Kueue's last word."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from jupyter_dw.domain.freshness import LIVE, STALE, Freshness

from .client import FailedCall, KubeApi
from .discovery import Discovery
from .errors import KubeError
from .resources import VISIBILITY_GROUP

log = logging.getLogger(__name__)

KUEUE_PROBE_INTERVAL = 2.0
"""Seconds between two checks whether Kueue answers again, while it does not."""


class KueueHealth:
    """Kueue controller's :class:`~jupyter_dw.domain.freshness.Freshness`; ``on_change`` is
    called (outside the lock) when it moves between live and stale."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self._lock = threading.Lock()
        self._on_change = on_change
        self.freshness = Freshness()
        self.last_probe = 0.0
        self.returns = 0
        """How many times Kueue answered again after it did not (a restart may have changed
        its configuration: what was learned from it is worth asking again)."""
        self._answered = False  # a call other than the probe got Kueue's answer
        self.probes = 0
        """How many probes asked the visibility API (for diagnostics and tests)."""

    def answered(self) -> None:
        """A call Kueue's process serves (a visibility API read) answered: Kueue is live, and
        the next re-check needs no probe (:meth:`take_answered`)."""
        with self._lock:
            self._answered = True
        self.set(LIVE, None)

    def take_answered(self) -> bool:
        """Whether Kueue answered a call since the last time this was asked."""
        with self._lock:
            answered, self._answered = self._answered, False
        return answered

    @property
    def live(self) -> bool:
        return self.freshness.live

    def probe_due_in(self) -> float:
        """Seconds until the next probe is due while Kueue is away (<= 0: now)."""
        return self.last_probe + KUEUE_PROBE_INTERVAL - time.monotonic()

    def probe(self, api: KubeApi, discovery: Discovery, timeout: float) -> None:
        """Ask Kueue's visibility API whether Kueue answers; a 503 means it does not. Other
        failures tell nothing about Kueue (the API server itself is away: the caches say so)."""
        self.last_probe = time.monotonic()
        version = discovery.visibility_version
        if version is None:
            self.set(LIVE, None)  # cannot tell: assume it works
            return
        self.probes += 1
        try:
            api.get(f"/apis/{VISIBILITY_GROUP}/{version}", timeout=min(timeout, 10))
        except KubeError as err:
            status = getattr(err.__cause__, "status", None)
            if status == 503:
                self.set(STALE, down_reason(err.reason or str(err)))
            return
        self.set(LIVE, None)

    def set(self, state: str, reason: str | None) -> None:
        with self._lock:
            before = self.freshness
            self.freshness = before.moved_to(state, reason, time.time())
            changed = self.freshness.state != before.state
            if changed and state == LIVE and before.state == STALE:
                self.returns += 1
        if changed:
            log.info("jupyter_dw: Kueue's controller is %s (%s)", state, reason or "answers")
            self._on_change()


def down_reason(detail: str) -> str:
    return (
        f"Kueue is not answering ({detail}): Workloads keep their last known state until it is back"
    )


def kueue_failure(failure: FailedCall) -> str | None:
    """Why ``failure`` shows Kueue's process is down (its visibility API answering 503, one of
    its webhooks unreachable), or None."""
    if failure.status == 503 and failure.group == VISIBILITY_GROUP:
        return down_reason(f"its visibility API answers 503: {failure.message}")
    message = failure.message
    if "failed calling webhook" in message and "kueue" in message.lower():
        return down_reason(f"its webhook cannot be called: {message}")
    return None
