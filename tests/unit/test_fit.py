"""The fit verdict: Kueue's flavor assignment replayed over QuotaTree's headroom numbers.

Objects are built as Kueue's controllers store them (ClusterQueue spec + status with
flavorsReservation), in both API versions where a field differs (cohort vs cohortName).
Expected numbers are worked out in the comments.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.fit import (
    FITS_NOW,
    MUST_WAIT,
    NEVER_FITS,
    UNKNOWN,
    PodSetRequest,
    assess_fit,
    pod_sets_for_spec,
)
from jupyter_dw.domain.fit_suggestion import suggest
from jupyter_dw.domain.kueue_model import ClusterQueueQuota, CohortQuota, LocalQueueInfo
from jupyter_dw.domain.quota import HIDDEN_QUOTA_HINT, QuotaTree

GI = 2**30
D = Decimal

# -- builders -------------------------------------------------------------------------------

Limits = str | tuple[str, str | None, str | None]  # nominal, or (nominal, borrowing, lending)
Group = tuple[list[str], list[tuple[str, dict[str, Limits]]]]  # covered, [(flavor, quotas)]


def _quota(resource: str, limits: Limits) -> dict[str, Any]:
    nominal, borrowing, lending = limits if isinstance(limits, tuple) else (limits, None, None)
    entry: dict[str, Any] = {"name": resource, "nominalQuota": nominal}
    if borrowing is not None:
        entry["borrowingLimit"] = borrowing
    if lending is not None:
        entry["lendingLimit"] = lending
    return entry


def cq_obj(
    name: str,
    groups: list[Group],
    *,
    cohort: str | None = None,
    reserved: dict[tuple[str, str], str] | None = None,
    version: str = "v1beta2",
    stop_policy: str | None = None,
    active: tuple[str, str] | None = ("True", "Ready"),
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "resourceGroups": [
            {
                "coveredResources": covered,
                "flavors": [
                    {"name": flavor, "resources": [_quota(r, q) for r, q in quotas.items()]}
                    for flavor, quotas in flavors
                ],
            }
            for covered, flavors in groups
        ],
    }
    if cohort:
        spec["cohort" if version == "v1beta1" else "cohortName"] = cohort
    if stop_policy:
        spec["stopPolicy"] = stop_policy
    by_flavor: dict[str, list[dict[str, str]]] = {}
    for (flavor, resource), total in (reserved or {}).items():
        by_flavor.setdefault(flavor, []).append({"name": resource, "total": total, "borrowed": "0"})
    status: dict[str, Any] = {
        "flavorsReservation": [{"name": f, "resources": r} for f, r in by_flavor.items()],
        "flavorsUsage": [{"name": f, "resources": r} for f, r in by_flavor.items()],
        "pendingWorkloads": 0,
        "reservingWorkloads": len(by_flavor),
        "admittedWorkloads": len(by_flavor),
    }
    if active is not None:
        status["conditions"] = [
            {"type": "Active", "status": active[0], "reason": active[1], "message": active[1]}
        ]
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
        "status": status,
    }


def cq(name: str, groups: list[Group], **kwargs: Any) -> ClusterQueueQuota:
    return ClusterQueueQuota.from_object(cq_obj(name, groups, **kwargs))


def cpu_mem(flavor: str, cpu: Limits, memory: Limits) -> Group:
    return (["cpu", "memory"], [(flavor, {"cpu": cpu, "memory": memory})])


def lq(
    name: str = "team-a", cluster_queue: str = "x", stop_policy: str | None = None
) -> LocalQueueInfo:
    spec: dict[str, Any] = {"clusterQueue": cluster_queue}
    if stop_policy:
        spec["stopPolicy"] = stop_policy
    return LocalQueueInfo.from_object(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": spec,
        }
    )


def ray_pod_sets(
    head_cpu: str = "1", workers: int = 2, worker_cpu: str = "2", memory_gi: int = 4
) -> list[PodSetRequest]:
    """Head + one worker group, as Kueue's RayCluster integration builds PodSets."""
    memory = D(memory_gi * GI)
    return [
        PodSetRequest("head", 1, {"cpu": D(head_cpu), "memory": memory}),
        PodSetRequest("workers", workers, {"cpu": D(worker_cpu), "memory": memory}),
    ]


