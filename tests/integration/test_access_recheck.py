"""The cheap re-check against the real API server: one SelfSubjectRulesReview gives the same
verdict as one SelfSubjectAccessReview per permission, aggregated discovery the same
``Discovery`` as one GET per group version, and Kueue's controller is probed only while a
Workload of the namespace depends on it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from jupyter_dw.k8s.access import NEEDED_PERMISSIONS, check_access, recheck_access
from jupyter_dw.k8s.auth import load_credentials
from jupyter_dw.k8s.client import KubeApi
from jupyter_dw.k8s.discovery import _Served, discover
from jupyter_dw.k8s.resources import RAY_CLUSTER, WORKLOAD
from jupyter_dw.k8s.session import KubeSession
from tests.cluster.fixtures import WAIT_TIMEOUT
from tests.cluster.kubeapi import wait_for
from tests.integration.clusters_support import make_queue, suspended_raycluster
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, KUEUE, namespace_rules

pytestmark = pytest.mark.cluster

VISIBILITY = "visibility.kueue.x-k8s.io"

REDUCED_RULES: list[dict[str, Any]] = [
    # Queues only, no Ray clusters; a Secret by name only; the visibility API via */sub.
    {"apiGroups": [KUEUE], "resources": ["localqueues", "workloads"], "verbs": ["list"]},
    {"apiGroups": [VISIBILITY], "resources": ["*/pendingworkloads"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["token"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]},
    # Cluster-scoped resources in a namespace's Role: listed by the rules review, granted by
    # nothing (a RoleBinding never grants a cluster-scoped resource).
    {"apiGroups": [KUEUE], "resources": ["clusterqueues", "resourceflavors"], "verbs": ["list"]},
]  # fmt: skip
REDUCED_CLUSTER_RULES: list[dict[str, Any]] = [
    {"apiGroups": [KUEUE], "resources": ["cohorts"], "verbs": ["list", "watch"]},
]


def api_for(identity) -> KubeApi:
    return KubeApi(load_credentials(identity.service_account_dir, environ=identity.environ))


@pytest.fixture
def api(request, workbench) -> Iterator[KubeApi]:
    rules, cluster_rules = request.param
    connection = api_for(workbench(rules=rules, cluster_rules=cluster_rules))
    yield connection
    connection.close()


def allowed(results) -> dict[str, bool]:
    return {p.name: r.allowed for p, r in results.items()}


@pytest.mark.parametrize(
    "api",
    [(namespace_rules(), CLUSTER_READ_RULES), (REDUCED_RULES, REDUCED_CLUSTER_RULES)],
    ids=["workbench", "reduced"],
    indirect=True,
)
def test_the_rules_review_agrees_with_one_review_per_permission(api, namespace):
    reviews = allowed(check_access(api, namespace))
    assert set(reviews) == {p.name for p in NEEDED_PERMISSIONS}
    assert True in reviews.values() and False in reviews.values()  # both verdicts met
    first = recheck_access(api, namespace)  # nothing known before: as at start-up
    assert allowed(first) == reviews
    assert allowed(recheck_access(api, namespace, first)) == reviews  # a steady re-check


@pytest.mark.parametrize("api", [(REDUCED_RULES, REDUCED_CLUSTER_RULES)], indirect=True)
def test_the_reduced_role_is_what_the_comparison_says(api, namespace):
    """The cases the rules cannot settle alone are there, and settled as the server does."""
    verdicts = allowed(recheck_access(api, namespace))
    assert verdicts["list clusterqueues.kueue.x-k8s.io"] is False  # a Role's rule: no grant
    assert verdicts["list cohorts.kueue.x-k8s.io"] is True  # a ClusterRoleBinding's
    assert verdicts["get secrets"] is False  # only the Secret named "token"
    assert verdicts["get localqueues.visibility.kueue.x-k8s.io/pendingworkloads"] is True
    assert verdicts["watch pods"] is True
    assert verdicts["create rayclusters.ray.io"] is False


def test_aggregated_discovery_says_what_one_get_per_group_version_says(reader_api):
    assert _Served(reader_api).aggregated  # this API server offers it (Kubernetes >= 1.30)
    assert not _Served(reader_api, aggregated=False).aggregated
    assert discover(reader_api) == discover(reader_api, aggregated=False)


@pytest.fixture
def reader_api(workbench) -> Iterator[KubeApi]:
    connection = api_for(workbench(rules=REDUCED_RULES[:1], name="reader"))
    yield connection
    connection.close()


def test_a_role_granted_after_start_shows_after_one_recheck(kube, workbench, namespace):
    identity = workbench(rules=REDUCED_RULES[:1])
    credentials = load_credentials(identity.service_account_dir, environ=identity.environ)
    session = KubeSession(credentials=credentials, namespace=namespace, refresh_interval=3600)
    session.start()
    rbac = client.RbacAuthorizationV1Api(kube)
    api = api_for(identity)
    [create] = [p for p in NEEDED_PERMISSIONS if p.name == "create rayclusters.ray.io"]
    try:
        assert session.allowed("create", RAY_CLUSTER) is False
        rbac.create_namespaced_role(
            namespace, {"metadata": {"name": "late"}, "rules": namespace_rules()}
        )
        subject = {"kind": "ServiceAccount", "name": identity.name, "namespace": namespace}
        role = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "late"}
        rbac.create_namespaced_role_binding(
            namespace, {"metadata": {"name": "late"}, "roleRef": role, "subjects": [subject]}
        )
        # The authorizer's own caches first take the binding in (no watch tells when).
        wait_for(
            lambda: check_access(api, namespace, [create])[create].allowed,
            timeout=WAIT_TIMEOUT,
            what="the API server allowing the new Role",
        )
        assert session.refresh() is True  # one re-check, the cheap way
        assert session.allowed("create", RAY_CLUSTER) is True
        assert session.refreshes == 1
    finally:
        session.stop()
        api.close()


def test_kueue_is_probed_only_while_a_workload_of_the_namespace_depends_on_it(
    kube, kueue, workbench, namespace
):
    """Nothing but the probe notices Kueue's process stopping while nobody calls it; it is
    asked at a re-check only while a Workload here is active and not finished, and not when a
    visibility call (served by Kueue's process) answered since the last re-check."""
    identity = workbench(rules=namespace_rules(), cluster_rules=CLUSTER_READ_RULES)
    make_queue(kueue)
    credentials = load_credentials(identity.service_account_dir, environ=identity.environ)
    session = KubeSession(credentials=credentials, namespace=namespace, refresh_interval=3600)
    session.start()
    try:
        assert session.workloads() == []  # synced: nothing here waits on Kueue
        session.refresh()
        session.refresh()
        assert session.kueue_probes == 0

        waiting = suspended_raycluster("waits")
        waiting["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
        client.CustomObjectsApi(kube).create_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayclusters", waiting
        )
        cache = session.cache(WORKLOAD)
        assert cache is not None and cache.wait_until(lambda objs: len(objs) == 1, WAIT_TIMEOUT)
        session.refresh()
        assert session.kueue_probes == 1  # its Workload depends on Kueue now

        assert session.pending_workloads("team") is not None  # Kueue's process answered
        session.refresh()
        assert session.kueue_probes == 1  # that answer stood for the probe
        session.refresh()
        assert session.kueue_probes == 2
    finally:
        session.stop()
