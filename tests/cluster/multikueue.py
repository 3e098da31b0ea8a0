"""A MultiKueue test bed: a manager control plane whose Kueue dispatches workloads to worker
control planes, every process on 127.0.0.1.

Each plane is a :class:`~tests.cluster.disposable.DisposableCluster` of its own (etcd,
kube-apiserver, controller manager, scheduler, Kueue, KubeRay, KWOK, metrics-server) in a
directory of the bed. The manager's Kueue reaches each worker as Kueue's "Setup a MultiKueue
environment" page says: a ``MultiKueueCluster`` per worker reading a kubeconfig from a Secret in
Kueue's namespace (the worker's admin kubeconfig: server ``https://127.0.0.1:PORT``, its CA and
client certificate embedded as data, which Kueue's kubeconfig validation accepts), one
``MultiKueueConfig`` listing them and one ``AdmissionCheck`` (controller
``kueue.x-k8s.io/multikueue``) a manager ClusterQueue names. :meth:`MultiKueueBed.mirrored_queue`
makes a namespace and a LocalQueue of the same names on every plane, as the page asks.

The manager's KubeRay operator runs too: KubeRay 1.6.2 skips a RayCluster or RayJob whose
``spec.managedBy`` is ``kueue.x-k8s.io/multikueue`` (Kueue's webhook sets it on a job whose
LocalQueue leads to a ClusterQueue with a MultiKueue check), so nothing of it runs on the
manager: the worker's KubeRay and KWOK run it, and the manager's Kueue copies the worker's job
status back.

Neither plane runs Kubeflow Trainer or JobSet (nothing here dispatches TrainJobs). A Kueue
0.14.8 bed (``DW_KUEUE_VERSION=legacy``) runs its planes without Kueue's visibility server:
0.14 binds it on a fixed port, 8082 (on 127.0.0.1: see build.sh), which only one Kueue on the
machine can hold (the shared legacy cluster's); the pending-workloads API is then absent there,
as on a cluster whose administrator turned ``VisibilityOnDemand`` off.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import yaml
from kubernetes import client, config

from . import controlplane, manifests
from .controlplane import ClusterPki, ClusterState, _log
from .disposable import DisposableCluster
from .fixtures import KueueObjects, condition, watch_until
from .kubeapi import AdminApi
from .versions import Versions

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
"""The controller name of Kueue's MultiKueue admission check (and a dispatched job's
``spec.managedBy``)."""
ADMISSION_CHECK = "dispatch-to-workers"
"""The manager's MultiKueue AdmissionCheck."""
MULTIKUEUE_CONFIG = "workers"
"""The manager's MultiKueueConfig: every worker of the bed."""
KUBECONFIG_SECRET_KEY = "kubeconfig"
"""The key of a worker's kubeconfig in its Secret (Kueue's ``MultiKueueConfigSecretKey``)."""
VISIBILITY_APISERVICE = "v1beta1.visibility.kueue.x-k8s.io"


@dataclass(frozen=True)
class BedVersions(Versions):
    """The pinned versions, without Kubeflow Trainer and JobSet."""

    @property
    def trainjobs(self) -> bool:
        return False


class MultiKueuePlane(DisposableCluster):
    """One plane of the bed at ``versions`` (the manager or a worker)."""

    def __init__(self, state_dir: Path, versions: BedVersions) -> None:
        super().__init__(state_dir)
        self.versions = versions

    @property
    def serves_visibility(self) -> bool:
        """Whether this plane's Kueue runs its visibility server (not a 0.14 Kueue: see the
        module's docstring)."""
        return self.versions.kueue_serves_v1beta2

    def write_kueue_config(self, state: ClusterState) -> Path:
        path = super().write_kueue_config(state)
        if not self.serves_visibility:
            kueue_config = yaml.safe_load(path.read_text())
            kueue_config.setdefault("featureGates", {})["VisibilityOnDemand"] = False
            path.write_text(yaml.safe_dump(kueue_config))
        return path

    def _start_processes(self, state: ClusterState, pki: ClusterPki) -> None:
        if self.serves_visibility:
            super()._start_processes(state, pki)
            return
        # The shared start-up waits for the visibility APIService to be Available; without a
        # visibility server it never is: skip that wait, then remove the APIService (an
        # unavailable one makes every client's discovery report an error).
        with mock.patch.object(controlplane, "_wait_visibility_api", lambda api, versions: None):
            super()._start_processes(state, pki)
        AdminApi(state.kubeconfig).delete(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": VISIBILITY_APISERVICE},
            }
        )

    def kube(self) -> client.ApiClient:
        """An admin API client (the kubernetes package's) of this plane."""
        return config.new_client_from_config(config_file=self.running.kubeconfig)

    @property
    def api_version(self) -> str:
        """The kueue.x-k8s.io version this plane's objects are written in."""
        return "v1beta2" if self.versions.kueue_serves_v1beta2 else "v1beta1"


