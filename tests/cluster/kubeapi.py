"""Admin access to the local API server: server-side apply and small typed helpers.

Only the test bed uses this (with the admin client certificate); product code has its own
Kubernetes layer in ``jupyter_dw/k8s``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from kubernetes import config
from kubernetes.client.exceptions import ApiException

FIELD_MANAGER = "jupyter-dw-testbed"

# kind -> (plural, namespaced) for the kinds the test bed applies itself.
_KINDS: dict[str, tuple[str, bool]] = {
    "CustomResourceDefinition": ("customresourcedefinitions", False),
    "Namespace": ("namespaces", False),
    "Node": ("nodes", False),
    "Service": ("services", True),
    "ServiceAccount": ("serviceaccounts", True),
    "APIService": ("apiservices", False),
    "MutatingWebhookConfiguration": ("mutatingwebhookconfigurations", False),
    "ValidatingWebhookConfiguration": ("validatingwebhookconfigurations", False),
    "ClusterRole": ("clusterroles", False),
    "ClusterRoleBinding": ("clusterrolebindings", False),
    "Role": ("roles", True),
    "RoleBinding": ("rolebindings", True),
    "ResourceFlavor": ("resourceflavors", False),
    "ClusterQueue": ("clusterqueues", False),
    "Cohort": ("cohorts", False),
    "LocalQueue": ("localqueues", True),
    "WorkloadPriorityClass": ("workloadpriorityclasses", False),
    "Workload": ("workloads", True),
    "RayCluster": ("rayclusters", True),
    "ClusterTrainingRuntime": ("clustertrainingruntimes", False),
    "TrainJob": ("trainjobs", True),
    "PriorityClass": ("priorityclasses", False),
    "Secret": ("secrets", True),
    "AdmissionCheck": ("admissionchecks", False),
    "MultiKueueConfig": ("multikueueconfigs", False),
    "MultiKueueCluster": ("multikueueclusters", False),
    "RayJob": ("rayjobs", True),
}


def object_path(obj: dict[str, Any], *, with_name: bool = True) -> str:
    """REST path of ``obj`` (by apiVersion, kind, namespace and name)."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    plural, namespaced = _KINDS[kind]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    meta = obj.get("metadata", {})
    if namespaced:
        base += f"/namespaces/{meta['namespace']}"
    base += f"/{plural}"
    return f"{base}/{meta['name']}" if with_name else base


class AdminApi:
    """A thin admin client for the test bed built from a kubeconfig file."""

    def __init__(self, kubeconfig: str) -> None:
        self.api_client = config.new_client_from_config(config_file=kubeconfig)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str | None = None,
        query: list[tuple[str, Any]] | None = None,
    ) -> Any:
        """Call the API server and return the decoded JSON body (or None)."""
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        data = self.api_client.call_api(
            path,
            method,
            query_params=query or [],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
        )
        raw = data.data
        return json.loads(raw) if raw else None

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply ``obj`` (create or update), forcing our field ownership."""
        return self.request(
            "PATCH",
            object_path(obj),
            obj,
            content_type="application/apply-patch+yaml",
            query=[("fieldManager", FIELD_MANAGER), ("force", "true")],
        )

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create ``obj``; cheaper than apply for huge objects such as CRDs on a fresh cluster
        (server-side apply computes managed fields over the whole schema)."""
        return self.request(
            "POST",
            object_path(obj, with_name=False),
            obj,
            content_type="application/json",
            query=[("fieldManager", FIELD_MANAGER)],
        )

    def get(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The current object, or None when it does not exist."""
        try:
            return self.request("GET", object_path(obj))
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def delete(self, obj: dict[str, Any]) -> None:
        """Delete ``obj`` (background propagation); absent objects are fine."""
        try:
            self.request(
                "DELETE",
                object_path(obj),
                {"propagationPolicy": "Background"},
                content_type="application/json",
            )
        except ApiException as err:
            if err.status != 404:
                raise


class ComponentDied(RuntimeError):
    """A process of the test bed exited while something waited for it: stop waiting."""


def wait_for(
    condition: Callable[[], Any], *, timeout: float, what: str, interval: float = 0.2
) -> Any:
    """Call ``condition`` until it returns something truthy; raise TimeoutError naming ``what``.

    Used only where the API offers no watch for the condition (process start-up, readiness
    endpoints); everything else in tests waits on watches.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = condition()
            if result:
                return result
        except ComponentDied:
            raise
        except Exception as err:  # the component may not be listening yet
            last_error = err
        time.sleep(interval)
    detail = f" (last error: {last_error})" if last_error else ""
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
