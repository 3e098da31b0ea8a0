"""Fault tests run on a disposable control plane of their own, never on the shared cluster.

Every test under ``tests/integration/faults/`` gets, in place of the shared cluster, ONE
:class:`~tests.cluster.disposable.DisposableCluster` per session (a full control plane in a
temporary directory, kube-apiserver with ``--watch-cache=false`` so that a compacted etcd
answers old watches with 410 Gone). The usual fixtures (``cluster``, ``kube``, ``namespace``,
``kueue``, ``workbench``, the Jupyter server with ``identity``) are the same as elsewhere, on
this cluster. A test that stops or breaks a component must undo it before it ends (the
``faults`` fixture checks every component serves again after each test), so the next test
finds the cluster whole; tests that need the workbench to reach the API server through a
:class:`~tests.cluster.disposable.TcpProxy` ask for ``apiserver_proxy``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from kubernetes import client, config

from tests.cluster.controlplane import ClusterState
from tests.cluster.disposable import COMPONENTS, DisposableCluster, TcpProxy
from tests.cluster.fixtures import WorkbenchIdentity

FAULTS_APISERVER_FLAGS = ("--watch-cache=false",)
"""No watch cache: a watch from a compacted resourceVersion gets 410 Gone from etcd itself."""


@pytest.fixture(scope="session")
def faults_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DisposableCluster]:
    """The disposable control plane of the fault tests, stopped and removed at the end.

    While working on fault tests, ``DW_FAULTS_CLUSTER_DIR=/some/dir`` keeps it there between
    runs (started if needed, reused when healthy, never stopped: remove it with
    ``python -m tests.cluster.disposable down /some/dir``).
    """
    kept = os.environ.get("DW_FAULTS_CLUSTER_DIR")
    directory = Path(kept) if kept else tmp_path_factory.mktemp("faults") / "control-plane"
    plane = DisposableCluster(directory, apiserver_flags=FAULTS_APISERVER_FLAGS)
    plane.up()
    try:
        yield plane
    finally:
        if not kept:
            plane.down()


@pytest.fixture
def faults(faults_cluster: DisposableCluster) -> Iterator[DisposableCluster]:
    """The disposable cluster, for a test that stops or breaks a component; after the test,
    every component it may have stopped is checked to serve again (started if not). Ask for
    it last, so it is undone before the other fixtures' clean-up needs the API server."""
    yield faults_cluster
    state = faults_cluster.running
    for name in COMPONENTS:
        if not faults_cluster.is_component_running(name):
            faults_cluster.start_component(name)
    assert faults_cluster.is_healthy(state), "the fault test left the disposable cluster broken"


@pytest.fixture(scope="session")
def cluster(faults_cluster: DisposableCluster) -> ClusterState:
    """The disposable cluster in place of the shared one."""
    return faults_cluster.running


@pytest.fixture(scope="session")
def kube(cluster: ClusterState) -> client.ApiClient:
    """An admin API client of the disposable cluster."""
    return config.new_client_from_config(config_file=cluster.kubeconfig)


@pytest.fixture(scope="session")
def kueue_api_version(kube: client.ApiClient) -> str:
    """The disposable cluster runs the current Kueue: v1beta2."""
    return "v1beta2"


@pytest.fixture
def apiserver_proxy(cluster: ClusterState) -> Iterator[TcpProxy]:
    """A TCP proxy in front of the disposable API server; the workbench goes through it."""
    port = int(cluster.apiserver.rpartition(":")[2])
    with TcpProxy(port) as proxy:
        yield proxy


@pytest.fixture
def identity(workbench, rules, cluster_rules, monkeypatch, request) -> WorkbenchIdentity:
    """The workbench as a pod sees it; through ``apiserver_proxy`` when the test uses it."""
    wb = workbench(rules=rules, cluster_rules=cluster_rules)
    if "apiserver_proxy" in request.fixturenames:
        wb = replace(wb, port=str(request.getfixturevalue("apiserver_proxy").port))
    for key, value in wb.environ.items():
        monkeypatch.setenv(key, value)
    return wb
