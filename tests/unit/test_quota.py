"""Headroom arithmetic (Kueue's available/potentialAvailable) and LocalQueue summaries.

Every expected number is worked out by hand in the comments with Kueue's formulas:
  localQuota(n)    = max(0, SubtreeQuota(n) - lendingLimit(n)) if a lending limit is set, else 0
  SubtreeQuota(c)  = own nominal + sum(SubtreeQuota(child) - localQuota(child))
  Usage(c)         = sum(max(0, Usage(child) - localQuota(child)))
  available(root)  = SubtreeQuota - Usage
  available(n)     = max(0, localQuota - Usage) + min(available(parent),
                       SubtreeQuota - localQuota - max(0, Usage - localQuota) + borrowingLimit)
  headroom         = max(0, available(cq))
"""

from decimal import Decimal

import pytest

from jupyter_dw.domain.kueue_model import (
    DEFAULT_QUEUE_ANNOTATION,
    ClusterQueueQuota,
    CohortQuota,
    LocalQueueInfo,
)
from jupyter_dw.domain.quota import (
    HIDDEN_QUOTA_HINT,
    QuotaTree,
    format_amount,
    kueue_amount,
    queue_summaries,
)

GI = 2**30
D = Decimal


# -- builders -------------------------------------------------------------------------------

Quota = tuple  # (nominal, borrowingLimit | None, lendingLimit | None)


def _resource_groups(quotas: dict[tuple[str, str], Quota]) -> list[dict]:
    """One resource group covering every resource, one entry per flavor."""
    resources = list(dict.fromkeys(r for _, r in quotas))
    flavors = list(dict.fromkeys(f for f, _ in quotas))
    out = []
    for flavor in flavors:
        entries = []
        for resource in resources:
            nominal, borrowing, lending = quotas[(flavor, resource)]
            entry = {"name": resource, "nominalQuota": nominal}
            if borrowing is not None:
                entry["borrowingLimit"] = borrowing
            if lending is not None:
                entry["lendingLimit"] = lending
            entries.append(entry)
        out.append({"name": flavor, "resources": entries})
    return [{"coveredResources": resources, "flavors": out}]


def _flavor_amounts(amounts: dict[tuple[str, str], str], nominal: dict | None = None) -> list:
    by_flavor: dict[str, list] = {}
    for (flavor, resource), total in amounts.items():
        entry = {"name": resource, "total": total}
        if nominal is not None:
            entry["borrowed"] = "0"
        by_flavor.setdefault(flavor, []).append(entry)
    return [{"name": f, "resources": r} for f, r in by_flavor.items()]


def cq_obj(
    name: str,
    quotas: dict[tuple[str, str], Quota],
    *,
    cohort: str | None = None,
    reserved: dict[tuple[str, str], str] | None = None,
    used: dict[tuple[str, str], str] | None = None,
    borrowed: dict[tuple[str, str], str] | None = None,
    version: str = "v1beta2",
    stop_policy: str | None = None,
) -> dict:
    spec: dict = {"namespaceSelector": {}, "resourceGroups": _resource_groups(quotas)}
    if cohort:
        spec["cohort" if version == "v1beta1" else "cohortName"] = cohort
    if stop_policy:
        spec["stopPolicy"] = stop_policy
    obj: dict = {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }
    if reserved is not None:
        reservation = _flavor_amounts(reserved)
        for flavor in reservation:
            for res in flavor["resources"]:
                res["borrowed"] = (borrowed or {}).get((flavor["name"], res["name"]), "0")
        obj["status"] = {
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}],
            "flavorsReservation": reservation,
            "flavorsUsage": _flavor_amounts(used or reserved),
        }
    return obj


def cq(name: str, quotas: dict, **kwargs) -> ClusterQueueQuota:
    return ClusterQueueQuota.from_object(cq_obj(name, quotas, **kwargs))


def cohort_obj(
    name: str,
    quotas: dict[tuple[str, str], Quota] | None = None,
    parent: str | None = None,
    version: str = "v1beta2",
) -> dict:
    spec: dict = {}
    if parent:
        spec["parentName"] = parent
    if quotas:
        spec["resourceGroups"] = _resource_groups(quotas)
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Cohort",
        "metadata": {"name": name},
        "spec": spec,
    }


def cohort(name: str, quotas: dict | None = None, parent: str | None = None) -> CohortQuota:
    return CohortQuota.from_object(cohort_obj(name, quotas, parent))


