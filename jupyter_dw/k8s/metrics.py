"""The metrics API: every pod's CPU and memory use in a namespace, one call.
No watch, so a reader asks at most once per resolution; what cannot be read says why
(docs/explanation/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .client import KubeApi
from .errors import KubeApiError, KubeError, KubeForbidden, KubeUnreachable

METRICS_GROUP = "metrics.k8s.io"
METRICS_VERSION = "v1beta1"


@dataclass(frozen=True)
class MetricsRead:
    """PodMetrics items of a namespace, or None with why (``reason``)."""

    items: list[dict[str, Any]] | None
    reason: str | None = None
    lasting: bool = False
    """The reason will not change by asking again soon (not served, not allowed)."""


def forbidden(namespace: str) -> MetricsRead:
    """The answer when this identity may not read the metrics API."""
    return MetricsRead(
        None,
        f"this workbench may not list pods.{METRICS_GROUP} in namespace {namespace} "
        "(the RBAC in examples/rbac/ grants it)",
        lasting=True,
    )


def read_pod_metrics(api: KubeApi, namespace: str) -> MetricsRead:
    """``GET /apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods`` (one call)."""
    path = f"/apis/{METRICS_GROUP}/{METRICS_VERSION}/namespaces/{namespace}/pods"
    try:
        # Not allowed, not served: answers the usage says in words, not failures to log.
        answer = api.get(path, expected=(403, 404, 503))
    except KubeForbidden:
        return forbidden(namespace)
    except KubeApiError as err:
        if err.api_status == 404:
            # Not served: a plain "404 page not found" from the API server (no Status object,
            # so not always a KubeNotFound).
            return MetricsRead(
                None,
                f"the metrics API ({METRICS_GROUP}/{METRICS_VERSION}) is not served here",
                lasting=True,
            )
        return MetricsRead(None, f"the metrics API failed: {err}")
    except KubeUnreachable as err:
        return MetricsRead(None, f"the metrics API did not answer: {err}")
    except KubeError as err:
        # 503 while metrics-server is down or not yet registered, among others.
        return MetricsRead(None, f"the metrics API failed: {err}")
    items = answer.get("items")
    return MetricsRead([i for i in items if isinstance(i, dict)] if isinstance(items, list) else [])
