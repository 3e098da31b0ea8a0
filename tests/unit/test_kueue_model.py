"""Parsing Kueue LocalQueue, ClusterQueue and Cohort dicts of both served API versions."""

from decimal import Decimal

import pytest

from jupyter_dw.domain.kueue_model import (
    DEFAULT_QUEUE_ANNOTATION,
    ClusterQueueQuota,
    CohortQuota,
    FlavorResourceAmount,
    KueueObjectError,
    LocalQueueInfo,
    ResourceQuota,
    default_local_queue,
)

GI = 2**30


def cluster_queue_obj(version: str, *, cohort: str | None = "team", status: bool = True) -> dict:
    spec: dict = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": "on-demand",
                        "resources": [
                            {"name": "cpu", "nominalQuota": 9, "borrowingLimit": "2"},
                            {"name": "memory", "nominalQuota": "36Gi", "lendingLimit": "4Gi"},
                        ],
                    },
                    {
                        "name": "spot",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "500m"},
                            {"name": "memory", "nominalQuota": "1Gi"},
                        ],
                    },
                ],
            }
        ],
    }
    if cohort is not None:
        spec["cohort" if version == "v1beta1" else "cohortName"] = cohort
    obj: dict = {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq-a"},
        "spec": spec,
    }
    if status:
        obj["status"] = {
            "pendingWorkloads": 3,
            "reservingWorkloads": 2,
            "admittedWorkloads": 1,
            "conditions": [
                {"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit"}
            ],
            "flavorsReservation": [
                {
                    "name": "on-demand",
                    "resources": [
                        {"name": "cpu", "total": "10", "borrowed": "1"},
                        {"name": "memory", "total": "8Gi", "borrowed": "0"},
                    ],
                }
            ],
            "flavorsUsage": [
                {
                    "name": "on-demand",
                    "resources": [
                        {"name": "cpu", "total": "1500m", "borrowed": "0"},
                        {"name": "memory", "total": "4Gi", "borrowed": "0"},
                    ],
                }
            ],
        }
    return obj


def local_queue_obj(
    version: str,
    name: str = "user-queue",
    *,
    namespace: str = "team-a",
    annotations: dict | None = None,
    status: bool = True,
    stop_policy: str | None = None,
    active: str = "True",
) -> dict:
    obj: dict = {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": "cq-a"},
    }
    if annotations:
        obj["metadata"]["annotations"] = annotations
    if stop_policy:
        obj["spec"]["stopPolicy"] = stop_policy
    if status:
        usage = [{"name": "on-demand", "resources": [{"name": "cpu", "total": "1"}]}]
        obj["status"] = {
            "pendingWorkloads": 4,
            "reservingWorkloads": 2,
            "admittedWorkloads": 1,
            "conditions": [{"type": "Active", "status": active, "reason": "Ready"}],
            "flavorsReservation": [
                {"name": "on-demand", "resources": [{"name": "cpu", "total": "2500m"}]}
            ],
            # The only LocalQueue status rename between the versions.
            ("flavorUsage" if version == "v1beta1" else "flavorsUsage"): usage,
        }
        if version == "v1beta1":
            # v1beta1-only field, dropped in v1beta2: must be ignored.
            obj["status"]["flavors"] = [{"name": "on-demand", "resources": ["cpu"]}]
    return obj


# -- ClusterQueue ---------------------------------------------------------------------------


def test_cluster_queue_versions_parse_to_the_same_model():
    v1 = ClusterQueueQuota.from_object(cluster_queue_obj("v1beta1"))
    v2 = ClusterQueueQuota.from_object(cluster_queue_obj("v1beta2"))
    assert v1 == v2
    assert v2.cohort == "team"


