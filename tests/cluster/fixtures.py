"""pytest fixtures on the local control plane (loaded as a plugin by tests/conftest.py).

- ``cluster``: one control plane per test session (reused when one is already running);
- ``kube``: an admin ``ApiClient``; ``namespace``: a fresh namespace per test;
- ``kueue``: creates ResourceFlavors, ClusterQueues (with cohorts) and LocalQueues, removed
  after the test;
- ``workbench``: a ServiceAccount in the test namespace with exactly the RBAC the test grants,
  its token from the TokenRequest API and a fake service-account directory, as in a pod.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch

from .controlplane import ClusterState, LocalCluster
from .kubeapi import AdminApi, wait_for

WAIT_TIMEOUT = 90
RBAC_TIMEOUT = 30.0


@pytest.fixture(scope="session")
def cluster() -> Iterator[ClusterState]:
    """A running local control plane. Started if needed; stopped at the end only if we started
    it (set ``DW_KEEP_CLUSTER=1`` to keep it for the next run)."""
    local = LocalCluster()
    already_running = local.is_healthy()
    state = local.up()
    yield state
    if not already_running and not os.environ.get("DW_KEEP_CLUSTER"):
        local.down()


@pytest.fixture(scope="session")
def kube(cluster: ClusterState) -> client.ApiClient:
    """An admin API client (client certificate in group system:masters)."""
    return config.new_client_from_config(config_file=cluster.kubeconfig)


@pytest.fixture
def admin(cluster: ClusterState) -> AdminApi:
    """The test bed's own admin client (apply, server-side apply, raw requests)."""
    return AdminApi(cluster.kubeconfig)


@pytest.fixture(scope="session")
def kueue_api_version(kube: client.ApiClient) -> str:
    """The kueue.x-k8s.io version to write fixtures in: v1beta2 when served, else v1beta1."""
    groups = client.ApisApi(kube).get_api_versions().groups
    kueue = next(g for g in groups if g.name == "kueue.x-k8s.io")
    served = {v.version for v in kueue.versions}
    return "v1beta2" if "v1beta2" in served else "v1beta1"


@pytest.fixture
def namespace(kube: client.ApiClient) -> Iterator[str]:
    """A fresh namespace, deleted (without waiting) after the test."""
    name = f"dw-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(kube)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name, propagation_policy="Background")


