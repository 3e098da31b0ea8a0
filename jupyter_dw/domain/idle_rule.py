"""The idle rule's decision: which idle clusters give their quota back, and when. Pure.
The same settings give the same verdict on every surface; the rule:
docs/explanation/architecture.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from jupyter_dw.domain.kueue_model import LocalQueueInfo
from jupyter_dw.domain.lenient import timestamp
from jupyter_dw.domain.quota import QuotaTree

IdleAction = Literal["stop", "delete"]
IDLE_ACTIONS: tuple[IdleAction, ...] = ("stop", "delete")
BY_IDLE_RULE = "idle-rule"
"""The stop record's ``by`` when the rule stopped a cluster."""


@dataclass(frozen=True)
class IdleRule:
    """The administrator's settings (``timeout`` 0: the rule is off)."""

    timeout: float = 0.0
    action: IdleAction = "stop"
    only_when_others_wait: bool = True
    warning: float = 600.0

    @property
    def on(self) -> bool:
        return self.timeout > 0


RULE_OFF = IdleRule()


@dataclass(frozen=True)
class IdleVerdict:
    """What the rule says of one idle cluster now: ``at`` when it acts (RFC 3339), whether
    the user is being warned, and whether it acts now. ``held_back``: it would act but no
    Workload waits (and the rule acts only while one does)."""

    action: IdleAction
    at: str
    idle_seconds: int
    waiting: int
    warning: bool
    act: bool
    held_back: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "at": self.at,
            "idle_seconds": self.idle_seconds,
            "waiting": self.waiting,
            "warning": self.warning,
            "act": self.act,
            "held_back": self.held_back,
        }

    def reason(self) -> dict[str, Any]:
        """The stop record's reason: who decided and on what figures."""
        return {
            "by": BY_IDLE_RULE,
            "idle_seconds": self.idle_seconds,
            "waiting": self.waiting,
            "action": self.action,
        }

    def message(self) -> str:
        """One sentence for a Kubernetes Event and a log line."""
        done = "Stopped" if self.action == "stop" else "Deleted"
        minutes = max(1, round(self.idle_seconds / 60))
        waited = (
            f" while {self.waiting} workload{'s' if self.waiting != 1 else ''} waited"
            if self.waiting
            else ""
        )
        return f"{done} by jupyter_dw's idle rule after {minutes} min idle{waited}."


def _rfc3339(at: datetime) -> str:
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def judge(
    rule: IdleRule, idle_since: str | None, now: datetime, waiting: int
) -> IdleVerdict | None:
    """The verdict on a cluster idle since ``idle_since`` (None: not idle, or the rule off)."""
    since = timestamp(idle_since)
    if not rule.on or since is None:
        return None
    idle = max(0.0, (now - since).total_seconds())
    act_at = since + timedelta(seconds=rule.timeout)
    due = idle >= rule.timeout
    held_back = rule.only_when_others_wait and waiting == 0
    return IdleVerdict(
        action=rule.action,
        at=_rfc3339(act_at),
        idle_seconds=int(idle),
        waiting=waiting,
        warning=idle >= rule.timeout - rule.warning and not held_back,
        act=due and not held_back,
        held_back=held_back,
    )


def waiting_near(
    tree: QuotaTree | None,
    cluster_queue: str | None,
    local_queues: Iterable[LocalQueueInfo] = (),
) -> int:
    """Workloads Kueue counts as pending in ``cluster_queue`` and in every ClusterQueue of
    its cohort tree (quota a cluster gives back can be lent anywhere in it). The namespace's
    LocalQueues into ``cluster_queue`` count too, and are all a workbench that may not read
    ClusterQueues can know: Kueue writes a LocalQueue's count and its ClusterQueue's apart, so
    either may lag the other; the larger is what is known to wait."""
    if cluster_queue is None:
        return 0
    local = sum(lq.pending for lq in local_queues if lq.cluster_queue == cluster_queue)
    own = tree.cluster_queue(cluster_queue) if tree is not None else None
    if tree is None or own is None:
        return local
    path = tree.cohort_path(cluster_queue)
    if not path:
        return max(local, own.pending)
    root = path[-1]
    near = sum(
        queue.pending
        for name in tree.cluster_queue_names
        if (queue := tree.cluster_queue(name)) is not None
        and (name == cluster_queue or (tree.cohort_path(name) or (None,))[-1] == root)
    )
    return max(local, near)