def test_cluster_queue_quota_fields():
    cq = ClusterQueueQuota.from_object(cluster_queue_obj("v1beta2"))
    quotas = cq.quotas()
    assert list(quotas) == [
        ("on-demand", "cpu"),
        ("on-demand", "memory"),
        ("spot", "cpu"),
        ("spot", "memory"),
    ]
    assert quotas[("on-demand", "cpu")] == ResourceQuota("cpu", Decimal(9), Decimal(2), None)
    assert quotas[("on-demand", "memory")] == ResourceQuota(
        "memory", Decimal(36 * GI), None, Decimal(4 * GI)
    )
    assert quotas[("spot", "cpu")].nominal == Decimal("0.5")
    assert cq.resource_groups[0].covered_resources == ("cpu", "memory")


def test_cluster_queue_status_fields():
    cq = ClusterQueueQuota.from_object(cluster_queue_obj("v1beta1"))
    assert (cq.pending, cq.reserving, cq.admitted) == (3, 2, 1)
    assert cq.reserved("on-demand", "cpu") == Decimal(10)
    assert cq.borrowed("on-demand", "cpu") == Decimal(1)
    assert cq.used("on-demand", "cpu") == Decimal("1.5")
    assert cq.used("on-demand", "memory") == Decimal(4 * GI)
    # Not in status at all: zero, not an error.
    assert cq.reserved("spot", "cpu") == Decimal(0)
    assert cq.active is True
    assert cq.active_message == "Can admit"


def test_fresh_cluster_queue_without_status_reads_as_empty():
    cq = ClusterQueueQuota.from_object(cluster_queue_obj("v1beta2", cohort=None, status=False))
    assert cq.cohort is None
    assert cq.reservation == () and cq.usage == ()
    assert (cq.pending, cq.reserving, cq.admitted) == (0, 0, 0)
    assert cq.reserved("on-demand", "cpu") == Decimal(0)
    assert cq.active_condition is None
    assert cq.active is False
    assert len(cq.quotas()) == 4


def test_cluster_queue_stop_policy_makes_it_inactive():
    obj = cluster_queue_obj("v1beta2")
    obj["spec"]["stopPolicy"] = "HoldAndDrain"
    cq = ClusterQueueQuota.from_object(obj)
    assert cq.stopped
    assert cq.active_condition is True  # condition not yet updated by Kueue
    assert cq.active is False


def test_cluster_queue_bad_quantity_names_the_field():
    obj = cluster_queue_obj("v1beta2")
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "lots"
    with pytest.raises(KueueObjectError, match=r"nominalQuota"):
        ClusterQueueQuota.from_object(obj)


def test_object_without_name_is_rejected():
    with pytest.raises(KueueObjectError, match=r"metadata\.name"):
        ClusterQueueQuota.from_object({"spec": {}})
    with pytest.raises(KueueObjectError):
        LocalQueueInfo.from_object(["not", "a", "dict"])  # type: ignore[arg-type]


# -- Cohort -----------------------------------------------------------------------------------


@pytest.mark.parametrize("parent_key", ["parentName", "parent"])
def test_cohort_parent_field_of_either_spelling(parent_key):
    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Cohort",
        "metadata": {"name": "team"},
        "spec": {
            parent_key: "org",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {
                            "name": "on-demand",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "2", "lendingLimit": "1"}
                            ],
                        }
                    ],
                }
            ],
        },
    }
    cohort = CohortQuota.from_object(obj)
    assert (cohort.name, cohort.parent) == ("team", "org")
    assert cohort.quotas() == {
        ("on-demand", "cpu"): ResourceQuota("cpu", Decimal(2), None, Decimal(1))
    }


def test_root_cohort_without_spec():
    cohort = CohortQuota.from_object({"metadata": {"name": "org"}})
    assert cohort.parent is None
    assert cohort.quotas() == {}


# -- LocalQueue -------------------------------------------------------------------------------


def test_local_queue_versions_parse_to_the_same_model():
    v1 = LocalQueueInfo.from_object(local_queue_obj("v1beta1"))
    v2 = LocalQueueInfo.from_object(local_queue_obj("v1beta2"))
    assert v1 == v2
    # flavorUsage (v1beta1) and flavorsUsage (v1beta2) both land in .usage.
    assert v1.usage == (FlavorResourceAmount("on-demand", "cpu", Decimal(1)),)