def assess(
    requests: Any,
    queues: list[ClusterQueueQuota],
    name: str = "x",
    ahead: int | None = None,
    cohorts: list[CohortQuota] | None = None,
    local_queue: LocalQueueInfo | None = None,
):
    tree = QuotaTree(queues, cohorts or [])
    return assess_fit(requests, tree.cluster_queue(name), tree, ahead, local_queue=local_queue)


# -- requests -------------------------------------------------------------------------------


def test_pod_sets_for_spec_match_kueue_raycluster_pod_sets() -> None:
    spec = ValidatedClusterSpec.from_request(
        {"name": "demo", "queue": "team-a", "workers": 3, "worker_cpu": "2", "worker_gpu": 1}
    )
    head, workers = pod_sets_for_spec(spec)
    assert (head.name, head.count) == ("head", 1)
    assert (workers.name, workers.count) == ("workers", 3)
    assert workers.per_pod["nvidia.com/gpu"] == 1
    assert "nvidia.com/gpu" not in head.per_pod
    # The totals agree with ValidatedClusterSpec.total_requests (head + workers).
    verdict = assess_fit(list(pod_sets_for_spec(spec)), None, None)
    assert dict(verdict.requests) == spec.total_requests()


def test_zero_requests_are_ignored_even_when_uncovered() -> None:
    # Kueue skips a zero request of a resource no group covers (#8079).
    x = cq("x", [cpu_mem("default", "10", "32Gi")])
    verdict = assess({"cpu": D(2), "nvidia.com/gpu": D(0)}, [x])
    assert verdict.verdict == FITS_NOW
    assert set(verdict.requests) == {"cpu"}


def test_requests_rounded_up_like_kueue() -> None:
    # 0.0005 CPU per pod is 1m in Kueue's milli-units; 3 pods → 3m.
    x = cq("x", [cpu_mem("default", "10", "32Gi")])
    verdict = assess([PodSetRequest("workers", 3, {"cpu": D("0.0005")})], [x])
    assert verdict.to_json()["requests"] == {"cpu": "3m"}


# -- fits now / must wait in one ClusterQueue -----------------------------------------------


def test_fits_now_message_and_json_shape() -> None:
    x = cq("x", [cpu_mem("default", "10", "32Gi")], reserved={("default", "cpu"): "2"})
    verdict = assess(ray_pod_sets(), [x], local_queue=lq())
    data = verdict.to_json()
    assert data["verdict"] == FITS_NOW
    assert {"verdict", "message", "requests", "headroom", "ahead"} <= set(data)
    assert data["requests"] == {"cpu": "5", "memory": "12Gi"}
    assert data["headroom"] == {"cpu": "8", "memory": "32Gi"}
    assert data["flavors"] == {"cpu": "default", "memory": "default"}
    assert data["assignment"] == {
        "head": {"cpu": "default", "memory": "default"},
        "workers": {"cpu": "default", "memory": "default"},
    }
    assert data["ahead"] is None
    assert data["message"] == (
        "Needs 5 CPU, 12Gi memory; queue team-a (ClusterQueue x, flavor default) has 8 CPU, "
        "32Gi memory free now: fits now."
    )


def test_fits_now_mentions_workloads_ahead() -> None:
    x = cq("x", [cpu_mem("default", "10", "32Gi")])
    verdict = assess(ray_pod_sets(), [x], ahead=2)
    assert verdict.verdict == FITS_NOW
    assert verdict.ahead == 2
    assert "2 workloads pending ahead may be admitted first" in verdict.message


def test_must_wait_says_what_is_in_use_and_who_is_ahead() -> None:
    # 10 CPU nominal, 7 reserved → 3 free; the cluster needs 5 → waits for 2.
    x = cq(
        "x",
        [cpu_mem("default", "10", "32Gi")],
        reserved={("default", "cpu"): "7", ("default", "memory"): "12Gi"},
    )
    verdict = assess(ray_pod_sets(), [x], ahead=1, local_queue=lq())
    assert verdict.verdict == MUST_WAIT
    assert verdict.reason == "WaitingForQuota"
    assert verdict.to_json()["headroom"] == {"cpu": "3", "memory": "20Gi"}
    assert verdict.to_json()["max_obtainable"] == {"cpu": "10", "memory": "32Gi"}
    assert verdict.message == (
        "Needs 5 CPU, 12Gi memory; queue team-a (ClusterQueue x, flavor default) has 3 CPU, "
        "20Gi memory free now (7 CPU, 12Gi memory in use): waits for 2 CPU; 1 workload ahead."
    )


