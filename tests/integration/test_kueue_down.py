"""Kueue stopped, caused for real on a second, disposable control plane (etcd and
kube-apiserver only, never the shared test cluster): Kueue's and KubeRay's CRDs are
installed and Kueue's webhook configurations point at a port nothing listens on, which is
what the API server sees while Kueue's controller is down. Its RayCluster webhook has
``failurePolicy: Fail``, so the API server refuses every RayCluster: a submit answers 503
``kueue_webhook_unavailable`` naming the webhook, and nothing is created.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster import manifests
from tests.cluster.bare import BareControlPlane
from tests.cluster.controlplane import free_port
from tests.cluster.fixtures import WorkbenchIdentity
from tests.cluster.kubeapi import AdminApi, wait_for
from tests.integration.clusters_support import call, small_cluster
from tests.integration.workbench_rbac import namespace_rules

pytestmark = pytest.mark.cluster

NAMESPACE = "workbench-ns"
QUEUE = "team"
TIMEOUT = 30.0


@dataclass(frozen=True)
class KueueDown:
    """The disposable control plane with Kueue 'stopped', and a workbench identity on it."""

    admin: AdminApi
    workbench: WorkbenchIdentity
    kueue_version: str


def _established(admin: AdminApi, name: str) -> bool:
    crd = admin.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def kueue_down(cluster, tmp_path_factory) -> Iterator[KueueDown]:
    """``cluster`` first: the shared test bed's binaries are built by then."""
    directory = tmp_path_factory.mktemp("kueue-down")
    plane = BareControlPlane(directory / "control-plane")
    with plane as state:
        admin = plane.admin()
        ca_pem = Path(state.ca_file).read_bytes()
        crds = plane.workbench_crds()
        for crd in crds:
            admin.create(crd)
        for crd in crds:
            name = crd["metadata"]["name"]
            wait_for(lambda n=name: _established(admin, n), timeout=TIMEOUT, what=f"{name}")
        version = "v1beta2" if plane.versions.kueue_serves_v1beta2 else "v1beta1"
        workbench = plane.workbench(directory / "serviceaccount", NAMESPACE)
        _grant(admin, workbench)

        admin.apply(
            {
                "apiVersion": f"kueue.x-k8s.io/{version}",
                "kind": "LocalQueue",
                "metadata": {"name": QUEUE, "namespace": NAMESPACE},
                "spec": {"clusterQueue": "team-cq"},
            }
        )

        # Kueue 'stopped': its webhooks registered, nothing serving them.
        nobody = f"https://127.0.0.1:{free_port()}"
        for configuration in manifests.kueue_webhooks(plane.versions, nobody, ca_pem):
            admin.create(configuration)
        yield KueueDown(admin, workbench, version)


def _grant(admin: AdminApi, workbench: WorkbenchIdentity) -> None:
    """A workbench's namespaced RBAC for ``workbench``."""
    name, rbac = workbench.name, "rbac.authorization.k8s.io"
    metadata = {"name": name, "namespace": workbench.namespace}
    role = {"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": metadata}
    admin.apply({**role, "rules": namespace_rules()})
    binding = {"apiVersion": f"{rbac}/v1", "kind": "RoleBinding", "metadata": metadata}
    binding["roleRef"] = {"apiGroup": rbac, "kind": "Role", "name": name}
    binding["subjects"] = [{"kind": "ServiceAccount", **metadata}]
    admin.apply(binding)


@pytest.fixture
def identity(kueue_down, monkeypatch) -> WorkbenchIdentity:
    """The Jupyter server's identity: the workbench of the 'Kueue stopped' control plane."""
    for key, value in kueue_down.workbench.environ.items():
        monkeypatch.setenv(key, value)
    return kueue_down.workbench


def rayclusters(admin: AdminApi) -> list[dict]:
    return admin.request("GET", f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayclusters")["items"]


async def test_a_submit_while_kueue_is_down_is_503_naming_its_webhook(kueue_down, jp_fetch):
    code, queues = await call(jp_fetch, "GET", "queues")
    assert code == 200, queues
    assert [q["name"] for q in queues["queues"]] == [QUEUE]

    request = small_cluster("blocked", queue=QUEUE)
    code, error = await call(jp_fetch, "POST", "clusters", body=request)

    assert code == 503, error
    assert error["code"] == "kueue_webhook_unavailable"
    assert error["webhook"] == "mraycluster.kb.io"
    assert error["error"].startswith("Kueue's admission webhook mraycluster.kb.io is not answering")
    assert "nothing was created" in error["error"]
    # The API server's own words, and what to do.
    assert 'failed calling webhook "mraycluster.kb.io"' in error["reason"]
    assert "kueue-controller-manager" in error["hint"]
    assert rayclusters(kueue_down.admin) == []

    # The fit check needs no webhook: it still answers from the caches.
    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=request)
    assert code == 200, fit
    assert fit["queue"] == QUEUE
