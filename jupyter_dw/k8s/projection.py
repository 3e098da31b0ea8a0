"""What a watch cache keeps of each object: the fields jupyter_dw reads, stored compactly.
Applied to every object before anything sees it (tests/unit/test_projection.py checks the
fields); why, in numbers: docs/explanation/architecture.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

Object = dict[str, Any]
Projection = Callable[[Object], Object]

INTERNED_LENGTH = 64
"""Strings up to this long are interned (names, labels, reasons, quantities, timestamps are
shorter; messages usually longer, and seldom repeated)."""


def _compact(value: Any) -> Any:
    if isinstance(value, dict):
        return {sys.intern(key): _compact(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_compact(item) for item in value]
    if isinstance(value, str) and len(value) <= INTERNED_LENGTH:
        return sys.intern(value)
    return value


def slim(obj: Object) -> Object:
    """``obj`` without ``metadata.managedFields``, compacted (a new dict: ``obj`` is left as
    it was)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        obj = {**obj, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}
    compacted: Object = _compact(obj)
    return compacted


def slim_pod(obj: Object) -> Object:
    """:func:`slim` with only the part of the spec that is read: the node it is bound to,
    its scheduling gates, and each container's resource requests (what it holds: usage,
    :mod:`jupyter_dw.domain.usage`) — not its probes, volumes, env or command."""
    spec = obj.get("spec")
    kept = {k: v for k, v in obj.items() if k != "spec"}
    if isinstance(spec, dict):
        kept["spec"] = {
            **{k: spec[k] for k in ("nodeName", "schedulingGates", "overhead") if k in spec},
            **{
                key: [_requests_only(c) for c in spec[key] if isinstance(c, dict)]
                for key in ("containers", "initContainers")
                if isinstance(spec.get(key), list)
            },
        }
    return slim(kept)


def _requests_only(container: Object) -> Object:
    """A container's name, restart policy (a sidecar's) and resource requests."""
    requests = (container.get("resources") or {}).get("requests")
    kept: Object = {k: container[k] for k in ("name", "restartPolicy") if k in container}
    if requests:
        kept["resources"] = {"requests": requests}
    return kept
