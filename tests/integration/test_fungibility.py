"""flavorFungibility on the real control plane: a ClusterQueue in a cohort whose first flavor
has no quota of its own (everything there is borrowed from the other member) and whose second
has. With the default policy Kueue stops at the first flavor, borrowing; with
``whenCanBorrow: TryNextFlavor`` it goes on to the flavor that fits without borrowing. The fit
verdict names the flavor Kueue then assigns, in both cases."""

from __future__ import annotations

import pytest

import jupyter_dw as dw
from tests.integration.clusters_support import KUEUE
from tests.integration.test_flavors import assigned
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster

SMALL = {"workers": 1, "head_cpu": "1", "head_memory": "1Gi", "worker_cpu": "1",
         "worker_memory": "1Gi"}  # fmt: skip


@pytest.mark.parametrize("when_can_borrow", [None, "TryNextFlavor"])
def test_the_flavor_named_is_the_one_kueue_assigns(kernel, kueue, kube, when_can_borrow):
    spot, reserved = kueue.flavor("spot"), kueue.flavor("reserved")
    lender = kueue.cluster_queue("lender", {spot: {"cpu": "8", "memory": "16Gi"}}, cohort="pool")
    fungibility = (
        {"flavorFungibility": {"whenCanBorrow": when_can_borrow}} if when_can_borrow else {}
    )
    team = kueue.cluster_queue(
        "team",
        {spot: {"cpu": "0", "memory": "0"}, reserved: {"cpu": "4", "memory": "8Gi"}},
        cohort="pool",
        **fungibility,
    )
    for cq in (lender, team):
        kueue.wait_active("clusterqueues", cq)
    lq = kueue.local_queue("team", team, annotations={f"{KUEUE}/default-queue": "true"})
    kueue.wait_active("localqueues", lq)

    verdict = dw.fit(name="fungible", **SMALL)
    assert verdict.verdict == "fits-now", verdict.message
    expected = reserved if when_can_borrow else spot
    assert verdict.flavors == {"cpu": expected, "memory": expected}, verdict.message
    dw.submit(name="fungible", **SMALL)
    assert assigned(kube, kueue, "fungible") == verdict.assignment