def test_must_wait_with_no_workloads_ahead() -> None:
    x = cq("x", [cpu_mem("default", "4", "32Gi")], reserved={("default", "cpu"): "4"})
    verdict = assess({"cpu": D(1)}, [x], ahead=0)
    assert verdict.verdict == MUST_WAIT
    assert verdict.message.endswith("waits for 1 CPU; no workloads ahead.")


def test_never_fits_above_nominal_without_cohort() -> None:
    x = cq("x", [cpu_mem("default", "4", "32Gi")])
    verdict = assess(ray_pod_sets(), [x])  # needs 5 CPU, at most 4 ever
    assert verdict.verdict == NEVER_FITS
    assert verdict.reason == "ExceedsMaxQuota"
    assert "flavor default would need 5 CPU but can give at most 4 CPU" in verdict.message
    assert "(at pod set workers)" in verdict.message
    assert verdict.to_json()["max_obtainable"]["cpu"] == "4"
    assert verdict.assignment == {}


# -- cohorts: borrowing ---------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_borrowing_from_an_idle_cohort_member_fits_now(version: str) -> None:
    # a: 4 CPU nominal, b: 8 CPU idle in the same cohort → a may use 12.
    a = cq("a", [cpu_mem("default", "4", "64Gi")], cohort="pool", version=version)
    b = cq("b", [cpu_mem("default", "8", "64Gi")], cohort="pool", version=version)
    verdict = assess({"cpu": D(10)}, [a, b], name="a")
    assert verdict.verdict == FITS_NOW
    assert verdict.to_json()["headroom"] == {"cpu": "12"}
    assert "counting what cohort pool may lend" in verdict.message


def test_borrowing_limited_by_others_usage_must_wait() -> None:
    # b uses 6 of its 8 → a can get 4 + 2 = 6 now, 12 with b idle: 10 must wait for 4.
    a = cq("a", [cpu_mem("default", "4", "64Gi")], cohort="pool")
    b = cq(
        "b", [cpu_mem("default", "8", "64Gi")], cohort="pool", reserved={("default", "cpu"): "6"}
    )
    verdict = assess({"cpu": D(10)}, [a, b], name="a")
    assert verdict.verdict == MUST_WAIT
    assert verdict.headroom["cpu"] == 6
    assert verdict.max_obtainable["cpu"] == 12
    assert "waits for 4 CPU" in verdict.message


def test_borrowing_limit_makes_it_never_fit() -> None:
    # borrowingLimit 2 → a can ever get 4 + 2 = 6 < 10.
    a = cq("a", [cpu_mem("default", ("4", "2", None), "64Gi")], cohort="pool")
    b = cq("b", [cpu_mem("default", "8", "64Gi")], cohort="pool")
    verdict = assess({"cpu": D(10)}, [a, b], name="a")
    assert verdict.verdict == NEVER_FITS
    assert "can give at most 6 CPU" in verdict.message


def test_lending_limit_of_the_lender_counts() -> None:
    # b lends at most 3 → a gets 4 + 3 = 7 at most; 8 never fits, 7 fits now.
    a = cq("a", [cpu_mem("default", "4", "64Gi")], cohort="pool")
    b = cq("b", [cpu_mem("default", ("8", None, "3"), "64Gi")], cohort="pool")
    assert assess({"cpu": D(8)}, [a, b], name="a").verdict == NEVER_FITS
    assert assess({"cpu": D(7)}, [a, b], name="a").verdict == FITS_NOW


def test_cohort_object_quota_is_borrowable() -> None:
    # A Cohort object with its own 6 CPU: a (4 CPU) can get 10.
    a = cq("a", [cpu_mem("default", "4", "64Gi")], cohort="pool")
    pool = CohortQuota.from_object(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Cohort",
            "metadata": {"name": "pool"},
            "spec": {
                "resourceGroups": cq_obj("pool", [cpu_mem("default", "6", "0")])["spec"][
                    "resourceGroups"
                ]
            },
        }
    )
    assert assess({"cpu": D(10)}, [a], name="a", cohorts=[pool]).verdict == FITS_NOW
    assert assess({"cpu": D(11)}, [a], name="a", cohorts=[pool]).verdict == NEVER_FITS


# -- flavors --------------------------------------------------------------------------------

