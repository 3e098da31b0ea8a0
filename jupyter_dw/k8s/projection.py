"""What a watch cache keeps of each object: the fields jupyter_dw reads, stored compactly.

A cache of 5,000 Workloads and 5,000 Ray pods held as the API server sends them took 196 MiB
of a process's memory (benchmarks/bench_memory.py), half of it ``metadata.managedFields``
(server-side apply's bookkeeping, which nothing here reads) and most of a pod's rest its spec
(containers, probes, volumes, env), of which only the node and the containers' requests are
read (what a cluster's pods hold, for its usage): the cluster state, the milestones and the
pod problems read a pod's metadata and status. Every object is also rebuilt
with its keys and short strings interned, so the thousands of ``"type"``, ``"status"``,
``"True"``, ``"cpu"`` strings are one object each instead of one per occurrence (the JSON
decoder shares keys only within one list page).

A projection is a function of the object alone (client-go's ``SetTransform``), applied to every
object a cache lists or receives by watch, before anything else sees it. Which fields the code
reads is checked by tests/unit/test_projection.py: the domain's and core's readers give the
same answers on projected objects as on full ones.
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


def _requests_only(containers: Any) -> list[Object]:
    if not isinstance(containers, list):
        return []
    kept = []
    for c in containers:
        if not isinstance(c, dict):
            continue
        requests = (c.get("resources") or {}).get("requests")
        entry: Object = {"name": c.get("name")}
        if requests:
            entry["resources"] = {"requests": requests}
        if "restartPolicy" in c:  # a sidecar's requests count while the pod runs
            entry["restartPolicy"] = c["restartPolicy"]
        kept.append(entry)
    return kept


def slim_pod(obj: Object) -> Object:
    """:func:`slim` with only the part of the spec that is read: the node it runs on and its
    containers' requests (what a cluster's pods hold, :mod:`jupyter_dw.domain.usage`, by
    :func:`~jupyter_dw.domain.workloads.pod_requests`); metadata and status whole."""
    spec = obj.get("spec")
    kept: Object = {k: v for k, v in obj.items() if k != "spec"}
    if isinstance(spec, dict):
        kept["spec"] = {
            key: value
            for key, value in (
                ("nodeName", spec.get("nodeName")),
                ("containers", _requests_only(spec.get("containers"))),
                ("initContainers", _requests_only(spec.get("initContainers"))),
                ("overhead", spec.get("overhead")),
            )
            if value
        }
    return slim(kept)