def lq_obj(
    name: str,
    cluster_queue: str,
    *,
    namespace: str = "team-a",
    reserved: dict[tuple[str, str], str] | None = None,
    used: dict[tuple[str, str], str] | None = None,
    annotated: bool = False,
    version: str = "v1beta2",
    status: bool = True,
) -> dict:
    obj: dict = {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }
    if annotated:
        obj["metadata"]["annotations"] = {DEFAULT_QUEUE_ANNOTATION: "true"}
    if status:
        obj["status"] = {
            "pendingWorkloads": 1,
            "reservingWorkloads": 2,
            "admittedWorkloads": 2,
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}],
            "flavorsReservation": _flavor_amounts(reserved or {}),
            ("flavorUsage" if version == "v1beta1" else "flavorsUsage"): _flavor_amounts(
                used or reserved or {}
            ),
        }
    return obj


def lq(name: str, cluster_queue: str, **kwargs) -> LocalQueueInfo:
    return LocalQueueInfo.from_object(lq_obj(name, cluster_queue, **kwargs))


CPU = ("default-flavor", "cpu")
MEM = ("default-flavor", "memory")


# -- units ----------------------------------------------------------------------------------


def test_kueue_amount_rounds_up_like_kueue():
    # Kueue keeps cpu in millicores and everything else in whole units, rounding up.
    assert kueue_amount("cpu", D("1.0001")) == D("1.001")
    assert kueue_amount("cpu", D("0.5")) == D("0.5")
    assert kueue_amount("nvidia.com/gpu", D("0.5")) == D(1)
    assert kueue_amount("memory", D("1.5")) == D(2)


def test_format_amount_uses_binary_only_for_byte_resources():
    assert format_amount("memory", D(16 * GI)) == "16Gi"
    assert format_amount("hugepages-2Mi", D(4 * 2**20)) == "4Mi"
    assert format_amount("cpu", D(2048)) == "2048"  # not "2Ki"
    assert format_amount("cpu", D("0.25")) == "250m"
    assert format_amount("cpu", None) is None


# -- no cohort -------------------------------------------------------------------------------


def test_headroom_without_cohort_is_nominal_minus_reserved():
    tree = QuotaTree(
        [
            cq(
                "solo",
                {CPU: (9, None, None), MEM: ("36Gi", None, None)},
                reserved={CPU: "2500m", MEM: "10Gi"},
                used={CPU: "1", MEM: "4Gi"},
            )
        ]
    )
    # cpu: 9 - 2.5 = 6.5; memory: 36Gi - 10Gi = 26Gi. No cohort: max = nominal.
    assert tree.headroom("solo", *CPU) == D("6.5")
    assert tree.headroom("solo", *MEM) == D(26 * GI)
    assert tree.max_obtainable("solo", *CPU) == D(9)
    cpu_row, mem_row = tree.rows("solo")
    assert (cpu_row.reserved, cpu_row.used, cpu_row.borrowed) == (D("2.5"), D(1), D(0))
    assert (mem_row.flavor, mem_row.resource, mem_row.nominal) == (*MEM, D(36 * GI))


def test_reservation_not_usage_limits_headroom():
    # Reserved (QuotaReserved, not yet Admitted) workloads already hold quota in Kueue.
    tree = QuotaTree([cq("solo", {CPU: (4, None, None)}, reserved={CPU: "3"}, used={CPU: "1"})])
    # 4 - 3 (reserved) = 1, not 4 - 1 (used) = 3.
    assert tree.headroom("solo", *CPU) == D(1)


def test_overadmitted_queue_has_zero_headroom():
    # Quota lowered below what is reserved: Kueue's available is 4 - 6 = -2, Available = 0.
    tree = QuotaTree([cq("solo", {CPU: (4, None, None)}, reserved={CPU: "6"})])
    assert tree.headroom("solo", *CPU) == D(0)


def test_flavor_resource_not_in_quota_has_zero_headroom():
    tree = QuotaTree([cq("solo", {CPU: (4, None, None)})])
    assert tree.headroom("solo", "other-flavor", "cpu") == D(0)
    assert tree.max_obtainable("solo", "default-flavor", "nvidia.com/gpu") == D(0)


