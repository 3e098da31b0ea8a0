"""MultiKueue tests run on a bed of their own (:class:`~tests.cluster.multikueue.MultiKueueBed`):
a manager control plane whose Kueue dispatches to a worker control plane, never the shared
cluster.

The usual fixtures (``cluster``, ``kube``, ``namespace``, ``kueue``, ``workbench``, the Jupyter
server with ``identity``) are the manager's, as a workbench in the manager cluster sees it;
``namespace`` exists on the worker too (MultiKueue creates a dispatched job in the namespace of
its name). ``mk_queue`` is LocalQueue ``team`` of that namespace on both planes, the manager's
ClusterQueue carrying the MultiKueue check. ``DW_MK_CLUSTER_DIR=/some/dir`` keeps the bed
between runs (see :func:`~tests.cluster.multikueue.kept_or_temporary`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client
from tornado.httpclient import HTTPResponse

from tests.cluster.controlplane import ClusterState
from tests.cluster.multikueue import MirroredQueue, MultiKueueBed, kept_or_temporary

WORKER = "worker-1"
"""The bed's one worker cluster (its MultiKueueCluster's name)."""


@pytest.fixture(scope="package")
def mk_bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MultiKueueBed]:
    """The manager and worker planes, connected: started for this directory's tests and
    stopped when they are done (package scope), so their two planes do not run beside the
    rest of a ``make test`` session."""
    yield from kept_or_temporary(lambda: tmp_path_factory.mktemp("multikueue") / "bed")


@pytest.fixture(scope="package")
def cluster(mk_bed: MultiKueueBed) -> ClusterState:
    """The manager plane in place of the shared cluster."""
    return mk_bed.manager.running


@pytest.fixture(scope="package")
def kube(mk_bed: MultiKueueBed) -> client.ApiClient:
    """An admin API client of the manager."""
    return mk_bed.manager.kube()


@pytest.fixture(scope="package")
def worker_kube(mk_bed: MultiKueueBed) -> client.ApiClient:
    """An admin API client of the worker."""
    return mk_bed.workers[WORKER].kube()


@pytest.fixture(scope="package")
def kueue_api_version(mk_bed: MultiKueueBed) -> str:
    return mk_bed.api_version


@pytest.fixture
def namespace(mk_bed: MultiKueueBed) -> Iterator[str]:
    """A fresh namespace on the manager and the worker, deleted (without waiting) after."""
    name = f"mk-{uuid.uuid4().hex[:8]}"
    mk_bed.mirror_namespace(name)
    yield name
    mk_bed.remove_namespace(name)


@pytest.fixture
def enter_dashboard(http_server_client, jp_base_url, jp_auth_header):
    """``await enter_dashboard(name)``: the dashboard proxy's entry route for cluster ``name``
    (a capability's redirect, or the refusal), Jupyter-token authenticated, not followed."""

    async def fetch(name: str) -> HTTPResponse:
        return await http_server_client.fetch(
            f"{jp_base_url}dw/ray/{name}/",
            headers=jp_auth_header,
            follow_redirects=False,
            raise_error=False,
        )

    return fetch


@pytest.fixture
def mk_queue(mk_bed: MultiKueueBed, namespace: str) -> Iterator[MirroredQueue]:
    """LocalQueue ``team`` on both planes: 8 CPUs on the manager (with the MultiKueue check),
    4 on the worker."""
    queue = mk_bed.mirrored_queue(namespace, manager_cpu="8", worker_cpu="4")
    yield queue
    mk_bed.remove_queue(queue)