TWO_FLAVORS = (
    ["cpu", "memory"],
    [("on-demand", {"cpu": "4", "memory": "16Gi"}), ("spot", {"cpu": "16", "memory": "64Gi"})],
)


def test_first_flavor_in_order_that_fits_is_chosen() -> None:
    x = cq("x", [TWO_FLAVORS])
    small = assess({"cpu": D(2), "memory": D(4 * GI)}, [x])
    assert small.flavors == {"cpu": "on-demand", "memory": "on-demand"}
    big = assess({"cpu": D(8), "memory": D(4 * GI)}, [x])
    assert big.verdict == FITS_NOW
    assert big.flavors == {"cpu": "spot", "memory": "spot"}
    assert "flavor spot" in big.message


def test_all_resources_of_a_group_must_fit_the_same_flavor() -> None:
    # CPU fits on-demand (2 ≤ 4) but memory does not (20Gi > 16Gi): both go to spot.
    x = cq("x", [TWO_FLAVORS])
    verdict = assess({"cpu": D(2), "memory": D(20 * GI)}, [x])
    assert verdict.flavors == {"cpu": "spot", "memory": "spot"}


def test_used_first_flavor_falls_through_to_the_next() -> None:
    x = cq("x", [TWO_FLAVORS], reserved={("on-demand", "cpu"): "3"})
    verdict = assess({"cpu": D(2), "memory": D(GI)}, [x])
    assert verdict.verdict == FITS_NOW
    assert verdict.flavors["cpu"] == "spot"
    assert verdict.headroom["cpu"] == 16


def test_pod_sets_can_land_in_different_flavors() -> None:
    # Flavor a: 4 CPU, b: 8 CPU. Head (2) fits a; workers (8) fit only b. As one PodSet of
    # 10 CPU nothing fits — Kueue assigns PodSets one by one, so it does admit this.
    group = (["cpu"], [("a", {"cpu": "4"}), ("b", {"cpu": "8"})])
    x = cq("x", [group])
    pod_sets = [
        PodSetRequest("head", 1, {"cpu": D(2)}),
        PodSetRequest("workers", 2, {"cpu": D(4)}),
    ]
    verdict = assess(pod_sets, [x])
    assert verdict.verdict == FITS_NOW
    assert verdict.assignment == {"head": {"cpu": "a"}, "workers": {"cpu": "b"}}
    assert verdict.flavors == {"cpu": "b"}  # the PodSet asking for most
    assert "flavor b" in verdict.message
    assert assess({"cpu": D(10)}, [x]).verdict == NEVER_FITS


def test_earlier_pod_sets_use_up_a_flavor_for_later_ones() -> None:
    # Flavor a: 5 CPU. Head takes 2, workers want 4: 2 + 4 > 5 in a → b.
    group = (["cpu"], [("a", {"cpu": "5"}), ("b", {"cpu": "8"})])
    x = cq("x", [group])
    pod_sets = [
        PodSetRequest("head", 1, {"cpu": D(2)}),
        PodSetRequest("workers", 1, {"cpu": D(4)}),
    ]
    assert assess(pod_sets, [x]).assignment == {"head": {"cpu": "a"}, "workers": {"cpu": "b"}}


def test_never_fits_only_when_no_assignment_exists() -> None:
    # a: 8, b: 2. First-fit puts head (2) in a, then workers (8) fit nowhere; head in b and
    # workers in a works, and Kueue retries from the next flavor, so this is not never-fits.
    group = (["cpu"], [("a", {"cpu": "8"}), ("b", {"cpu": "2"})])
    x = cq("x", [group])
    pod_sets = [PodSetRequest("head", 1, {"cpu": D(2)}), PodSetRequest("w", 1, {"cpu": D(8)})]
    verdict = assess(pod_sets, [x])
    assert verdict.verdict == MUST_WAIT
    assert verdict.assignment == {"head": {"cpu": "b"}, "w": {"cpu": "a"}}


def test_separate_resource_groups_assign_separately() -> None:
    gpu_group = (["nvidia.com/gpu"], [("a100", {"nvidia.com/gpu": "4"})])
    x = cq("x", [cpu_mem("default", "16", "64Gi"), gpu_group])
    verdict = assess({"cpu": D(4), "memory": D(8 * GI), "nvidia.com/gpu": D(2)}, [x])
    assert verdict.verdict == FITS_NOW
    assert verdict.flavors == {"cpu": "default", "memory": "default", "nvidia.com/gpu": "a100"}
    assert "flavors default (cpu, memory), a100 (nvidia.com/gpu)" in verdict.message


