"""Where a RayCluster's head answers: its dashboard / Jobs API (``http://``) and its Ray Client
port (``ray://``), from a configured template or from what KubeRay reports. Pure: no I/O.

A template (``ray_dashboard_url``, ``ray_client_url``) holds only the placeholders ``{name}``
(the RayCluster's name, required), ``{namespace}`` and ``{port}``; no format spec, conversion,
query string or fragment, since a path is appended to it. Without a template the head Service
KubeRay reports (``status.head.serviceName``) is used by its cluster DNS name,
``<service>.<namespace>.svc``, on the port KubeRay reports (``status.endpoints``), else Ray's
default port.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..names import CLIENT_PORT, DASHBOARD_PORT
from .cluster_state import cluster_status
from .validation import dns1035_label_error

TEMPLATE_FIELDS = frozenset({"name", "namespace", "port"})
DEFAULT_TEMPLATE = ""
"""No template: use what KubeRay reports."""
KUBERAY_DASHBOARD_URL = "http://{service}.{namespace}.svc:{port}"
"""The dashboard (and Jobs API) of a head Service, by its cluster DNS name."""
KUBERAY_CLIENT_URL = "ray://{service}.{namespace}.svc:{port}"
"""Ray Client on a head Service, by its cluster DNS name."""
HTTP_SCHEMES = ("http", "https")
CLIENT_SCHEMES = ("ray",)


class NoAddress(ValueError):
    """The head of a cluster has no usable address (the text says what KubeRay reports)."""


def validate_url_template(template: str, schemes: tuple[str, ...] = HTTP_SCHEMES) -> str:
    """``template`` when it is empty (use what KubeRay reports) or a URL of one of ``schemes``
    built only from ``{name}``, ``{namespace}`` and ``{port}``; else ``ValueError`` saying
    what is wrong."""
    if template == DEFAULT_TEMPLATE:
        return template
    try:
        parsed = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(template)]
    except ValueError as err:  # unbalanced braces
        raise ValueError(f"{template!r} is not a valid template: {err}") from err
    fields = [f for f, _, _ in parsed if f is not None]
    unknown = sorted({f for f in fields if f not in TEMPLATE_FIELDS})
    if unknown:
        raise ValueError(
            f"{template!r} uses unknown placeholder(s) {', '.join(repr(f) for f in unknown)}; "
            "only {name}, {namespace} and {port} are known"
        )
    if any(spec or conv for _, spec, conv in parsed):
        raise ValueError(f"{template!r}: placeholders take no format spec or conversion")
    if "name" not in fields:
        raise ValueError(f"{template!r} must contain {{name}} (the RayCluster's name)")
    sample = urlsplit(template.format(name="example", namespace="default", port=1))
    if sample.scheme not in schemes or not sample.hostname:
        wanted = " or ".join(f"{s}://" for s in schemes)
        raise ValueError(f"{template!r} must be a {wanted} URL with a host")
    if sample.query or sample.fragment:
        raise ValueError(f"{template!r} must not have a query string or fragment")
    return template


def _head_service(name: str, raycluster: Mapping[str, Any]) -> str:
    service = cluster_status(raycluster).dashboard.service
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
