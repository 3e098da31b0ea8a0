"""What the live benchmarks share: the local control plane, an admin client and the
kueue.x-k8s.io version to write objects in."""

from __future__ import annotations

import os

from kubernetes import client, config

from tests.cluster.controlplane import ClusterState, LocalCluster

GROUP = "kueue.x-k8s.io"


def connect() -> tuple[ClusterState, client.ApiClient, str]:
    """Start (or reuse) the local control plane; its state, an admin client and the Kueue API
    version served (v1beta2 since 0.15, else v1beta1). Sets ``KUBECONFIG`` for the kernel."""
    state = LocalCluster().up()
    os.environ["KUBECONFIG"] = state.kubeconfig
    api = config.new_client_from_config(config_file=state.kubeconfig)
    groups = client.ApisApi(api).get_api_versions().groups
    served = {v.version for g in groups if g.name == GROUP for v in g.versions}
    return state, api, "v1beta2" if "v1beta2" in served else "v1beta1"