# -- uncovered resources, pods --------------------------------------------------------------


def test_uncovered_resource_never_fits() -> None:
    x = cq("x", [cpu_mem("default", "16", "64Gi")])
    verdict = assess({"cpu": D(1), "nvidia.com/gpu": D(1)}, [x])
    assert verdict.verdict == NEVER_FITS
    assert verdict.reason == "NoMatchingFlavor"  # Kueue: "resource ... unavailable in CQ"
    assert "has no quota for nvidia.com/gpu (it covers cpu, memory)" in verdict.message
    assert verdict.headroom["nvidia.com/gpu"] == 0
    assert verdict.flavors["nvidia.com/gpu"] is None
    assert verdict.to_json()["headroom"]["cpu"] == "16"


def test_pods_count_only_when_covered() -> None:
    # Kueue adds pods = PodSet count to the requests only if the ClusterQueue covers pods.
    covered = (["cpu", "pods"], [("default", {"cpu": "16", "pods": "2"})])
    x = cq("x", [covered])
    head = PodSetRequest("head", 1, {"cpu": D(1)})
    too_many = assess([head, PodSetRequest("w", 2, {"cpu": D(1)})], [x])  # 3 pods > 2
    assert too_many.verdict == NEVER_FITS
    assert too_many.reason == "ExceedsMaxQuota"
    assert too_many.requests == {"cpu": 3, "pods": 3}
    assert "would need 3 pods but can give at most 2 pods" in too_many.message
    fits = assess([head, PodSetRequest("w", 1, {"cpu": D(1)})], [x])
    assert fits.verdict == FITS_NOW
    assert fits.requests == {"cpu": 2, "pods": 2}
    # A totals mapping carries no pod count: its own "pods" entry is used as given.
    assert assess({"cpu": D(1), "pods": D(3)}, [x]).verdict == NEVER_FITS
    # Not covered: pods is not a request at all.
    y = cq("y", [cpu_mem("default", "16", "64Gi")])
    assert "pods" not in assess(ray_pod_sets(), [y], name="y").requests


# -- queue states ---------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["Hold", "HoldAndDrain"])
def test_stopped_cluster_queue_must_wait_with_the_stop(policy: str) -> None:
    x = cq("x", [cpu_mem("default", "10", "32Gi")], stop_policy=policy)
    verdict = assess(ray_pod_sets(), [x], ahead=0)
    assert verdict.verdict == MUST_WAIT
    assert verdict.reason == "Stopped"
    assert f"ClusterQueue x is stopped (stopPolicy={policy})" in verdict.message
    assert "once admissions resume it fits" in verdict.message


def test_stopped_local_queue_without_enough_quota_still_says_the_shortfall() -> None:
    x = cq("x", [cpu_mem("default", "10", "32Gi")], reserved={("default", "cpu"): "8"})
    verdict = assess(ray_pod_sets(), [x], local_queue=lq(stop_policy="Hold"))
    assert verdict.verdict == MUST_WAIT
    assert "LocalQueue team-a is stopped (stopPolicy=Hold)" in verdict.message
    assert "even then it waits for 3 CPU" in verdict.message


def test_stopped_queue_that_could_never_fit_is_never_fits() -> None:
    x = cq("x", [cpu_mem("default", "2", "32Gi")], stop_policy="Hold")
    assert assess(ray_pod_sets(), [x]).verdict == NEVER_FITS


def test_inactive_cluster_queue_must_wait_with_kueues_message() -> None:
    x = cq(
        "x",
        [cpu_mem("default", "10", "32Gi")],
        active=("False", "FlavorNotFound"),
    )
    verdict = assess(ray_pod_sets(), [x])
    assert verdict.verdict == MUST_WAIT
    assert verdict.reason == "Inactive"
    assert "ClusterQueue x is not active (FlavorNotFound)" in verdict.message


def test_cohort_cycle_must_wait() -> None:
    cycle = [
        CohortQuota.from_object({"metadata": {"name": "p"}, "spec": {"parentName": "q"}}),
        CohortQuota.from_object({"metadata": {"name": "q"}, "spec": {"parentName": "p"}}),
    ]
    x = cq("x", [cpu_mem("default", "10", "32Gi")], cohort="p")
    verdict = assess({"cpu": D(1)}, [x], cohorts=cycle)
    assert verdict.verdict == MUST_WAIT
    assert verdict.reason == "CohortCycle"
    assert "has a cycle" in verdict.message


