"""Writing a Kubernetes Event about an object (``core/v1`` Events, which ``kubectl describe``
and the OpenShift console show under the object): how a rule that acted on a user's Ray
cluster tells them, next to the cluster, what it did and why."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from .client import KubeApi

COMPONENT = "jupyter-dw"


def record_event(
    api: KubeApi,
    namespace: str,
    involved: dict[str, Any],
    reason: str,
    message: str,
    event_type: str = "Normal",
) -> dict[str, Any]:
    """Create an Event about ``involved`` (an object with ``apiVersion``, ``kind`` and
    ``metadata``); raises ``KubeForbidden`` without ``create events``."""
    metadata = involved.get("metadata") or {}
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{metadata.get('name', 'object')}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": involved.get("apiVersion"),
            "kind": involved.get("kind"),
            "name": metadata.get("name"),
            "namespace": namespace,
            "uid": metadata.get("uid"),
        },
        "reason": reason,
        "message": message,
        "type": event_type,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    return api.post(f"/api/v1/namespaces/{namespace}/events", body)