def test_fractional_quota_is_rounded_as_kueue_rounds_it():
    tree = QuotaTree(
        [
            cq(
                "solo",
                {
                    ("f", "cpu"): ("1.0005", None, None),
                    ("f", "nvidia.com/gpu"): ("0.5", None, None),
                },
                reserved={("f", "cpu"): "500m", ("f", "nvidia.com/gpu"): "0"},
            )
        ]
    )
    # cpu nominal 1.0005 -> 1001m (rounded up to a millicore); 1001m - 500m = 501m.
    assert tree.headroom("solo", "f", "cpu") == D("0.501")
    # GPU nominal 0.5 -> 1 (rounded up to a unit).
    assert tree.headroom("solo", "f", "nvidia.com/gpu") == D(1)


def test_fresh_cluster_queue_without_status_has_full_headroom():
    tree = QuotaTree([cq("fresh", {CPU: (9, None, None), MEM: ("36Gi", None, None)})])
    assert tree.headroom("fresh", *CPU) == D(9)
    assert tree.headroom("fresh", *MEM) == D(36 * GI)
    assert all(row.reserved == 0 and row.used == 0 for row in tree.rows("fresh"))


# -- flat cohorts ----------------------------------------------------------------------------


def test_two_queues_in_a_cohort_one_borrowing():
    tree = QuotaTree(
        [
            cq("a", {CPU: (10, None, None)}, cohort="pool", reserved={CPU: "1"}),
            cq(
                "b", {CPU: (6, None, None)}, cohort="pool", reserved={CPU: "8"}, borrowed={CPU: "2"}
            ),
        ]
    )
    # Cohort "pool" (implicit): SubtreeQuota = 10 + 6 = 16, Usage = 1 + 8 = 9.
    # a: localQuota 0 -> available = 0 + (16 - 9) = 7. (a's own 9 unused includes 2 lent to b;
    #    getting them back needs preemption, so Kueue admits at most 7 now.)
    assert tree.headroom("a", *CPU) == D(7)
    # b: the same cohort pool: 7.
    assert tree.headroom("b", *CPU) == D(7)
    # With the cohort idle, each could take the whole pool: 16.
    assert tree.max_obtainable("a", *CPU) == D(16)
    assert tree.rows("b")[0].borrowed == D(2)
    assert tree.cohort_path("a") == ("pool",)


def test_cohort_name_in_v1beta1_links_queues_the_same_way():
    tree = QuotaTree(
        [
            cq("a", {CPU: (10, None, None)}, cohort="pool", reserved={CPU: "1"}, version="v1beta1"),
            cq("b", {CPU: (6, None, None)}, cohort="pool", reserved={CPU: "8"}),
        ]
    )
    assert tree.headroom("a", *CPU) == D(7)


def test_lending_limit_keeps_part_of_the_lenders_quota():
    tree = QuotaTree(
        [
            cq("lender", {CPU: (10, None, 4)}, cohort="pool", reserved={CPU: "1"}),
            cq("borrower", {CPU: (6, None, None)}, cohort="pool", reserved={CPU: "0"}),
        ]
    )
    # lender: localQuota = max(0, 10 - 4) = 6; its usage 1 <= 6 stays local.
    # Cohort: SubtreeQuota = (10 - 6) + 6 = 10, Usage = max(0, 1 - 6) + 0 = 0.
    # borrower: 0 + (10 - 0) = 10 (its own 6 plus 4 the lender may lend).
    assert tree.headroom("borrower", *CPU) == D(10)
    # lender: max(0, 6 - 1) = 5 locally + 10 from the cohort = 15.
    assert tree.headroom("lender", *CPU) == D(15)
    # Potential: borrower 0 + 10 = 10; lender 6 + 10 = 16.
    assert tree.max_obtainable("borrower", *CPU) == D(10)
    assert tree.max_obtainable("lender", *CPU) == D(16)


def test_lenders_usage_above_its_kept_quota_reduces_what_it_lends():
    tree = QuotaTree(
        [
            cq("lender", {CPU: (10, None, 4)}, cohort="pool", reserved={CPU: "8"}),
            cq("borrower", {CPU: (6, None, None)}, cohort="pool", reserved={CPU: "0"}),
        ]
    )
    # lender keeps 6, uses 8: 2 counted in the cohort. Cohort: 10 quota, 2 used.
    # borrower: 0 + (10 - 2) = 8.
    assert tree.headroom("borrower", *CPU) == D(8)
    # lender: max(0, 6 - 8) = 0 locally + 8 = 8 (8 used + 8 = 16 = all quota).
    assert tree.headroom("lender", *CPU) == D(8)