def test_missing_cluster_queue_never_fits() -> None:
    tree = QuotaTree([cq("other", [cpu_mem("default", "10", "32Gi")])])
    verdict = assess_fit(ray_pod_sets(), None, tree, local_queue=lq(cluster_queue="gone"))
    assert verdict.verdict == NEVER_FITS
    assert verdict.reason == "ClusterQueueMissing"
    assert "ClusterQueue gone does not exist" in verdict.message
    assert verdict.to_json()["headroom"] == {"cpu": None, "memory": None}
    assert verdict.cluster_queue == "gone"


def test_hidden_quota_is_unknown_and_names_the_permission() -> None:
    verdict = assess_fit(ray_pod_sets(), None, None, 3, local_queue=lq())
    data = verdict.to_json()
    assert data["verdict"] == UNKNOWN
    assert data["requests"] == {"cpu": "5", "memory": "12Gi"}
    assert data["headroom"] == {"cpu": None, "memory": None}
    assert data["ahead"] == 3
    assert "clusterqueues.kueue.x-k8s.io" in data["message"]
    assert HIDDEN_QUOTA_HINT in data["message"]
    assert data["message"].startswith("Needs 5 CPU, 12Gi memory; whether queue team-a")


def test_a_cluster_queue_outside_the_tree_is_a_caller_error() -> None:
    tree = QuotaTree([cq("x", [cpu_mem("default", "10", "32Gi")])])
    stranger = cq("y", [cpu_mem("default", "10", "32Gi")])
    with pytest.raises(ValueError, match="not in the quota tree"):
        assess_fit({"cpu": D(1)}, stranger, tree)


def test_no_requests_fit() -> None:
    x = cq("x", [cpu_mem("default", "1", "1Gi")])
    verdict = assess([PodSetRequest("workers", 0, {"cpu": D(4)})], [x])
    assert verdict.verdict == FITS_NOW
    assert verdict.requests == {}
    assert verdict.message == "Needs no quota: fits now."


# -- what would fit now ---------------------------------------------------------------------


def _spec(workers: int) -> ValidatedClusterSpec:
    return ValidatedClusterSpec.from_request(
        {
            "name": "big",
            "queue": "team-a",
            "workers": workers,
            "head_cpu": "1",
            "head_memory": "1Gi",
            "worker_cpu": "2",
            "worker_memory": "1Gi",
        }
    )


def _suggest(workers: int, queue: ClusterQueueQuota, ahead: int | None = None):
    tree = QuotaTree([queue], [])
    return suggest(_spec(workers), tree.cluster_queue(queue.name), tree, ahead)


def test_suggestion_is_the_largest_worker_count_that_fits_now() -> None:
    # 8 CPU, 3 in use: 5 free; head 1 + N * 2 <= 5 -> N = 2.
    queue = cq("x", [cpu_mem("f", "8", "64Gi")], reserved={("f", "cpu"): "3"})
    found = _suggest(10, queue)
    assert found is not None
    assert found.workers == 2
    assert found.to_json()["requests"] == {"cpu": "5", "memory": "3Gi"}
    assert found.message.startswith("2 workers would start now")
    tree = QuotaTree([queue], [])
    bigger = assess_fit(pod_sets_for_spec(_spec(3)), tree.cluster_queue("x"), tree)
    assert bigger.verdict == MUST_WAIT  # one more worker would not start


def test_no_suggestion_when_not_even_one_worker_fits() -> None:
    queue = cq("x", [cpu_mem("f", "8", "64Gi")], reserved={("f", "cpu"): "6"})
    assert _suggest(4, queue) is None  # 2 free: the head and one worker need 3


def test_strict_fifo_with_workloads_ahead_suggests_nothing() -> None:
    obj = cq_obj("x", [cpu_mem("f", "8", "64Gi")], reserved={("f", "cpu"): "3"})
    obj["spec"]["queueingStrategy"] = "StrictFIFO"
    strict = ClusterQueueQuota.from_object(obj)
    assert strict.strict_fifo
    assert _suggest(10, strict, ahead=1) is None
    assert _suggest(10, strict, ahead=0) is not None  # nobody ahead: as BestEffortFIFO


def test_no_suggestion_with_hidden_quota() -> None:
    assert suggest(_spec(4), None, None, None) is None
