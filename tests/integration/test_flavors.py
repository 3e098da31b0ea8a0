"""Heterogeneous flavors on the real control plane: a tainted GPU flavor listed first and an
untainted CPU flavor. For specs with and without the toleration, the fit verdict's flavors
are the ones Kueue assigns when the cluster is submitted; with no usable flavor the verdict
is never-fits, naming the taint, and Kueue keeps the cluster pending for that same reason."""

from __future__ import annotations

import pytest
from kubernetes import client

import jupyter_dw as dw
from tests.cluster.fixtures import watch_until
from tests.integration.clusters_support import KUEUE
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster

TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
SMALL = {"workers": 1, "head_cpu": "1", "head_memory": "1Gi", "worker_cpu": "1",
         "worker_memory": "1Gi"}  # fmt: skip


def default_queue(kueue, flavors: dict[str, dict[str, str]]) -> None:
    cq = kueue.cluster_queue("mixed", flavors)
    kueue.wait_active("clusterqueues", cq)
    lq = kueue.local_queue("team", cq, annotations={f"{KUEUE}/default-queue": "true"})
    kueue.wait_active("localqueues", lq)


def assigned(kube, kueue, name: str) -> dict[str, dict[str, str]]:
    """PodSet -> resource -> flavor, as Kueue admitted the cluster's Workload."""
    custom = client.CustomObjectsApi(kube)
    raycluster = custom.get_namespaced_custom_object(
        "ray.io", "v1", kueue.namespace, "rayclusters", name
    )

    def admitted(workload: dict) -> bool:
        return bool((workload.get("status") or {}).get("admission"))

    workload = watch_until(
        custom.list_namespaced_custom_object, admitted,
        group=KUEUE, version=kueue.api_version, namespace=kueue.namespace, plural="workloads",
        label_selector=f"{KUEUE}/job-uid={raycluster['metadata']['uid']}", what=f"{name} admitted",
    )  # fmt: skip
    return {
        ps["name"]: dict(ps["flavors"])
        for ps in workload["status"]["admission"]["podSetAssignments"]
    }


@pytest.mark.parametrize("tolerate", [False, True])
def test_the_verdicts_flavors_are_the_ones_kueue_assigns(kernel, kueue, kube, tolerate):
    gpu = kueue.flavor("gpu", node_taints=[TAINT])
    cpu = kueue.flavor("cpu")
    default_queue(kueue, {gpu: {"cpu": "8", "memory": "32Gi"}, cpu: {"cpu": "8", "memory": "32Gi"}})
    extra = {"tolerations": ["nvidia.com/gpu:NoSchedule"]} if tolerate else {}
    verdict = dw.fit(name="placed", **SMALL, **extra)
    assert verdict.verdict == "fits-now", verdict.message
    expected = gpu if tolerate else cpu
    assert verdict.flavors == {"cpu": expected, "memory": expected}
    dw.submit(name="placed", **SMALL, **extra)
    assert assigned(kube, kueue, "placed") == verdict.assignment
    assert {f for pod_set in verdict.assignment.values() for f in pod_set.values()} == {expected}


def test_no_usable_flavor_never_fits_and_kueue_says_the_same(kernel, kueue):
    gpu = kueue.flavor("gpu", node_taints=[TAINT])
    default_queue(kueue, {gpu: {"cpu": "8", "memory": "32Gi"}})
    verdict = dw.fit(name="refused", **SMALL)
    assert verdict.verdict == "never-fits"
    taint = f"untolerated taint nvidia.com/gpu=present:NoSchedule in flavor {gpu}"
    assert taint in verdict.message and "pod set head" in verdict.message
    assert verdict.suggestion is None
    h = dw.submit(name="refused", **SMALL)
    queued = h.wait("queued", timeout=90, condition=lambda info: bool(info.message))
    # Kueue's words for the same: the pod set, "untolerated taint" and the flavor.
    for words in ("pod set head", "untolerated taint", f"in flavor {gpu}"):
        assert words in (queued.message or ""), queued.message