def test_borrowing_limit_caps_what_a_queue_takes_from_the_cohort():
    tree = QuotaTree(
        [
            cq("big", {CPU: (10, None, None)}, cohort="pool", reserved={CPU: "1"}),
            cq("capped", {CPU: (6, 2, None)}, cohort="pool", reserved={CPU: "5"}),
        ]
    )
    # Cohort: SubtreeQuota 16, Usage 1 + 5 = 6 -> available(pool) = 10.
    # capped: storedInParent = 6 - 0 = 6, usedInParent = 5, limit = 6 - 5 + 2 = 3;
    #         min(10, 3) = 3. Workloads may reach nominal + borrowingLimit = 8 = 5 + 3.
    assert tree.headroom("capped", *CPU) == D(3)
    # Potential: min(0 + 16, 6 + 2) = 8.
    assert tree.max_obtainable("capped", *CPU) == D(8)
    # big has no borrowing limit: 0 + 10 = 10.
    assert tree.headroom("big", *CPU) == D(10)


def test_borrowing_limit_zero_means_nominal_only():
    tree = QuotaTree(
        [
            cq("a", {CPU: (4, 0, None)}, cohort="pool", reserved={CPU: "1"}),
            cq("b", {CPU: (8, None, None)}, cohort="pool", reserved={CPU: "0"}),
        ]
    )
    # a: min(available(pool) = 12 - 1 = 11, 4 - 1 + 0 = 3) = 3.
    assert tree.headroom("a", *CPU) == D(3)
    assert tree.max_obtainable("a", *CPU) == D(4)


# -- hierarchical cohorts ---------------------------------------------------------------------


def hierarchical_tree() -> QuotaTree:
    return QuotaTree(
        [
            cq("x", {CPU: (4, None, None)}, cohort="team", reserved={CPU: "3"}),
            cq("y", {CPU: (6, None, None)}, cohort="org", reserved={CPU: "6"}),
        ],
        [
            cohort("org", {CPU: (4, None, None)}),
            cohort("team", {CPU: (2, 3, 1)}, parent="org"),
        ],
    )


def test_hierarchical_cohort_with_its_own_quota():
    tree = hierarchical_tree()
    # x: SubtreeQuota 4, localQuota 0, Usage 3.
    # team: SubtreeQuota = 2 (own) + 4 (x) = 6; localQuota = 6 - lendingLimit 1 = 5;
    #       Usage = max(0, 3 - 0) = 3.
    # y: SubtreeQuota 6, Usage 6.
    # org (root): SubtreeQuota = 4 (own) + (6 - 5) (team lends 1) + 6 (y) = 11;
    #       Usage = max(0, 3 - 5) + 6 = 6; available(org) = 11 - 6 = 5.
    # team: from org min(5, storedInParent 1 - usedInParent 0 + borrowingLimit 3 = 4) = 4;
    #       local max(0, 5 - 3) = 2 -> available(team) = 6.
    # x: 0 + 6 = 6.
    assert tree.headroom("x", *CPU) == D(6)
    # y: 0 + available(org) 5 = 5 (org's own 4 + the 1 team lends).
    assert tree.headroom("y", *CPU) == D(5)
    # Potential: org 11; team min(5 + 11, 6 + 3) = 9; x 0 + 9 = 9; y 0 + 11 = 11.
    assert tree.max_obtainable("x", *CPU) == D(9)
    assert tree.max_obtainable("y", *CPU) == D(11)
    assert tree.cohort_path("x") == ("team", "org")


def test_cohort_with_missing_parent_is_an_implicit_root():
    tree = QuotaTree(
        [cq("x", {CPU: (4, None, None)}, cohort="team", reserved={CPU: "1"})],
        [cohort("team", {CPU: (2, None, None)}, parent="does-not-exist")],
    )
    # team: 2 + 4 = 6, usage 1; implicit root "does-not-exist": 6 quota, 1 used -> 5.
    assert tree.headroom("x", *CPU) == D(5)
    assert tree.cohort_path("x") == ("team", "does-not-exist")


def test_cohort_cycle_admits_nothing():
    tree = QuotaTree(
        [cq("x", {CPU: (4, None, None)}, cohort="a", reserved={CPU: "0"})],
        [cohort("a", parent="b"), cohort("b", parent="a")],
    )
    assert tree.has_cycle("x")
    assert tree.headroom("x", *CPU) == D(0)
    assert tree.max_obtainable("x", *CPU) == D(0)


def test_unknown_cluster_queue_raises_key_error():
    with pytest.raises(KeyError, match="nope"):
        QuotaTree([]).headroom("nope", *CPU)


# -- queue summaries -------------------------------------------------------------------------


