"""What the kernel offers for every workload kind (:mod:`jupyter_dw.domain.kinds`): fit,
submit, one job's handle, every job, from the kind's spec class and handle class. A kind's
notebook module (:mod:`jupyter_dw.notebook.kinds`) is its spec, its handle and one
:class:`KindCalls`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core.cluster_results import FitResult
from ..core.kind_results import JobList
from ..domain.job_kind import JobKind
from .job_waiting import JobHandle
from .requests import create_with_key, request_body
from .runtime import runtime

if TYPE_CHECKING:
    from ..core.kind_service import KindService

Handle = TypeVar("Handle", bound=JobHandle)


@dataclass(frozen=True)
class KindCalls(Generic[Handle]):
    """The kernel's calls for ``handle``'s kind: ``spec`` is the kind's ``dw.<Kind>Spec``
    (with ``to_request()`` and, in ``example``, how to make one), ``handle`` its handle class."""

    spec: type
    handle: type[Handle]

    @property
    def kind(self) -> JobKind[Any, Any]:
        """The kind's description, as its handle names it."""
        return self.handle.job_kind

    def _service(self) -> KindService[Any, Any]:
        return runtime().core.kind(self.kind.plural)

    def request(self, spec: Any, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """``spec`` (a spec object or a mapping) with ``overrides`` as a request body."""
        example = self.spec.example  # type: ignore[attr-defined]
        return request_body(spec, overrides, self.spec, self.kind.kind, example)

    def fit(self, spec: Any, **fields: Any) -> FitResult:
        """Would this job fit its queue now? Counts the pod sets Kueue builds for it."""
        return self._service().fit(self.request(spec, fields))

    def submit(self, spec: Any, *, idempotency_key: str | None = None, **fields: Any) -> Handle:
        """Create the job through Kueue (suspended until admitted); return its handle. Raises
        like ``dw.submit``."""
        request = self.request(spec, fields)
        service = self._service()
        info = create_with_key(lambda key: service.create(request, key), idempotency_key)
        return self.handle(info.name, _last=info)

    def get(self, name: str) -> Handle:
        """The handle of an existing job (``NotFound`` when there is none)."""
        info = self._service().get(name)
        return self.handle(info.name, _last=info)

    def list(self) -> JobList[Any]:
        """Every job of the kind in the namespace with its state (a sequence; index it by
        name)."""
        return self._service().list()
