"""What keeps an admitted Ray cluster's pods from running, in the kubelet's and scheduler's words.
Such a cluster is ``stalled`` with the pod's reason, not still starting. Pure
(docs/explanation/kueue-mapping.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.names import RAY_NODE_TYPE_LABEL

WAITING_PROBLEMS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
"""Container ``waiting`` reasons that will not resolve by waiting a few seconds."""


@dataclass(frozen=True)
class PodProblem:
    """One pod's problem: the pod, the reason (``Unschedulable``, ``ImagePullBackOff``...)
    and the scheduler's or kubelet's message."""

    pod: str
    reason: str
    message: str | None

    @property
    def sentence(self) -> str:
        """``pod <name>: <message>`` (or the reason when there is no message)."""
        return f"pod {self.pod}: {self.message or self.reason}"


def pod_problem(pod: Mapping[str, Any]) -> PodProblem | None:
    """The problem of one pod, or None when it is fine or just on its way."""
    metadata, status = _map(pod.get("metadata")), _map(pod.get("status"))
    name = str(metadata.get("name") or "?")
    for condition in status.get("conditions") or []:
        condition = _map(condition)
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return PodProblem(name, "Unschedulable", condition.get("message"))
    statuses = [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]
    for container in statuses:
        waiting = _map(_map(_map(container).get("state")).get("waiting"))
        reason = waiting.get("reason")
        if reason in WAITING_PROBLEMS:
            return PodProblem(name, str(reason), waiting.get("message"))
    return None


def first_problem(pods: Iterable[Mapping[str, Any]]) -> PodProblem | None:
    """The first problem among ``pods`` (the head's first: without it nothing runs)."""
    ordered = sorted(
        pods,
        key=lambda p: (
            _map(_map(p.get("metadata")).get("labels")).get(RAY_NODE_TYPE_LABEL) != "head"
        ),
    )
    for pod in ordered:
        problem = pod_problem(pod)
        if problem is not None:
            return problem
    return None