def visible_setup(version: str = "v1beta2"):
    local_queues = [
        LocalQueueInfo.from_object(
            lq_obj("user-queue", "a", reserved={CPU: "1", MEM: "2Gi"}, version=version)
        ),
        LocalQueueInfo.from_object(lq_obj("default", "a", version=version, status=False)),
    ]
    cluster_queues = [
        ClusterQueueQuota.from_object(
            cq_obj(
                "a",
                {CPU: (10, None, None), MEM: ("64Gi", None, "16Gi")},
                cohort="pool",
                reserved={CPU: "3", MEM: "8Gi"},
                version=version,
            )
        ),
        ClusterQueueQuota.from_object(
            cq_obj(
                "b",
                {CPU: (6, "2", None), MEM: ("32Gi", None, None)},
                cohort="pool",
                reserved={CPU: "0", MEM: "0"},
                version=version,
            )
        ),
    ]
    return local_queues, cluster_queues


def test_summaries_from_a_tree_built_once_are_the_same_summaries():
    local_queues, cluster_queues = visible_setup()
    tree = QuotaTree(cluster_queues, [])
    shared = queue_summaries(local_queues, cluster_queues, [], tree=tree)
    assert shared == queue_summaries(local_queues, cluster_queues, [])
    name = tree.cluster_queue_names[0]
    assert tree.rows(name) is tree.rows(name)  # a built tree never changes: asked once
    # Hidden quota stays hidden whatever tree is passed.
    assert queue_summaries(local_queues, None, [], tree=tree) == queue_summaries(local_queues, None)


def test_visible_summary_json_shape_and_numbers():
    local_queues, cluster_queues = visible_setup()
    summaries = queue_summaries(local_queues, cluster_queues, [])
    assert [s.name for s in summaries] == ["default", "user-queue"]  # sorted by name
    user = summaries[1].to_json()
    assert set(user) == {
        "name",
        "namespace",
        "cluster_queue",
        "default",
        "default_convention",
        "active",
        "pending",
        "reserving",
        "admitted",
        "quota_visible",
        "hint",
        "resources",
        "multikueue",
    }
    assert user["multikueue"] is None
    assert user["quota_visible"] is True
    assert user["hint"] is None
    assert (user["pending"], user["reserving"], user["admitted"]) == (1, 2, 2)
    # cpu: pool = 10 + 6 = 16, used 3 -> headroom 13; max 16.
    # memory: a keeps max(0, 64Gi - 16Gi) = 48Gi; its 8Gi usage stays local.
    #   pool = (64 - 48) + 32 = 48Gi, usage 0 -> a: (48 - 8) + 48 = 88Gi; max 48 + 48 = 96Gi.
    assert user["resources"] == [
        {
            "flavor": "default-flavor",
            "resource": "cpu",
            "nominal": "10",
            "borrowing_limit": None,
            "lending_limit": None,
            "reserved": "3",
            "used": "3",
            "borrowed": "0",
            "headroom": "13",
            "max_obtainable": "16",
            "queue_reserved": "1",
            "queue_used": "1",
        },
        {
            "flavor": "default-flavor",
            "resource": "memory",
            "nominal": "64Gi",
            "borrowing_limit": None,
            "lending_limit": "16Gi",
            "reserved": "8Gi",
            "used": "8Gi",
            "borrowed": "0",
            "headroom": "88Gi",
            "max_obtainable": "96Gi",
            "queue_reserved": "2Gi",
            "queue_used": "2Gi",
        },
    ]


def test_both_api_versions_give_the_same_summaries():
    v1 = queue_summaries(*visible_setup("v1beta1"), [])
    v2 = queue_summaries(*visible_setup("v1beta2"), [])
    assert [s.to_json() for s in v1] == [s.to_json() for s in v2]
    assert v1[1].resources[0].headroom == D(13)


def test_fresh_local_queue_in_summary():
    local_queues, cluster_queues = visible_setup()
    fresh = queue_summaries(local_queues, cluster_queues, [])[0]
    assert fresh.name == "default"
    assert fresh.active is False  # no Active condition reported yet
    assert (fresh.pending, fresh.reserving, fresh.admitted) == (0, 0, 0)
    assert fresh.resources[0].queue_reserved == D(0)
    assert fresh.resources[0].headroom == D(13)  # quota is the ClusterQueue's


