"""The idle rule at work: it judges the owner's clusters and stops or deletes those whose time came.
It writes what it did where the user will look. Blocking; a daemon thread of its own
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ..domain.idle_rule import IdleVerdict
from ..names import RAY_GROUP
from .clusters import ClusterService
from .errors import DWError, KubeForbidden, KubeNotFound
from .stopping import WrongState, stop_cluster

log = logging.getLogger(__name__)

EVENT_REASONS = {"stop": "IdleStopped", "delete": "IdleDeleted"}


class IdleRuleRunner:
    """Acts on the rule's verdicts (see the module docstring)."""

    def __init__(self, clusters: ClusterService, period: float) -> None:
        assert clusters.usage is not None, "the idle rule needs usage"
        self.clusters = clusters
        self.usage = clusters.usage
        self.period = period
        self.acted: list[tuple[str, IdleVerdict]] = []
        """What it did, in order (tests and the log read it)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unfollow: Callable[[], None] | None = None

    def start(self) -> IdleRuleRunner:
        self._unfollow = self.usage.follow(self._mine)
        self._thread = threading.Thread(target=self._run, name="jupyter-dw-idle-rule", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._unfollow is not None:
            self._unfollow()
        if self._thread is not None:
            self._thread.join(5)

    def _mine(self) -> list[str]:
        return [
            str((rc.get("metadata") or {}).get("name") or "")
            for rc in self.clusters.session.cached_ray_clusters()
            if self.clusters.is_mine(rc)
        ]

    def check(self) -> list[tuple[str, IdleVerdict]]:
        """Judge the owner's clusters now and act on those due; what was done."""
        done: list[tuple[str, IdleVerdict]] = []
        # A live view's read: from the caches and the last usage sample, never waiting.
        with self.clusters.positions.held_only():
            infos = self.clusters.describe_many(self._mine())
        for name, info in infos.items():
            verdict = info.idle_verdict
            if verdict is None or not verdict.act:
                continue
            if self._act(name, verdict):
                done.append((name, verdict))
        self.acted.extend(done)
        return done

    def _act(self, name: str, verdict: IdleVerdict) -> bool:
        raycluster = self.clusters.session.cached_ray_cluster(name)
        try:
            if verdict.action == "stop":
                stop_cluster(self.clusters, name, verdict.reason())
            else:
                self.clusters.delete(name)
        except (WrongState, KubeNotFound):
            return False  # it changed meanwhile (resumed, stopped, gone): nothing to do
        except DWError as err:
            log.error("jupyter_dw idle rule: could not %s %s: %s", verdict.action, name, err)
            return False
        log.warning("jupyter_dw idle rule: %s %s", name, verdict.message())
        if raycluster is not None:
            self._tell(raycluster, verdict)
        return True

    def _tell(self, raycluster: dict[str, Any], verdict: IdleVerdict) -> None:
        involved = {
            "apiVersion": raycluster.get("apiVersion") or f"{RAY_GROUP}/v1",
            "kind": raycluster.get("kind") or "RayCluster",
            "metadata": raycluster.get("metadata") or {},
        }
        try:
            self.clusters.session.record_event(
                involved, EVENT_REASONS[verdict.action], verdict.message()
            )
        except KubeForbidden as err:
            # The stop record on the RayCluster says it too; the Event is a courtesy.
            log.warning("jupyter_dw idle rule: no Event written (create events): %s", err)
        except DWError as err:
            log.warning("jupyter_dw idle rule: no Event written: %s", err)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.check()
            except Exception:  # one failed round must not end the rule
                log.exception("jupyter_dw idle rule failed")


def on_server_stop(clusters: ClusterService, action: str) -> list[tuple[str, str]]:
    """``stop`` or ``delete`` the clusters this workbench's owner made, as the server stops
    (``on_server_stop``); ``[(cluster, what happened)]`` for the log. Clusters not admitted
    (waiting, stopped already) are left as they are by ``stop``; ``delete`` deletes them all."""
    done: list[tuple[str, str]] = []
    if action not in ("stop", "delete"):
        return done
    for raycluster in clusters.session.cached_ray_clusters():
        if not clusters.is_mine(raycluster):
            continue
        name = str((raycluster.get("metadata") or {}).get("name") or "")
        try:
            if action == "stop":
                stop_cluster(clusters, name, {"by": "server-stop"})
                done.append((name, "stopped"))
            else:
                clusters.delete(name)
                done.append((name, "deleted"))
        except (WrongState, KubeNotFound) as err:
            done.append((name, f"left as it is ({err.error})"))
        except DWError as err:
            done.append((name, f"failed: {err}"))
    return done
