"""Kubeflow Trainer TrainJobs from a kernel: ``dw.TrainJobSpec``, ``dw.fit(job)``,
``dw.submit(job)`` → a :class:`TrainJobHandle`, ``dw.trainjob(name)``, ``dw.trainjobs()``.

A TrainJob is a training run on a ClusterTrainingRuntime: Kueue queues it, Trainer runs it as
a JobSet once it is admitted. Same core and field names as ``POST dw/api/trainjobs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..core.cluster_results import FitResult
from ..core.trainjobs import TrainJobList
from ..domain.trainjob_state import TrainJobInfo
from .job_waiting import JobEnded, JobHandle
from .requests import create_with_key, request_body
from .runtime import runtime


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

    def to_request(self) -> dict[str, Any]:
        """The REST request body: the fields that are set."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }


def trainjob_request(spec: TrainJobSpec | Mapping[str, Any], overrides: Mapping[str, Any]) -> dict:
    """``spec`` (a :class:`TrainJobSpec` or a mapping) with ``overrides`` as a request body."""
    example = "dw.TrainJobSpec(name=..., runtime='torch-distributed', num_nodes=2)"
    return request_body(spec, overrides, TrainJobSpec, "TrainJob", example)


def fit_trainjob(spec: TrainJobSpec | Mapping[str, Any], **fields: Any) -> FitResult:
    """Would this TrainJob fit its queue now? Counts the pod sets Kueue builds from its
    runtime."""
    return runtime().core.trainjobs.fit(trainjob_request(spec, fields))


def submit_trainjob(
    spec: TrainJobSpec | Mapping[str, Any], *, idempotency_key: str | None = None, **fields: Any
) -> TrainJobHandle:
    """Create the TrainJob through Kueue (suspended until admitted); return its handle.
    Raises like ``dw.submit``."""
    request = trainjob_request(spec, fields)
    info = create_with_key(
        lambda key: runtime().core.trainjobs.create(request, key), idempotency_key
    )
    return TrainJobHandle(info.name, _last=info)


def trainjob(name: str) -> TrainJobHandle:
    """The handle of an existing TrainJob (``NotFound`` when there is none)."""
    info = runtime().core.trainjobs.get(name)
    return TrainJobHandle(info.name, _last=info)


def trainjobs() -> TrainJobList:
    """Every TrainJob of the namespace with its state (a sequence; index it by name)."""
    return runtime().core.trainjobs.list()


class TrainJobEnded(JobEnded):
    """A wait for a TrainJob state ended otherwise: the job failed or was deleted first;
    ``state`` is its last state."""

    code = "trainjob_ended"


@dataclass
class TrainJobHandle(JobHandle):
    """One TrainJob of the namespace, by name (``status()``, ``wait()``/``wait_async()``
    until ``running`` or ``final``, ``delete()``); every read is fresh from the watch
    caches."""

    name: str
    _last: TrainJobInfo | None = field(default=None, repr=False, compare=False)

    kind = "TrainJob"
    service = "trainjobs"
    ended = TrainJobEnded
    hint = "See the reason (Kueue's or Trainer's words)."
