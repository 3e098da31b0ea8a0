"""A cluster without Kueue or KubeRay, on a second, disposable API server and etcd (never the
shared test cluster): the doctor says clearly what is not installed and exits 1, and a session
started there picks up Kueue and KubeRay when their CRDs are installed later, without a
restart."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_dw.core.queue_state import queue_state
from jupyter_dw.domain.kinds.rayjob import RAYJOB
from jupyter_dw.k8s.auth import load_credentials
from jupyter_dw.k8s.client import KubeApi
from jupyter_dw.k8s.discovery import discover
from jupyter_dw.k8s.errors import NotInstalled
from jupyter_dw.k8s.resources import LOCAL_QUEUE, RAY_CLUSTER, RAY_JOB
from jupyter_dw.k8s.session import KubeSession
from tests.cluster import manifests
from tests.cluster.bare import BareControlPlane
from tests.cluster.controlplane import ClusterState
from tests.cluster.fixtures import WorkbenchIdentity
from tests.cluster.kubeapi import AdminApi, object_path, wait_for
from tests.integration.rbac_examples import by_name, doctor_json, run_doctor

pytestmark = pytest.mark.cluster

TIMEOUT = 30.0
SCHEMA_TIMEOUT = 90.0
"""The API server publishes a changed CRD's OpenAPI v3 document after a while (its OpenAPI
controller batches): seen taking up to about 30 s on 2 loaded cores."""


@pytest.fixture(scope="module")
def bare(cluster, tmp_path_factory) -> Iterator[BareControlPlane]:
    """etcd + kube-apiserver only (``cluster`` first: the binaries are built by then)."""
    plane = BareControlPlane(tmp_path_factory.mktemp("bare") / "control-plane")
    with plane:
        yield plane


def bare_state(bare: BareControlPlane) -> ClusterState:
    state = bare.state()
    assert state is not None
    return state


@pytest.fixture
def bare_workbench(bare: BareControlPlane, tmp_path: Path) -> WorkbenchIdentity:
    """A ServiceAccount of the bare cluster with no RBAC, as a workbench pod sees it."""
    return bare.workbench(tmp_path / "serviceaccount")


def test_the_doctor_says_kueue_and_kuberay_are_not_installed(bare_workbench):
    code, report = doctor_json(bare_workbench)
    table = run_doctor(identity=bare_workbench)

    assert code == 1 and table.returncode == 1
    checks = by_name(report)
    assert checks["API server"]["status"] == "ok"
    assert checks["identity"]["detail"].startswith(bare_workbench.username)
    kueue = checks["Kueue"]
    assert kueue["status"] == "missing"
    assert kueue["detail"].startswith("Kueue is not installed: the API server serves no ")
    assert "install Kueue" in kueue["hint"]
    assert checks["KubeRay"]["status"] == "missing"
    assert "install the KubeRay operator" in checks["KubeRay"]["hint"]
    assert checks["visibility API"]["status"] == "optional-missing"
    assert checks["LocalQueues"]["status"] == "skipped"
    assert report["kueue"]["installed"] is False
    # The message a maintainer reads first.
    assert "NOT READY" in table.stdout
    assert "- Kueue: Kueue is not installed" in table.stdout
    assert "- KubeRay: KubeRay is not installed" in table.stdout


def crds(bare: BareControlPlane) -> list[dict[str, Any]]:
    """Kueue's LocalQueue and Workload CRDs and KubeRay's RayCluster CRD."""
    return bare.workbench_crds()


def install(bare: BareControlPlane, objects: list[dict[str, Any]]) -> None:
    """Create each CRD that is not there yet (tests of this module share the plane)."""
    admin = bare.admin()
    for crd in objects:
        if admin.get(crd) is None:
            admin.create(crd)


def test_a_session_picks_up_kueue_and_kuberay_installed_later(bare):
    admin, state = bare.admin(), bare_state(bare)
    credentials = load_credentials("/nonexistent", environ={"KUBECONFIG": state.kubeconfig})
    session = KubeSession(credentials=credentials, namespace="default", refresh_interval=0.5)
    session.start()
    try:
        assert not session.discovery.kueue_installed
        assert not session.discovery.kuberay_installed
        with pytest.raises(NotInstalled):
            queue_state(session, timeout=5)
        assert session.watched == []

        install(bare, crds(bare))

        wait_for(
            lambda: {"localqueues", "workloads", "rayclusters"} <= set(session.watched),
            timeout=TIMEOUT,
            what="the session watching LocalQueues, Workloads and RayClusters",
        )
        assert session.discovery.kueue_installed and session.discovery.kuberay_installed
        assert session.refreshes >= 1
        version = session.discovery.kueue_version
        admin.apply(
            {
                "apiVersion": f"kueue.x-k8s.io/{version}",
                "kind": "LocalQueue",
                "metadata": {"name": "late", "namespace": "default"},
                "spec": {"clusterQueue": "nowhere"},
            }
        )
        cache = session.cache(LOCAL_QUEUE)
        assert cache is not None
        assert cache.wait_until(
            lambda objs: any(o["metadata"]["name"] == "late" for o in objs), TIMEOUT
        )
        assert [q.name for q in queue_state(session).local_queues] == ["late"]
        assert session.ray_clusters() == []
        assert session.cache(RAY_CLUSTER) is not None
    finally:
        session.stop()


def test_a_resource_that_disappears_is_rechecked_at_once(bare):
    """KubeRay uninstalled under a running session: the RayCluster watch's re-list gets a 404
    for the resource, which asks for a re-check at once (not after the hour's interval); the
    session then stops watching RayClusters and says KubeRay is not installed."""
    admin, state = bare.admin(), bare_state(bare)
    install(bare, crds(bare))
    credentials = load_credentials("/nonexistent", environ={"KUBECONFIG": state.kubeconfig})
    session = KubeSession(credentials=credentials, namespace="default", refresh_interval=3600)
    session.start()
    try:
        wait_for(
            lambda: session.discovery.kuberay_installed and "rayclusters" in session.watched,
            timeout=TIMEOUT,
            what="KubeRay discovered and watched",
        )
        assert session.ray_clusters() == []
        [raycluster_crd] = [c for c in crds(bare) if c["metadata"]["name"] == "rayclusters.ray.io"]
        admin.delete(raycluster_crd)

        wait_for(
            lambda: "rayclusters" not in session.watched,
            timeout=TIMEOUT,
            what="the RayCluster watch stopped",
        )
        assert not session.discovery.kuberay_installed
        assert session.discovery.kueue_installed  # Kueue is still there
        with pytest.raises(NotInstalled):
            session.ray_clusters(timeout=5)
    finally:
        session.stop()


def test_whether_kuberay_supports_ray_auth_is_read_from_its_schema(bare):
    """A KubeRay before 1.6 has no ``spec.authOptions`` in its RayCluster schema: discovery
    reads that from the API server's OpenAPI v3 document (no CRD read permission needed), and
    sees it appear when the CRD is upgraded."""
    admin, state = bare.admin(), bare_state(bare)
    install(bare, crds(bare))
    [current] = [c for c in crds(bare) if c["metadata"]["name"] == "rayclusters.ray.io"]
    old = copy.deepcopy(current)
    for version in old["spec"]["versions"]:
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["properties"].pop("authOptions", None)  # only v1 has it
    credentials = load_credentials("/nonexistent", environ={"KUBECONFIG": state.kubeconfig})
    api = KubeApi(credentials)
    try:
        admin.delete(current)
        wait_for(lambda: admin.get(current) is None, timeout=TIMEOUT, what="the CRD gone")
        admin.create(old)
        wait_for(
            lambda: discover(api).ray_auth_options is False,
            timeout=SCHEMA_TIMEOUT,
            what="the schema without authOptions published",
        )
        admin.delete(old)
        wait_for(lambda: admin.get(current) is None, timeout=TIMEOUT, what="the CRD gone")
        admin.create(current)
        wait_for(
            lambda: discover(api).ray_auth_options is True,
            timeout=SCHEMA_TIMEOUT,
            what="the schema with authOptions published",
        )
    finally:
        api.close()
        if admin.get(current) is None:
            admin.create(current)


def session_of(bare: BareControlPlane, refresh_interval: float) -> KubeSession:
    """A started session of the bare plane's admin (every permission: no 403 re-checks)."""
    credentials = load_credentials(
        "/nonexistent", environ={"KUBECONFIG": bare_state(bare).kubeconfig}
    )
    session = KubeSession(
        credentials=credentials, namespace="default", refresh_interval=refresh_interval
    )
    session.start()
    return session


def test_idle_rechecks_ask_no_discovery_once_kueue_and_kuberay_are_served(bare):
    """The re-check every refresh_interval is the rules review alone: discovery is asked again
    only on a signal, and a quiet cluster gives none."""
    install(bare, crds(bare))
    session = session_of(bare, refresh_interval=0.2)
    try:
        wait_for(lambda: session.refreshes >= 5, timeout=TIMEOUT, what="5 re-checks")
        assert session.discoveries == 0
        assert {"localqueues", "workloads", "rayclusters"} <= set(session.watched)
    finally:
        session.stop()


def test_kuberay_upgraded_in_place_is_seen_through_the_watch_it_ends(bare):
    """A CRD changed in place (KubeRay upgraded: here its RayCluster schema loses
    ``spec.authOptions``) makes the API server end the RayCluster watch about a second later;
    that asks discovery again at once, though the next regular re-check is an hour away."""
    admin = bare.admin()
    install(bare, crds(bare))
    [crd] = [c for c in crds(bare) if c["metadata"]["name"] == "rayclusters.ray.io"]
    session = session_of(bare, refresh_interval=3600)
    try:
        wait_for(
            lambda: (
                session.discovery.ray_auth_options is True
                and (cache := session.cache(RAY_CLUSTER)) is not None
                and cache.watching
            ),
            timeout=SCHEMA_TIMEOUT,
            what="the RayCluster schema with authOptions, and its watch open",
        )
        served = admin.get(crd)
        assert served is not None
        older = copy.deepcopy(served)
        for version in older["spec"]["versions"]:
            spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
            spec["properties"].pop("authOptions", None)
        admin.request("PUT", object_path(older), older)

        wait_for(
            lambda: session.discovery.ray_auth_options is False,
            timeout=SCHEMA_TIMEOUT,
            what="the session to read the schema without authOptions",
        )
        assert session.refreshes <= 2  # the signal's re-check and its second look, no other
    finally:
        session.stop()
        admin.delete(crd)
        wait_for(lambda: admin.get(crd) is None, timeout=TIMEOUT, what="the CRD gone")
        admin.create(crd)


def test_a_kind_installed_later_is_found_by_the_request_that_needs_it(bare):
    """With Kueue and KubeRay served, re-checks ask no discovery: a workload kind whose CRD
    comes later (KubeRay's RayJob) is found when a request needs it (discovery asked again
    first, at most once per refresh_interval), not by a periodic discovery."""
    admin = bare.admin()
    install(bare, crds(bare))
    [rayjobs] = [
        c
        for c in manifests.kuberay_crds(bare.versions)
        if c["metadata"]["name"] == "rayjobs.ray.io"
    ]
    session = session_of(bare, refresh_interval=2.0)
    try:
        with pytest.raises(NotInstalled):
            session.require(RAYJOB)
        assert session.discoveries == 1  # the request asked discovery again before saying no
        wait_for(lambda: session.refreshes >= 3, timeout=TIMEOUT, what="3 re-checks")
        assert session.discoveries == 1  # ... and the regular re-checks ask none
        admin.create(rayjobs)
        wait_for(lambda: _established(admin, rayjobs), timeout=TIMEOUT, what="RayJob CRD")

        assert (
            wait_for(
                lambda: session.require(RAYJOB), timeout=TIMEOUT, what="RayJobs found by a request"
            )
            == RAY_JOB
        )
        wait_for(lambda: "rayjobs" in session.watched, timeout=TIMEOUT, what="RayJobs watched")
    finally:
        session.stop()
        admin.delete(rayjobs)
        wait_for(lambda: admin.get(rayjobs) is None, timeout=TIMEOUT, what="RayJob CRD gone")


def _established(admin: AdminApi, crd: dict[str, Any]) -> bool:
    served = admin.get(crd) or {}
    conditions = (served.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