def watch_until(
    list_call: Callable[..., Any],
    predicate: Callable[[dict[str, Any]], bool],
    *,
    timeout: float = WAIT_TIMEOUT,
    what: str = "condition",
    **list_kwargs: Any,
) -> dict[str, Any]:
    """Return the first object from ``list_call`` (a list API method) that satisfies
    ``predicate``, checking the current list first and then each watch event."""
    first = list_call(_preload_content=False, **list_kwargs)
    listing = json.loads(first.data)
    for item in listing.get("items", []):
        if predicate(item):
            return item
    stream = watch.Watch()
    seen: dict[str, Any] | None = None
    for event in stream.stream(
        list_call,
        resource_version=listing["metadata"]["resourceVersion"],
        timeout_seconds=int(timeout),
        _request_timeout=timeout + 5,
        **list_kwargs,
    ):
        obj = event["raw_object"]
        seen = obj
        if event["type"] != "DELETED" and predicate(obj):
            stream.stop()
            return obj
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}; last seen: {seen}")


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The status condition of type ``kind`` of ``obj``, if any."""
    for cond in obj.get("status", {}).get("conditions", []) or []:
        if cond.get("type") == kind:
            return cond
    return None


def plain_workload(
    api_version: str, name: str, queue: str, cpu: str, priority: int | None = None
) -> dict[str, Any]:
    """A Workload of one pod asking ``cpu`` in LocalQueue ``queue``, with no job behind it:
    Kueue admits or queues it like any other, and nothing runs. ``priority`` sets
    ``spec.priority`` (Kueue orders pending workloads by it, then by creation second)."""
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    pod_set = {
        "name": "main",
        "count": 1,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
    }
    return {
        "apiVersion": f"kueue.x-k8s.io/{api_version}",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": queue,
            "podSets": [pod_set],
            **({"priority": priority} if priority is not None else {}),
        },
    }


@dataclass
class KueueObjects:
    """Creates Kueue objects for one test; cluster-scoped names get a per-test prefix."""

    kube: client.ApiClient
    api_version: str
    namespace: str
    prefix: str
    created: list[tuple[str, str]] = field(default_factory=list)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.kube)

    def _create_cluster_scoped(self, plural: str, body: dict[str, Any]) -> str:
        self.custom.create_cluster_custom_object("kueue.x-k8s.io", self.api_version, plural, body)
        self.created.append((plural, body["metadata"]["name"]))
        return body["metadata"]["name"]

    def flavor(
        self,
        name: str,
        node_labels: dict[str, str] | None = None,
        node_taints: list[dict[str, str]] | None = None,
    ) -> str:
        """A ResourceFlavor; returns its full name."""
        spec: dict[str, Any] = {}
        if node_labels:
            spec["nodeLabels"] = node_labels
        if node_taints:
            spec["nodeTaints"] = node_taints
        body: dict[str, Any] = {
            "apiVersion": f"kueue.x-k8s.io/{self.api_version}",
            "kind": "ResourceFlavor",
            "metadata": {"name": f"{self.prefix}-{name}"},
            "spec": spec,
        }
        return self._create_cluster_scoped("resourceflavors", body)

    def cluster_queue(
        self,
        name: str,
        flavors: dict[str, dict[str, str | dict[str, str]]],
        *,
        cohort: str | None = None,
        **spec: Any,
    ) -> str:
        """A ClusterQueue with one resource group.

        ``flavors`` maps a full flavor name to ``{resource: nominal}`` or
        ``{resource: {"nominalQuota": .., "borrowingLimit": .., "lendingLimit": ..}}``;
        ``cohort`` is a short name (prefixed per test).
        """
        covered: list[str] = []
        flavor_specs = []
        for flavor_name, resources in flavors.items():
            res = []
            for resource, quota in resources.items():
                if resource not in covered:
                    covered.append(resource)
                entry = dict(quota) if isinstance(quota, dict) else {"nominalQuota": quota}
                res.append({"name": resource, **entry})
            flavor_specs.append({"name": flavor_name, "resources": res})
        body_spec: dict[str, Any] = {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": covered, "flavors": flavor_specs}],
            **spec,
        }
        if cohort:
            key = "cohortName" if self.api_version == "v1beta2" else "cohort"
            body_spec[key] = f"{self.prefix}-{cohort}"
        body = {
            "apiVersion": f"kueue.x-k8s.io/{self.api_version}",
            "kind": "ClusterQueue",
            "metadata": {"name": f"{self.prefix}-{name}"},
            "spec": body_spec,
        }
        return self._create_cluster_scoped("clusterqueues", body)

    def local_queue(
        self, name: str, cluster_queue: str, annotations: dict[str, str] | None = None
    ) -> str:
        """A LocalQueue in the test namespace pointing at ``cluster_queue`` (full name)."""
        body = {
            "apiVersion": f"kueue.x-k8s.io/{self.api_version}",
            "kind": "LocalQueue",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "annotations": annotations or {},
            },
            "spec": {"clusterQueue": cluster_queue},
        }
        self.custom.create_namespaced_custom_object(
            "kueue.x-k8s.io", self.api_version, self.namespace, "localqueues", body
        )
        return name

    def provisioning_check(self, name: str, backoff_limit: int | None = None) -> str:
        """An AdmissionCheck run by Kueue's ProvisioningRequest controller, with its
        ProvisioningRequestConfig (class ``check-capacity.autoscaling.x-k8s.io``);
        ``backoff_limit`` sets ``retryStrategy.backoffLimitCount`` (0: a Failed request
        rejects the workload at once, where by default Kueue retries for minutes). Returns the
        check's full name, once Kueue marks it Active (its controller is running)."""
        config: dict[str, Any] = {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io"}
        if backoff_limit is not None:
            config["retryStrategy"] = {"backoffLimitCount": backoff_limit}
        full = f"{self.prefix}-{name}"
        self._create_cluster_scoped(
            "provisioningrequestconfigs",
            {
                "apiVersion": f"kueue.x-k8s.io/{self.api_version}",
                "kind": "ProvisioningRequestConfig",
                "metadata": {"name": full},
                "spec": config,
            },
        )
        self._create_cluster_scoped(
            "admissionchecks",
            {
                "apiVersion": f"kueue.x-k8s.io/{self.api_version}",
                "kind": "AdmissionCheck",
                "metadata": {"name": full},
                "spec": {
                    "controllerName": "kueue.x-k8s.io/provisioning-request",
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "ProvisioningRequestConfig",
                        "name": full,
                    },
                },
            },
        )
        self.wait_active("admissionchecks", full)
        return full

    def wait_active(self, plural: str, name: str) -> dict[str, Any]:
        """Wait until Kueue marks the ClusterQueue, LocalQueue or AdmissionCheck Active."""
        kwargs: dict[str, Any] = {"field_selector": f"metadata.name={name}"}
        if plural == "localqueues":
            call = self.custom.list_namespaced_custom_object
            kwargs["namespace"] = self.namespace
        else:
            call = self.custom.list_cluster_custom_object
        return watch_until(
            lambda **kw: call("kueue.x-k8s.io", self.api_version, plural=plural, **kw),
            lambda obj: (condition(obj, "Active") or {}).get("status") == "True",
            what=f"{plural}/{name} Active",
            **kwargs,
        )

    def cleanup(self) -> None:
        for plural, name in reversed(self.created):
            try:
                self.custom.delete_cluster_custom_object(
                    "kueue.x-k8s.io", self.api_version, plural, name
                )
            except client.ApiException as err:
                if err.status != 404:
                    raise


