"""A bare, disposable control plane: etcd and kube-apiserver only, in a temporary directory.

No Kueue, no KubeRay, no controllers: what a cluster looks like before an administrator
installs them. Tests that need that (the doctor's "Kueue is not installed", a session that
sees Kueue and KubeRay arrive later) use this one and never disturb the shared cluster of
:class:`~tests.cluster.controlplane.LocalCluster`. Same binaries, certificates, free ports,
etcd and kube-apiserver flags (``LocalCluster._start_etcd_and_apiserver``) and stop-by-PID as
the shared cluster; the processes run with the temporary directory as
their working directory, which is how :meth:`down` recognises them.
"""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path
from typing import Any

from . import manifests
from .controlplane import ClusterPki, ClusterState, LocalCluster, _log
from .fixtures import WorkbenchIdentity, mount_service_account
from .kubeapi import AdminApi

WORKBENCH_CRDS = frozenset(
    {"localqueues.kueue.x-k8s.io", "workloads.kueue.x-k8s.io", "rayclusters.ray.io"}
)


class BareControlPlane(LocalCluster):
    """``with BareControlPlane(tmp_dir) as state:`` etcd + kube-apiserver, stopped after."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__(state_dir=state_dir)

    def build(self) -> None:
        """Nothing to build: the shared test bed's kube-apiserver must exist already."""
        binary = self.versions.binary("kube-apiserver")
        if not binary.is_file():
            raise RuntimeError(f"{binary} is missing: run `make cluster-build` first")

    def __enter__(self) -> ClusterState:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    def workbench_crds(self) -> list[dict[str, Any]]:
        """Kueue's LocalQueue and Workload CRDs and KubeRay's RayCluster CRD (what a workbench
        reads and writes), without Kueue's conversion webhook (nothing here runs Kueue;
        objects are stored as they are written)."""
        state = self.state()
        assert state is not None, "not started"
        ca_pem = Path(state.ca_file).read_bytes()
        found = []
        for crd in [
            *manifests.kueue_crds(self.versions, "https://127.0.0.1:1", ca_pem),
            *manifests.kuberay_crds(self.versions),
        ]:
            if crd["metadata"]["name"] in WORKBENCH_CRDS:
                crd = copy.deepcopy(crd)
                crd["spec"].pop("conversion", None)
                found.append(crd)
        assert len(found) == len(WORKBENCH_CRDS)
        return found

    def workbench(
        self, sa_dir: Path, namespace: str = "workbench-ns", name: str = "workbench"
    ) -> WorkbenchIdentity:
        """A ServiceAccount of this control plane (with its namespace; RBAC is the caller's),
        its TokenRequest token mounted into ``sa_dir`` as a workbench pod sees it."""
        admin, state = self.admin(), self.state()
        assert state is not None, "not started"
        admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        admin.apply(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace},
            }
        )
        token = admin.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
            content_type="application/json",
        )["status"]["token"]
        return mount_service_account(state, namespace, name, token, sa_dir)

    def admin(self) -> AdminApi:
        """An admin client of this control plane."""
        state = self.state()
        assert state is not None, "not started"
        return AdminApi(state.kubeconfig)

    def _start_processes(
        self,
        state: ClusterState,
        pki: ClusterPki,
    ) -> None:
        started = time.monotonic()
        self._start_etcd_and_apiserver(state, pki)
        _log(f"bare control plane ready after {time.monotonic() - started:.1f}s")


if __name__ == "__main__":  # python -m tests.cluster.bare DIR: start one, Enter stops it
    with BareControlPlane(Path(sys.argv[1])) as running:
        print(f"export KUBECONFIG={running.kubeconfig}")
        input("running; press Enter to stop ")
