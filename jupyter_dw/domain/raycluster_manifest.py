"""The ``ray.io/v1`` RayCluster a validated spec becomes. Pure.
Created suspended and labelled for Kueue, so nothing runs before Kueue admits it; the rules it
follows: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from jupyter_dw.domain.cluster_fields import cpu_text, memory_text, ray_version_of_image
from jupyter_dw.domain.managed_metadata import managed_metadata
from jupyter_dw.domain.ray_auth import auth_options, container_env
from jupyter_dw.domain.request_fields import show
from jupyter_dw.domain.validation import dns1123_label_error
from jupyter_dw.names import (
    ELASTIC_JOB_ANNOTATION,
    GPU_RESOURCE,
    HEAD_PORTS,
    RAYCLUSTER_API_VERSION,
    RAYCLUSTER_KIND,
)

if TYPE_CHECKING:  # only for annotations: the spec module imports this one
    from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec

WORKER_GROUP_NAME = "workers"  # Kueue reserves "head" for the head group's PodSet.
HEAD_CONTAINER_NAME = "ray-head"
WORKER_CONTAINER_NAME = "ray-worker"


def raycluster(
    spec: ValidatedClusterSpec, namespace: str, owner: str | None, *, auth_options_served: bool
) -> dict[str, Any]:
    """The RayCluster of ``spec`` in ``namespace``; see ``ValidatedClusterSpec.to_raycluster``."""
    if not isinstance(namespace, str):
        raise ValueError(f"invalid namespace: must be a string, got {show(namespace)}")
    problem = dns1123_label_error(namespace)
    if problem is not None:
        raise ValueError(f"invalid namespace: {problem}")
    body: dict[str, Any] = {}
    ray_version = spec.ray_version or ray_version_of_image(spec.image)
    if ray_version is not None:
        body["rayVersion"] = ray_version
    if auth_options_served:
        body["authOptions"] = auth_options(spec.ray_auth)
    # Created suspended: Kueue unsuspends it on admission, so no pod starts before then.
    body["suspend"] = True
    body["enableInTreeAutoscaling"] = spec.autoscaling
    if spec.autoscaling:
        # Explicit, so the quota Kueue 0.19 counts for the sidecar is a known amount.
        amounts = {
            "cpu": cpu_text(spec.autoscaler_cpu),
            "memory": memory_text(spec.autoscaler_memory),
        }
        body["autoscalerOptions"] = {
            "resources": {"requests": dict(amounts), "limits": dict(amounts)}
        }
        # The sidecar is a Ray process too: with auth off it must be told so as well.
        if sidecar_env := container_env(spec.ray_auth):
            body["autoscalerOptions"]["env"] = sidecar_env
    body["headGroupSpec"] = _head_group(spec)
    body["workerGroupSpecs"] = [_worker_group(spec)]
    return {
        "apiVersion": RAYCLUSTER_API_VERSION,
        "kind": RAYCLUSTER_KIND,
        "metadata": _metadata(spec, namespace, owner),
        "spec": body,
    }


def _metadata(spec: ValidatedClusterSpec, namespace: str, owner: str | None) -> dict[str, Any]:
    metadata = managed_metadata(spec.name, namespace, spec.queue, spec.priority, owner, spec.labels)
    if spec.autoscaling:
        metadata.setdefault("annotations", {})[ELASTIC_JOB_ANNOTATION] = "true"
    return metadata


def _head_group(spec: ValidatedClusterSpec) -> dict[str, Any]:
    container = _container(spec, HEAD_CONTAINER_NAME, spec.head_cpu, spec.head_memory, 0)
    container["ports"] = [{"name": name, "containerPort": port} for name, port in HEAD_PORTS]
    return {
        # 0.0.0.0 so the dashboard is reachable through the head Service, not only in-pod.
        "rayStartParams": {"dashboard-host": "0.0.0.0"},
        "template": {"spec": _pod_spec(spec, container)},
    }


def _worker_group(spec: ValidatedClusterSpec) -> dict[str, Any]:
    container = _container(
        spec, WORKER_CONTAINER_NAME, spec.worker_cpu, spec.worker_memory, spec.worker_gpu
    )
    return {
        "groupName": WORKER_GROUP_NAME,
        "replicas": spec.workers,
        "minReplicas": spec.min_workers,
        "maxReplicas": spec.max_workers,
        "rayStartParams": {},
        "template": {"spec": _pod_spec(spec, container)},
    }


def _pod_spec(spec: ValidatedClusterSpec, container: dict[str, Any]) -> dict[str, Any]:
    # Head and workers share the placement: Kueue checks each pod set against the flavors.
    pod: dict[str, Any] = {"containers": [container]}
    if spec.tolerations:
        pod["tolerations"] = [t.to_json() for t in spec.tolerations]
    if spec.node_selector:
        pod["nodeSelector"] = dict(spec.node_selector)
    return pod


def _container(
    spec: ValidatedClusterSpec, name: str, cpu: Decimal, memory: Decimal, gpu: int
) -> dict[str, Any]:
    amounts = {"cpu": cpu_text(cpu), "memory": memory_text(memory)}
    if gpu > 0:
        amounts[GPU_RESOURCE] = str(gpu)
    container: dict[str, Any] = {
        "name": name,
        "image": spec.image,
        # requests == limits: Guaranteed QoS, and Kueue's quota matches what pods may use.
        "resources": {"requests": dict(amounts), "limits": dict(amounts)},
    }
    env = [{"name": key, "value": value} for key, value in spec.env.items()]
    env += container_env(spec.ray_auth)
    if env:
        container["env"] = env
    return container