@pytest.fixture
def kueue(kube: client.ApiClient, kueue_api_version: str, namespace: str) -> Iterator[KueueObjects]:
    """Factory for Kueue objects of this test (cluster-scoped ones prefixed by the namespace)."""
    objects = KueueObjects(kube, kueue_api_version, namespace, prefix=namespace)
    yield objects
    objects.cleanup()


@dataclass(frozen=True)
class WorkbenchIdentity:
    """A ServiceAccount as a workbench pod would run it."""

    namespace: str
    name: str
    token: str
    service_account_dir: Path
    host: str
    port: str

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    def api_client(self) -> client.ApiClient:
        """A client that authenticates with this identity's token only."""
        cfg = client.Configuration()
        cfg.host = f"https://{self.host}:{self.port}"
        cfg.ssl_ca_cert = str(self.service_account_dir / "ca.crt")
        cfg.api_key = {"authorization": f"Bearer {self.token}"}
        return client.ApiClient(cfg)

    @property
    def environ(self) -> dict[str, str]:
        """The environment variables the kubelet sets in every pod."""
        return {"KUBERNETES_SERVICE_HOST": self.host, "KUBERNETES_SERVICE_PORT": self.port}


def allowed(
    identity: WorkbenchIdentity, verb: str, group: str, resource: str, namespaced: bool = True
) -> bool:
    """The API server's verdict (SelfSubjectAccessReview as ``identity``)."""
    resource, _, subresource = resource.partition("/")
    attributes = client.V1ResourceAttributes(
        verb=verb,
        group=group,
        resource=resource,
        subresource=subresource or None,
        namespace=identity.namespace if namespaced else None,
    )
    review = client.AuthorizationV1Api(identity.api_client()).create_self_subject_access_review(
        client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes)
        )
    )
    return bool(review.status.allowed)


def wait_allowed(
    identity: WorkbenchIdentity,
    verb: str,
    group: str,
    resource: str,
    *,
    namespaced: bool = True,
    expected: bool = True,
) -> None:
    """Wait until the authorizer's verdict is ``expected`` (its RBAC informer lags writes by a
    few milliseconds; no watch exists for a verdict)."""
    wait_for(
        lambda: allowed(identity, verb, group, resource, namespaced) is expected,
        timeout=RBAC_TIMEOUT,
        what=f"{verb} {resource}.{group} {'allowed' if expected else 'denied'}",
    )


