"""TrainJob requests, pod sets and states (pure): what Kueue 0.19 builds from Trainer v2.2.1's
runtime code, and the states jupyter_dw shows. The real controllers are in
tests/integration/test_trainjobs.py."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar

import pytest

from jupyter_dw.domain.cluster_spec import SpecError
from jupyter_dw.domain.kinds.trainjob import (
    MAX_TRAINJOB_NAME_LENGTH,
    ValidatedTrainJob,
    runtime_pod_sets,
    trainjob_info,
)

GIB = Decimal(2**30)


def runtime(*jobs: dict[str, Any], nodes: int | None = 1) -> dict[str, Any]:
    policy = {"torch": {}} if nodes is None else {"numNodes": nodes, "torch": {}}
    return {"spec": {"mlPolicy": policy, "template": {"spec": {"replicatedJobs": list(jobs)}}}}


def step(name: str, ancestor: str | None, *containers: dict[str, Any], **pod: Any) -> dict:
    labels = {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor} if ancestor else {}
    return {
        "name": name,
        "template": {
            "metadata": {"labels": labels},
            "spec": {"template": {"spec": {"containers": list(containers), **pod}}},
        },
    }


def container(name: str, **requests: str) -> dict[str, Any]:
    return {"name": name, "image": "x", "resources": {"requests": requests}}


def parse(**fields: Any) -> ValidatedTrainJob:
    base = {"name": "tj", "runtime": "torch-distributed"}
    return ValidatedTrainJob.from_request({**base, **fields}, ["team"], "team")


def test_the_trainer_step_counts_num_nodes_pods_of_resources_per_node():
    torch = runtime(step("node", "trainer", container("node", cpu="8")), nodes=1)
    job = parse(num_nodes=3, resources_per_node={"cpu": "2", "memory": "4Gi", "gpu": 1})
    [pod_set] = job.pod_sets(torch)
    assert (pod_set.name, pod_set.count) == ("node", 3)
    assert dict(pod_set.per_pod) == {
        "cpu": Decimal(2),
        "memory": 4 * GIB,
        "nvidia.com/gpu": Decimal(1),
    }


def test_without_overrides_the_runtimes_own_shape_counts():
    torch = runtime(step("node", "trainer", container("node", cpu="500m")), nodes=4)
    [pod_set] = parse().pod_sets(torch)
    assert (pod_set.count, dict(pod_set.per_pod)) == (4, {"cpu": Decimal("0.5")})


def test_other_steps_count_replicas_times_parallelism_with_init_containers():
    # An initializer step (not the trainer's) keeps its own shape; an init container larger
    # than the containers raises the pod's requests (Kubernetes' rule, which Kueue uses).
    init = step(
        "dataset-initializer",
        "dataset-initializer",
        container("init", cpu="1"),
        initContainers=[container("fetch", cpu="3")],
    )
    init["replicas"] = 2
    init["template"]["spec"]["parallelism"] = 2
    sets = parse(num_nodes=2).pod_sets(
        runtime(init, step("node", "trainer", container("node", cpu="1")))
    )
    assert [(s.name, s.count, dict(s.per_pod)) for s in sets] == [
        ("dataset-initializer", 4, {"cpu": Decimal(3)}),
        ("node", 2, {"cpu": Decimal(1)}),
    ]


def test_the_trainjob_is_created_suspended_with_its_queue_and_overrides():
    job = parse(
        num_nodes=2,
        resources_per_node={"cpu": 1, "memory": "1Gi"},
        command=["torchrun", "train.py"],
        priority=None,
    )
    obj = job.to_trainjob("ns", owner="system:serviceaccount:ns:wb")
    assert obj["spec"]["suspend"] is True
    assert obj["spec"]["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
        "name": "torch-distributed",
    }
    assert obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team"
    resources = obj["spec"]["trainer"]["resourcesPerNode"]
    assert resources["requests"] == resources["limits"] == {"cpu": "1", "memory": "1Gi"}
    assert obj["spec"]["trainer"]["command"] == ["torchrun", "train.py"]
    # Who made it reads back as its record's owner, as a cluster's does (the sidebar's "mine").
    assert trainjob_info(obj, None).owner == "system:serviceaccount:ns:wb"
    assert trainjob_info(job.to_trainjob("ns"), None).to_json()["owner"] is None
    # The JSON form reads back to the same job.
    again = ValidatedTrainJob.from_request(job.to_json(), ["team"], "team")
    assert again == job


def test_every_bad_field_is_named_at_once():
    with pytest.raises(SpecError) as caught:
        ValidatedTrainJob.from_request(
            {
                "name": "x" * (MAX_TRAINJOB_NAME_LENGTH + 1),
                "num_nodes": True,
                "resources_per_node": {"cpu": "0", "gpu": "1.5"},
                "command": ["ok", 3],
                "image": "has space",
                "replica": 2,
            },
            ["team"],
            None,
        )
    errors = caught.value.errors
    assert set(errors) == {
        "name",
        "queue",
        "runtime",
        "num_nodes",
        "resources_per_node",
        "command",
        "image",
        "replica",
    }
    assert "at most 40 characters" in errors["name"]
    assert errors["runtime"].startswith("required")
    assert "known fields" in errors["replica"]


def _workload(state: str) -> Any:
    class Fake:
        name = "w"
        position_in_local_queue = 0 if state == "queued" else None
        position_in_cluster_queue = None
        reason = "Pending" if state == "queued" else "Admitted"
        message = "waiting" if state == "queued" else None
        admitted_at = None
        resources: ClassVar[dict[str, Any]] = {}
        requests: ClassVar[dict[str, Any]] = {}
        placement = None

    fake = Fake()
    fake.state = state  # type: ignore[attr-defined]
    return fake


def trainjob(suspend: bool = True, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "tj", "namespace": "ns", "labels": {}},
        "spec": {"suspend": suspend, "runtimeRef": {"name": "torch-distributed"}},
        "status": status,
    }


@pytest.mark.parametrize(
    ("obj", "record", "state"),
    [
        (trainjob(), None, "queued"),
        (trainjob(), "queued", "queued"),
        (trainjob(), "admitted", "admitted"),
        (trainjob(suspend=False), "admitted", "starting"),
        (trainjob(suspend=False, jobsStatus=[{"name": "node", "ready": 1}]), "admitted", "running"),
        (
            trainjob(suspend=False, conditions=[{"type": "Complete", "status": "True"}]),
            "admitted",
            "succeeded",
        ),
        (
            trainjob(
                suspend=False,
                conditions=[
                    {"type": "Failed", "status": "True", "reason": "X", "message": "it broke"}
                ],
            ),
            "admitted",
            "failed",
        ),
    ],
)
def test_states_kueue_first_then_trainer(obj, record, state):
    info = trainjob_info(obj, _workload(record) if record else None)
    assert info.state == state
    assert info.final is (state in ("succeeded", "failed"))
    shown = info.to_json()
    assert shown["runtime"] == "torch-distributed" and shown["state"] == state
    if state == "queued" and record:
        assert shown["position_in_local_queue"] == 0 and info.reason == "Pending"
    if state == "failed":
        assert (info.reason, info.message) == ("X", "it broke")


def test_pod_sets_with_no_runtime_shape_are_empty():
    assert runtime_pod_sets({}) == ()