@dataclass(frozen=True)
class MirroredQueue:
    """A LocalQueue of one name in a namespace of one name on every plane of the bed."""

    namespace: str
    local_queue: str
    manager_cluster_queue: str
    worker_cluster_queues: dict[str, str]


class MultiKueueBed:
    """``with MultiKueueBed(tmp_dir) as bed:`` a manager and its workers, connected, stopped
    and removed after. ``workers`` names the worker clusters (the MultiKueueClusters' names)."""

    def __init__(
        self, state_dir: Path, *, workers: tuple[str, ...] = ("worker-1",), kueue: str | None = None
    ) -> None:
        versions = BedVersions.selected(kueue)
        self.state_dir = state_dir
        self.manager = MultiKueuePlane(state_dir / "manager", versions)
        self.workers = {name: MultiKueuePlane(state_dir / name, versions) for name in workers}
        self.started_seconds = 0.0
        """How long :meth:`up` took (starting or reusing the planes, connecting them)."""

    @property
    def api_version(self) -> str:
        return self.manager.api_version

    @property
    def planes(self) -> list[MultiKueuePlane]:
        return [*self.workers.values(), self.manager]

    def __enter__(self) -> MultiKueueBed:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def up(self) -> MultiKueueBed:
        """Start every plane (or reuse those running healthy with this test bed's code), one
        after the other (two cores), then connect the manager to the workers and wait until
        Kueue marks each MultiKueueCluster and the check Active."""
        started = time.monotonic()
        for plane in self.planes:
            plane.up()
        self.connect()
        self.started_seconds = round(time.monotonic() - started, 1)
        _log(f"MultiKueue bed ready in {self.started_seconds}s ({self.state_dir})")
        return self

    def down(self) -> None:
        """Stop every plane (the manager first: its Kueue stops calling the workers)."""
        for plane in reversed(self.planes):
            plane.down()

    # -- the manager's MultiKueue objects --------------------------------------------------

    def connect(self) -> None:
        """The manager's Secrets, MultiKueueClusters, MultiKueueConfig and AdmissionCheck
        (applied: idempotent on a reused bed), once Kueue says each is Active."""
        admin, group = self.manager.admin(), f"kueue.x-k8s.io/{self.api_version}"
        for name, worker in self.workers.items():
            admin.apply(_kubeconfig_secret(name, Path(worker.running.kubeconfig).read_text()))
            admin.apply(_multikueue_cluster(group, self.api_version, name))
        admin.apply(
            {
                "apiVersion": group,
                "kind": "MultiKueueConfig",
                "metadata": {"name": MULTIKUEUE_CONFIG},
                "spec": {"clusters": list(self.workers)},
            }
        )
        admin.apply(
            {
                "apiVersion": group,
                "kind": "AdmissionCheck",
                "metadata": {"name": ADMISSION_CHECK},
                "spec": {
                    "controllerName": MULTIKUEUE_CONTROLLER,
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "MultiKueueConfig",
                        "name": MULTIKUEUE_CONFIG,
                    },
                },
            }
        )
        for name in self.workers:
            self.wait_active("multikueueclusters", name)
        self.wait_active("admissionchecks", ADMISSION_CHECK)

    def wait_active(self, plural: str, name: str) -> dict[str, Any]:
        """Wait until the manager's Kueue marks a cluster-scoped object of its Active."""
        custom = client.CustomObjectsApi(self.manager.kube())
        return watch_until(
            lambda **kw: custom.list_cluster_custom_object(
                "kueue.x-k8s.io", self.api_version, plural, **kw
            ),
            lambda obj: (condition(obj, "Active") or {}).get("status") == "True",
            what=f"{plural}/{name} Active on the manager",
            field_selector=f"metadata.name={name}",
        )

    # -- per test: mirrored namespaces and queues ------------------------------------------

    def mirror_namespace(self, namespace: str) -> None:
        """Namespace ``namespace`` on every plane (MultiKueue creates a dispatched job in the
        namespace of its name on the worker)."""
        for plane in self.planes:
            client.CoreV1Api(plane.kube()).create_namespace(
                client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace))
            )

    def remove_namespace(self, namespace: str) -> None:
        """Delete ``namespace`` on every plane, without waiting."""
        for plane in self.planes:
            client.CoreV1Api(plane.kube()).delete_namespace(
                namespace, propagation_policy="Background"
            )

    def mirrored_queue(
        self,
        namespace: str,
        *,
        local_queue: str = "team",
        manager_cpu: str = "8",
        worker_cpu: str | dict[str, str] = "8",
        memory: str = "32Gi",
    ) -> MirroredQueue:
        """LocalQueue ``local_queue`` in ``namespace`` (see :meth:`mirror_namespace`) on every
        plane: on the manager towards a ClusterQueue with the MultiKueue check and
        ``manager_cpu`` CPUs; on each worker towards a plain ClusterQueue with ``worker_cpu``
        (one value, or one per worker) CPUs. Cluster-scoped objects are named after the
        namespace; :meth:`remove_queue` deletes them."""
        manager_queue = ""
        workers: dict[str, str] = {}
        for plane_name, plane in [("manager", self.manager), *self.workers.items()]:
            kueue = self._objects(plane, namespace)
            flavor = kueue.flavor("default")
            if plane is self.manager:
                cpu, checks = (
                    manager_cpu,
                    {"admissionChecksStrategy": {"admissionChecks": [{"name": ADMISSION_CHECK}]}},
                )
            else:
                cpu = worker_cpu if isinstance(worker_cpu, str) else worker_cpu[plane_name]
                checks = {}
            cluster_queue = kueue.cluster_queue(
                "queue", {flavor: {"cpu": cpu, "memory": memory}}, **checks
            )
            kueue.local_queue(local_queue, cluster_queue)
            kueue.wait_active("localqueues", local_queue)
            if plane is self.manager:
                manager_queue = cluster_queue
            else:
                workers[plane_name] = cluster_queue
        return MirroredQueue(namespace, local_queue, manager_queue, workers)

    def remove_queue(self, queue: MirroredQueue) -> None:
        """Delete the ClusterQueues and flavors :meth:`mirrored_queue` made."""
        for plane in self.planes:
            kueue = self._objects(plane, queue.namespace)
            kueue.created = [
                ("resourceflavors", f"{queue.namespace}-default"),
                ("clusterqueues", f"{queue.namespace}-queue"),
            ]
            kueue.cleanup()

    def _objects(self, plane: MultiKueuePlane, namespace: str) -> KueueObjects:
        return KueueObjects(plane.kube(), plane.api_version, namespace, prefix=namespace)


