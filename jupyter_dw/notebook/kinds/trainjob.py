"""The TrainJob kind from a kernel: ``dw.TrainJobSpec``, ``dw.fit(job)``, ``dw.submit(job)`` →
a :class:`TrainJobHandle`, ``dw.trainjob(name)``, ``dw.trainjobs()``.

A TrainJob is a training run on a ClusterTrainingRuntime: Kueue queues it, Trainer runs it as
a JobSet once it is admitted. Same core and field names as ``POST dw/api/trainjobs``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ...domain.kinds.trainjob import TRAINJOB, TrainJobInfo
from ..job_waiting import JobEnded, JobHandle
from ..kind_calls import KindCalls


@dataclass
class TrainJobSpec:
    """What to train; None means the runtime's own. ``runtime`` names a
    ClusterTrainingRuntime (e.g. ``"torch-distributed"``); ``resources_per_node`` is what each
    node's training container requests (``{"cpu": 4, "memory": "16Gi", "gpu": 1}``);
    ``command`` a list of words (``["torchrun", "train.py"]``)."""

    name: str | None = None
    queue: str | None = None
    priority: str | None = None
    runtime: str | None = None
    num_nodes: int | None = None
    resources_per_node: dict[str, Any] | None = None
    command: list[str] | None = None
    image: str | None = None

    example: ClassVar[str] = "dw.TrainJobSpec(name=..., runtime='torch-distributed', num_nodes=2)"

    def to_request(self) -> dict[str, Any]:
        """The REST request body: the fields that are set."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }


class TrainJobEnded(JobEnded):
    """A wait for a TrainJob state ended otherwise: the job failed or was deleted first;
    ``state`` is its last state."""

    code = "trainjob_ended"


class TrainJobHandle(JobHandle[TrainJobInfo]):
    """One TrainJob of the namespace, by name (``status()``, ``wait()``/``wait_async()``
    until ``running`` or ``final``, ``delete()``); every read is fresh from the watch
    caches."""

    job_kind = TRAINJOB
    ended = TrainJobEnded
    hint = "See the reason (Kueue's or Trainer's words)."


CALLS = KindCalls(TrainJobSpec, TrainJobHandle)
trainjob = CALLS.get
trainjobs = CALLS.list