def mount_service_account(
    cluster: ClusterState, namespace: str, name: str, token: str, sa_dir: Path
) -> WorkbenchIdentity:
    """Write ``sa_dir`` as the kubelet mounts a service account (``token``, ``ca.crt``,
    ``namespace``) and return the identity a pod of ``cluster`` would have."""
    sa_dir.mkdir()
    (sa_dir / "token").write_text(token)
    (sa_dir / "ca.crt").write_bytes(Path(cluster.ca_file).read_bytes())
    (sa_dir / "namespace").write_text(namespace)
    host, _, port = cluster.apiserver.removeprefix("https://").rpartition(":")
    return WorkbenchIdentity(namespace, name, token, sa_dir, host, port)


def cluster_role_name(namespace: str, name: str) -> str:
    """The ClusterRole (and binding) :func:`make_workbench` makes for ServiceAccount ``name``."""
    return f"{namespace}-{name}"


def make_workbench(
    kube: client.ApiClient,
    cluster: ClusterState,
    namespace: str,
    directory: Path,
    rules: list[dict[str, Any]] | None = None,
    cluster_rules: list[dict[str, Any]] | None = None,
    name: str = "workbench",
) -> WorkbenchIdentity:
    """A ServiceAccount bound to a Role with ``rules`` (and a ClusterRole
    :func:`cluster_role_name` with ``cluster_rules``), its TokenRequest token mounted under
    ``directory`` as a workbench pod sees it. The caller deletes the cluster-scoped objects."""
    core = client.CoreV1Api(kube)
    rbac = client.RbacAuthorizationV1Api(kube)
    core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=name))
    )
    subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    if rules:
        rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": rules})
        rbac.create_namespaced_role_binding(
            namespace,
            {
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [subject],
            },
        )
    if cluster_rules:
        cluster_name = cluster_role_name(namespace, name)
        rbac.create_cluster_role({"metadata": {"name": cluster_name}, "rules": cluster_rules})
        rbac.create_cluster_role_binding(
            {
                "metadata": {"name": cluster_name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": cluster_name,
                },
                "subjects": [subject],
            }
        )
    token = core.create_namespaced_service_account_token(
        name,
        namespace,
        client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        ),
    ).status.token
    sa_dir = directory / f"serviceaccount-{name}"
    identity = mount_service_account(cluster, namespace, name, token, sa_dir)
    # The authorizer learns bindings from its informers, a moment after they are written; a
    # server started before then decides once what it may read (its next review is a minute
    # away). One verdict per binding: Roles and ClusterRoles come through separate informers.
    for granted, namespaced in ((rules, True), (cluster_rules, False)):
        probe = next((r for r in granted or [] if checkable(r)), None)
        if probe is not None:
            wait_allowed(
                identity,
                probe["verbs"][0],
                probe["apiGroups"][0],
                probe["resources"][0],
                namespaced=namespaced,
            )
    return identity


def checkable(rule: dict[str, Any]) -> bool:
    """Whether one access review can tell that ``rule`` is in effect: a resource rule with no
    resource names and no wildcards."""
    return (
        bool(rule.get("resources") and rule.get("verbs") and rule.get("apiGroups"))
        and not rule.get("resourceNames")
        and "*" not in (rule["verbs"][0], rule["apiGroups"][0], rule["resources"][0])
    )


@pytest.fixture
def workbench(
    kube: client.ApiClient, cluster: ClusterState, namespace: str, tmp_path: Path
) -> Iterator[Callable[..., WorkbenchIdentity]]:
    """Factory: ``workbench(rules=[...], cluster_rules=[...])`` makes a ServiceAccount bound to a
    Role with ``rules`` (and a ClusterRole with ``cluster_rules``), and returns its identity."""
    rbac = client.RbacAuthorizationV1Api(kube)
    cluster_objects: list[str] = []

    def make(
        rules: list[dict[str, Any]] | None = None,
        cluster_rules: list[dict[str, Any]] | None = None,
        name: str = "workbench",
    ) -> WorkbenchIdentity:
        identity = make_workbench(kube, cluster, namespace, tmp_path, rules, cluster_rules, name)
        if cluster_rules:
            cluster_objects.append(cluster_role_name(namespace, name))
        return identity

    yield make
    for cluster_name in cluster_objects:
        rbac.delete_cluster_role_binding(cluster_name)
        rbac.delete_cluster_role(cluster_name)