def _kubeconfig_secret(worker: str, kubeconfig: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{worker}-kubeconfig", "namespace": manifests.KUEUE_NAMESPACE},
        "stringData": {KUBECONFIG_SECRET_KEY: kubeconfig},
    }


def _multikueue_cluster(group: str, api_version: str, worker: str) -> dict[str, Any]:
    """A MultiKueueCluster reading ``worker``'s kubeconfig Secret (v1beta2 moved the reference
    under ``clusterSource``)."""
    kubeconfig = {"locationType": "Secret", "location": f"{worker}-kubeconfig"}
    spec = (
        {"clusterSource": {"kubeConfig": kubeconfig}}
        if api_version == "v1beta2"
        else {"kubeConfig": kubeconfig}
    )
    return {
        "apiVersion": group,
        "kind": "MultiKueueCluster",
        "metadata": {"name": worker},
        "spec": spec,
    }


def kept_or_temporary(
    make_temporary: Callable[[], Path], environment_variable: str = "DW_MK_CLUSTER_DIR"
) -> Iterator[MultiKueueBed]:
    """The bed of a test session: in ``$DW_MK_CLUSTER_DIR`` when set (started if needed, reused
    when healthy, never stopped: ``python -m tests.cluster.multikueue down DIR`` removes it),
    else in a temporary directory, stopped at the end."""
    kept = os.environ.get(environment_variable)
    bed = MultiKueueBed(Path(kept) if kept else make_temporary())
    bed.up()
    try:
        yield bed
    finally:
        if not kept:
            bed.down()


if __name__ == "__main__":  # python -m tests.cluster.multikueue up|down DIR
    action, where = sys.argv[1], Path(sys.argv[2])
    bed = MultiKueueBed(where)
    if action == "up":
        bed.up()
        print(f"manager: export KUBECONFIG={bed.manager.running.kubeconfig}")
        for worker_name, plane in bed.workers.items():
            print(f"{worker_name}: export KUBECONFIG={plane.running.kubeconfig}")
    else:
        bed.down()
