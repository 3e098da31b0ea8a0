"""Where a RayCluster's head answers: dashboard / Jobs API and Ray Client addresses. Pure.
From a configured template, else from what KubeRay reports (docs/explanation/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..names import CLIENT_PORT, DASHBOARD_PORT
from .cluster_state import cluster_snapshot
from .validation import dns1035_label_error

KUBERAY_DASHBOARD_URL = "http://{service}.{namespace}.svc:{port}"
"""The dashboard (and Jobs API) of a head Service, by its cluster DNS name."""
KUBERAY_CLIENT_URL = "ray://{service}.{namespace}.svc:{port}"
"""Ray Client on a head Service, by its cluster DNS name."""


class NoAddress(ValueError):
    """The head of a cluster has no usable address (the text says what KubeRay reports)."""


def _head_service(name: str, raycluster: Mapping[str, Any]) -> str:
    service = cluster_snapshot(raycluster).dashboard.service
    # The status is written by KubeRay, but a name that is not a Service name must not become
    # a host.
    if dns1035_label_error(service) is not None:
        raise NoAddress(f"RayCluster {name} reports head Service {service!r}")
    return service


def _reported_port(raycluster: Mapping[str, Any], endpoint: str, default: int) -> int:
    status = raycluster.get("status")
    endpoints = status.get("endpoints") if isinstance(status, Mapping) else None
    raw = endpoints.get(endpoint) if isinstance(endpoints, Mapping) else None
    try:
        port = int(raw) if raw is not None else default
    except (TypeError, ValueError):
        port = 0
    if not 0 < port < 65536:
        raise NoAddress(f"RayCluster reports {endpoint} port {raw!r}")
    return port


def _address(
    template: str,
    port: int,
    name: str,
    namespace: str,
    raycluster: Mapping[str, Any],
    reported: tuple[str, str, int],
) -> str:
    """``template`` filled in, else ``reported`` (a URL format, KubeRay's endpoint name, its
    default port) filled from what KubeRay reports of the head."""
    if template:
        return template.format(name=name, namespace=namespace, port=port).rstrip("/")
    url, endpoint, default = reported
    return url.format(
        service=_head_service(name, raycluster),
        namespace=namespace,
        port=_reported_port(raycluster, endpoint, default),
    )


def dashboard_address(
    template: str, port: int, name: str, namespace: str, raycluster: Mapping[str, Any]
) -> str:
    """The dashboard / Jobs API root of RayCluster ``name`` (no trailing slash)."""
    reported = (KUBERAY_DASHBOARD_URL, "dashboard", DASHBOARD_PORT)
    return _address(template, port, name, namespace, raycluster, reported)


def client_address(
    template: str, port: int, name: str, namespace: str, raycluster: Mapping[str, Any]
) -> str:
    """The ``ray://`` address of RayCluster ``name``'s Ray Client server."""
    reported = (KUBERAY_CLIENT_URL, "client", CLIENT_PORT)
    return _address(template, port, name, namespace, raycluster, reported)


def head_image(raycluster: Mapping[str, Any] | None) -> str | None:
    """The image of the head's first container (what a kernel's Ray must match to use Ray
    Client), None when the RayCluster names none."""
    try:
        spec = (raycluster or {})["spec"]["headGroupSpec"]["template"]["spec"]
        return str(spec["containers"][0]["image"])
    except (KeyError, IndexError, TypeError):
        return None
