"""The ``GET <plural>`` answer of a workload kind (no Kubernetes imports: a kernel reading
through its server decodes it without loading the session)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..domain.job_kind import Info
from ..domain.json_decode import DecodeError, decode_fields, decode_key
from ..domain.kinds import KINDS
from .listing import ByName


@dataclass(frozen=True)
class JobList(ByName[Info]):
    """The ``GET <plural>`` answer: every job of one kind in ``namespace``, sorted by name."""

    namespace: str
    positions_visible: bool
    jobs: tuple[Info, ...]
    plural: str
    """The kind's plural: the key of the jobs in :meth:`to_json` (``rayjobs``)."""

    def _entries(self) -> tuple[Info, ...]:
        return self.jobs

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        return {
            "namespace": self.namespace,
            "positions_visible": self.positions_visible,
            self.plural: [j.to_json() for j in self.jobs],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobList[Any]:
        """What :meth:`to_json` made: the kind is the one whose plural keys the jobs."""
        kind = next((k for k in KINDS if k.plural in data), None)
        if kind is None:
            plurals = ", ".join(k.plural for k in KINDS)
            raise DecodeError(f"a job list has one of {plurals}")
        jobs = decode_key(tuple[kind.record_type, ...], data, kind.plural)  # type: ignore[name-defined]
        return decode_fields(cls, data, jobs=jobs, plural=kind.plural)