def test_default_flag_by_name_and_by_annotation():
    local_queues, cluster_queues = visible_setup()
    by_name = queue_summaries(local_queues, cluster_queues, [])
    assert [(s.name, s.default, s.default_convention) for s in by_name] == [
        ("default", True, "name"),
        ("user-queue", False, None),
    ]
    annotated = [*local_queues[1:], lq("gpu", "a", annotated=True)]
    by_annotation = queue_summaries(annotated, cluster_queues, [])
    # The annotation wins over the name "default".
    assert [(s.name, s.default, s.default_convention) for s in by_annotation] == [
        ("default", False, None),
        ("gpu", True, "annotation"),
    ]


def test_default_is_chosen_per_namespace():
    queues = [lq("default", "a", namespace="n1"), lq("default", "a", namespace="n2")]
    summaries = queue_summaries(queues, None)
    assert [(s.namespace, s.default) for s in summaries] == [("n1", True), ("n2", True)]


def test_hidden_quota_uses_local_queue_numbers_and_explains_the_permission():
    queue = lq("user-queue", "a", reserved={CPU: "1500m", MEM: "2Gi"}, used={CPU: "1", MEM: "1Gi"})
    (summary,) = queue_summaries([queue], None, None)
    data = summary.to_json()
    assert data["quota_visible"] is False
    assert data["hint"] == HIDDEN_QUOTA_HINT
    assert "list" in data["hint"] and "watch" in data["hint"]
    assert "clusterqueues.kueue.x-k8s.io" in data["hint"]
    assert "ClusterRole" in data["hint"]
    cpu, mem = data["resources"]
    assert (cpu["reserved"], cpu["used"]) == ("1500m", "1")
    assert (mem["reserved"], mem["used"]) == ("2Gi", "1Gi")
    for key in ("nominal", "borrowing_limit", "lending_limit", "borrowed", "headroom"):
        assert cpu[key] is None and mem[key] is None


def test_missing_cluster_queue_is_reported():
    queue = lq("orphan", "gone", reserved={CPU: "1"})
    (summary,) = queue_summaries([queue], [cq("a", {CPU: (1, None, None)})], [])
    assert summary.quota_visible is False
    assert summary.hint is not None
    assert "'gone' does not exist" in summary.hint
    assert summary.resources[0].reserved == D(1)
    assert summary.resources[0].headroom is None


def test_unreadable_cohorts_are_mentioned_only_for_queues_in_a_cohort():
    queues = [lq("q1", "a"), lq("q2", "solo")]
    cluster_queues = [
        cq("a", {CPU: (1, None, None)}, cohort="pool"),
        cq("solo", {CPU: (1, None, None)}),
    ]
    q1, q2 = queue_summaries(queues, cluster_queues, None)
    assert q1.hint is not None and "Cohort objects could not be read" in q1.hint
    assert q2.hint is None


def test_stopped_cluster_queue_and_cycle_hints():
    queues = [lq("q1", "stopped"), lq("q2", "looped")]
    cluster_queues = [
        cq("stopped", {CPU: (4, None, None)}, stop_policy="Hold"),
        cq("looped", {CPU: (4, None, None)}, cohort="a"),
    ]
    cohorts = [cohort("a", parent="b"), cohort("b", parent="a")]
    q1, q2 = queue_summaries(queues, cluster_queues, cohorts)
    assert q1.hint is not None and "stopped (stopPolicy=Hold)" in q1.hint
    # Headroom reports quota only; the hint and `active` carry the stop.
    assert q1.resources[0].headroom == D(4)
    assert q2.hint is not None and "cycle" in q2.hint
    assert q2.resources[0].headroom == D(0)


def test_hierarchical_summary_through_cohort_objects():
    queue = lq("q", "x")
    tree = hierarchical_tree()
    cluster_queues = [tree.cluster_queue(name) for name in tree.cluster_queue_names]
    cohorts = [
        cohort("org", {CPU: (4, None, None)}),
        cohort("team", {CPU: (2, 3, 1)}, parent="org"),
    ]
    (summary,) = queue_summaries([queue], cluster_queues, cohorts)  # type: ignore[arg-type]
    # Same tree as test_hierarchical_cohort_with_its_own_quota: headroom 6, max 9.
    assert summary.to_json()["resources"][0]["headroom"] == "6"
    assert summary.to_json()["resources"][0]["max_obtainable"] == "9"
    # Without the Cohort objects, team and org become empty implicit cohorts: x sees only its
    # own 4 - 3 = 1 (y sits in a different implicit cohort).
    (blind,) = queue_summaries([queue], cluster_queues, [])  # type: ignore[arg-type]
    assert blind.resources[0].headroom == D(1)
