"""When a session's re-check asks discovery again: the rules review runs at every re-check (a
grant has no other sign), discovery only when a signal says the served APIs may have changed,
while Kueue or KubeRay is missing, or every ``discovery_interval`` when one is set. Why these
signals suffice: docs/explanation/architecture.md, "The session"."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .discovery import Discovery

DISCOVERY_FOLLOW_UPS = 2
"""Re-checks with discovery one signal asks for: the next one and one more. A CRD changed in
place ends its watches about a second after the change, when the API server has just
published the CRD's new OpenAPI document, or is about to: the second look is for one
published late."""
SECOND_LOOK_SECONDS = 10.0
"""How long after a watch interruption's re-check the second one runs."""


@dataclass(frozen=True)
class Plan:
    """What one re-check asks besides the rules review. ``periodic``: the
    ``discovery_interval`` fell due (then Kueue's controller is probed too)."""

    discover: bool
    periodic: bool


class RecheckSchedule:
    """Discovery's signals and cadence for one session. Thread-safe: signals come from any
    thread (a cache's, a request's, the API client's); the re-check thread asks for a
    :meth:`plan` at the start of each re-check and reports :meth:`discovered`."""

    def __init__(
        self,
        refresh_interval: float,
        discovery_interval: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if discovery_interval < 0:
            raise ValueError(f"discovery_interval must be >= 0, got {discovery_interval}")
        self.refresh_interval = refresh_interval
        self.discovery_interval = discovery_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._owed = 0
        self._periodic_at = clock()
        self._kueue_returns = 0
        self._early_at: float | None = None
        self._on_demand_at: float | None = None

    def connected(self, kueue_returns: int) -> None:
        """A connection discovered everything just now: nothing is owed."""
        with self._lock:
            self._owed = 0
            self._periodic_at = self._clock()
            self._kueue_returns = kueue_returns

    def ask_discovery(self) -> None:
        """A signal (a whole resource answering 404, discovery missing groups for a moment):
        the next re-check asks discovery, and the one after it."""
        with self._lock:
            self._owed = DISCOVERY_FOLLOW_UPS

    def watch_interrupted(self) -> bool:
        """A watch ended early or opened again after failures (see
        ``WatchCache(on_interrupted=...)``): discovery is owed. True when the re-check should
        run now: at most once per ``refresh_interval``, so watches cut again and again (a
        proxy that ends long requests) cost no more than one early re-check an interval."""
        now = self._clock()
        with self._lock:
            self._owed = DISCOVERY_FOLLOW_UPS
            if self._early_at is not None and now - self._early_at < self.refresh_interval:
                return False
            self._early_at = now
            return True

    def may_rediscover_now(self) -> bool:
        """Whether a request that met an API discovery says is not served may ask discovery
        again now: at most once per ``refresh_interval``, the cadence discovery had."""
        now = self._clock()
        with self._lock:
            if self._on_demand_at is not None and now - self._on_demand_at < self.refresh_interval:
                return False
            self._on_demand_at = now
            return True

    def plan(self, discovery: Discovery, kueue_returns: int) -> Plan:
        """What the re-check starting now asks: discovery when a signal owes it, while Kueue's
        LocalQueues or KubeRay's RayClusters are not served (the product's prerequisites:
        installing them is seen within ``refresh_interval``), after Kueue answered again
        (its restart may be an upgrade), or when ``discovery_interval`` fell due."""
        now = self._clock()
        with self._lock:
            periodic = (
                self.discovery_interval > 0 and now - self._periodic_at >= self.discovery_interval
            )
            if periodic:
                self._periodic_at = now
            discover = (
                periodic
                or self._owed > 0
                or not (discovery.kueue_installed and discovery.kuberay_installed)
                or kueue_returns != self._kueue_returns
            )
        return Plan(discover, periodic)

    def discovered(self, kueue_returns: int) -> None:
        """Discovery answered, asked when Kueue had come back ``kueue_returns`` times (a
        failed one stays owed)."""
        with self._lock:
            self._owed = max(0, self._owed - 1)
            self._kueue_returns = kueue_returns