def test_local_queue_fields():
    lq = LocalQueueInfo.from_object(local_queue_obj("v1beta2"))
    assert (lq.name, lq.namespace, lq.cluster_queue) == ("user-queue", "team-a", "cq-a")
    assert (lq.pending, lq.reserving, lq.admitted) == (4, 2, 1)
    assert lq.reserved("on-demand", "cpu") == Decimal("2.5")
    assert lq.used("on-demand", "cpu") == Decimal(1)
    assert lq.active is True
    assert lq.stop_policy == "None"


def test_fresh_local_queue_without_status():
    lq = LocalQueueInfo.from_object(local_queue_obj("v1beta2", status=False))
    assert (lq.pending, lq.reserving, lq.admitted) == (0, 0, 0)
    assert lq.reservation == () and lq.usage == ()
    assert lq.active_condition is None
    assert lq.active is False


@pytest.mark.parametrize(
    ("stop_policy", "condition", "active"),
    [(None, "True", True), (None, "False", False), ("Hold", "True", False)],
)
def test_local_queue_active_needs_condition_and_no_stop_policy(stop_policy, condition, active):
    lq = LocalQueueInfo.from_object(
        local_queue_obj("v1beta2", stop_policy=stop_policy, active=condition)
    )
    assert lq.active is active
    assert lq.stopped is (stop_policy is not None)


# -- Default queue ------------------------------------------------------------------------------


def lq(name: str, *, annotated: bool = False, namespace: str = "team-a") -> LocalQueueInfo:
    annotations = {DEFAULT_QUEUE_ANNOTATION: "true"} if annotated else None
    return LocalQueueInfo.from_object(
        local_queue_obj("v1beta2", name, namespace=namespace, annotations=annotations)
    )


def test_default_queue_by_name_convention():
    choice = default_local_queue([lq("gpu"), lq("default")])
    assert choice is not None
    assert choice.queue.name == "default"
    assert choice.convention == "name"
    assert "LocalQueueDefaulting" in choice.reason


def test_default_queue_by_annotation_convention():
    choice = default_local_queue([lq("gpu"), lq("small", annotated=True)])
    assert choice is not None
    assert choice.queue.name == "small"
    assert choice.convention == "annotation"
    assert DEFAULT_QUEUE_ANNOTATION in choice.reason


def test_annotation_wins_over_the_name():
    queues = [lq("default"), lq("small", annotated=True)]
    choice = default_local_queue(queues)
    assert choice is not None
    assert (choice.queue.name, choice.convention) == ("small", "annotation")
    # Both queues individually qualify as candidates.
    assert [q.default_convention for q in queues] == ["name", "annotation"]


def test_annotation_value_must_be_true():
    queue = LocalQueueInfo.from_object(
        local_queue_obj("v1beta2", "x", annotations={DEFAULT_QUEUE_ANNOTATION: "false"})
    )
    assert queue.annotated_default is False
    assert default_local_queue([queue]) is None


def test_several_annotated_queues_are_ambiguous_first_by_name_wins():
    choice = default_local_queue([lq("zeta", annotated=True), lq("alpha", annotated=True)])
    assert choice is not None
    assert choice.queue.name == "alpha"
    assert choice.ambiguous
    assert choice.candidates == ("alpha", "zeta")
    assert "'zeta'" in choice.reason


def test_default_queue_is_per_namespace():
    queues = [lq("default", namespace="a"), lq("main", annotated=True, namespace="b")]
    choice_a = default_local_queue(queues, "a")
    choice_b = default_local_queue(queues, "b")
    assert choice_a is not None and choice_a.queue.name == "default"
    assert choice_b is not None and choice_b.queue.name == "main"
    assert default_local_queue(queues, "c") is None
    with pytest.raises(ValueError, match="namespace"):
        default_local_queue(queues)
