"""Who stopped a Ray cluster, when and why: the record kept on the RayCluster. Pure.
Three annotations, read only while the Workload is deactivated; their format:
docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.domain.lenient import text as _text
from jupyter_dw.names import STOP_REASON_ANNOTATION, STOPPED_AT_ANNOTATION, STOPPED_BY_ANNOTATION

BY_PERSON = "person"
"""``reason.by`` of a stop someone asked for (Stop button, ``h.stop()``, ``%dw stop``)."""

STOP_ANNOTATIONS = (STOPPED_BY_ANNOTATION, STOPPED_AT_ANNOTATION, STOP_REASON_ANNOTATION)


@dataclass(frozen=True)
class StopRecord:
    """Who stopped a cluster (``by``: an identity, None when unknown), when (``at``) and why
    (``reason``: ``{"by": "person"}`` or a rule's figures)."""

    by: str | None
    at: str | None
    reason: Mapping[str, Any] = field(default_factory=lambda: {"by": BY_PERSON})

    @property
    def decided_by(self) -> str | None:
        """``reason["by"]``: ``person``, or the rule that stopped it."""
        return _text(self.reason.get("by"))

    def annotations(self) -> dict[str, str]:
        """The RayCluster annotations that keep this record."""
        return {
            STOPPED_BY_ANNOTATION: self.by or "",
            STOPPED_AT_ANNOTATION: self.at or "",
            STOP_REASON_ANNOTATION: json.dumps(dict(self.reason), sort_keys=True),
        }

    def sentence(self) -> str:
        """``stopped by <who> at <when>`` (and the rule, when a rule decided)."""
        words = "stopped"
        if self.decided_by not in (None, BY_PERSON):
            words += f" by the {self.decided_by}"
            if self.by:
                words += f" (as {self.by})"
        elif self.by:
            words += f" by {self.by}"
        if self.at:
            words += f" at {self.at}"
        return words

    def to_json(self) -> dict[str, Any]:
        """``{"by", "at", "reason"}`` as the REST API and the events stream show it."""
        return {"by": self.by, "at": self.at, "reason": dict(self.reason)}


def stop_record(raycluster: Mapping[str, Any]) -> StopRecord | None:
    """The record the RayCluster's annotations keep, None when it carries none. A reason that
    is not a JSON object (edited by hand) is kept as ``{"by": None, "text": ...}``."""
    annotations = _map(_map(_map(raycluster).get("metadata")).get("annotations"))
    if not any(key in annotations for key in STOP_ANNOTATIONS):
        return None
    raw = annotations.get(STOP_REASON_ANNOTATION)
    reason: dict[str, Any]
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        reason = parsed
    else:
        reason = {"by": None, "text": raw} if isinstance(raw, str) and raw else {"by": None}
    return StopRecord(
        by=_text(annotations.get(STOPPED_BY_ANNOTATION)),
        at=_text(annotations.get(STOPPED_AT_ANNOTATION)),
        reason=reason,
    )
