"""examples/admission-policy on the real API server: the ValidatingAdmissionPolicy refuses
RayClusters over the limits or with an image not allowed, whoever creates them (here the
workbench's own service account, as a kernel or terminal would), and lets a good one through.

The example files are applied as shipped, with the team's names changed so that concurrent
runs on a shared control plane cannot meet (policy and binding named after the test
namespace, the binding selecting it) and the ``limits`` variable set to ``LIMITS``.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec

pytestmark = pytest.mark.cluster

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "admission-policy"
LIMITS = {
    "allowedImages": "rayproject/ray:, quay.io/team-a/",
    "maxWorkers": "4",
    "maxWorkerCPU": "4",
    "maxWorkerMemory": "8Gi",
    "maxWorkerGPU": "1",
    "maxHeadCPU": "2",
    "maxHeadMemory": "4Gi",
}
RAY_RULES = [
    {
        "apiGroups": ["ray.io"],
        "resources": ["rayclusters"],
        "verbs": ["get", "list", "create", "update", "patch", "delete"],
    }
]
ENFORCED_TIMEOUT = 60.0


def documents(name: str) -> list[dict[str, Any]]:
    with (EXAMPLE / name).open() as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc]


def good_raycluster(name: str = "good") -> dict[str, Any]:
    """What jupyter_dw itself creates, within the limits."""
    spec = ValidatedClusterSpec.from_request(
        {
            "name": name,
            "queue": "team-a",
            "image": "rayproject/ray:2.60.0",
            "workers": 2,
            "worker_cpu": "2",
            "worker_memory": "4Gi",
            "head_cpu": "1",
            "head_memory": "2Gi",
        }
    )
    return spec.to_raycluster("placeholder")


def worker(body: dict[str, Any]) -> dict[str, Any]:
    return body["spec"]["workerGroupSpecs"][0]


def container(pod_group: dict[str, Any]) -> dict[str, Any]:
    return pod_group["template"]["spec"]["containers"][0]


def head(body: dict[str, Any]) -> dict[str, Any]:
    return body["spec"]["headGroupSpec"]


def variant(change) -> dict[str, Any]:
    body = copy.deepcopy(good_raycluster("bad"))
    change(body)
    return body


def set_resource(group: dict[str, Any], resource: str, value: Any) -> None:
    resources = container(group)["resources"]
    resources.setdefault("requests", {})[resource] = value
    resources.setdefault("limits", {})[resource] = value


def sidecar(group: dict[str, Any], cpu: str, image: str = "rayproject/ray:2.9.0") -> None:
    group["template"]["spec"]["containers"].append(
        {"name": "sidecar", "image": image, "resources": {"requests": {"cpu": cpu}}}
    )


BAD = {
    "worker image": lambda b: container(worker(b)).update(image="docker.io/evil/miner:1"),
    "head image": lambda b: container(head(b)).update(image="evil.example/ray:2.9.0"),
    "init container image": lambda b: worker(b)["template"]["spec"].update(
        initContainers=[{"name": "init", "image": "busybox"}]
    ),
    "image prefix in the middle": lambda b: container(worker(b)).update(
        image="evil.example/rayproject/ray:2.9.0"
    ),
    "workers": lambda b: worker(b).update(replicas=5, minReplicas=5, maxReplicas=5),
    "max replicas": lambda b: worker(b).update(maxReplicas=5),
    "multi-host workers": lambda b: worker(b).update(numOfHosts=3),
    "second worker group": lambda b: b["spec"]["workerGroupSpecs"].append(
        {**copy.deepcopy(worker(b)), "groupName": "more", "replicas": 3, "maxReplicas": 3}
    ),
    "worker cpu": lambda b: set_resource(worker(b), "cpu", "4500m"),
    "worker cpu as an integer": lambda b: set_resource(worker(b), "cpu", 5),
    "worker cpu over two containers": lambda b: sidecar(worker(b), "3"),
    "worker memory": lambda b: set_resource(worker(b), "memory", "9Gi"),
    "worker memory in other units": lambda b: set_resource(worker(b), "memory", "9000M"),
    "worker gpu": lambda b: set_resource(worker(b), "nvidia.com/gpu", "2"),
    "worker cpu limit only": lambda b: container(worker(b))["resources"]["limits"].update(cpu="8"),
    "head cpu": lambda b: set_resource(head(b), "cpu", "3"),
    "head memory": lambda b: set_resource(head(b), "memory", "5Gi"),
}


def cel_literal(limits: dict[str, str]) -> str:
    """``limits`` as a CEL map literal (JSON strings are CEL strings)."""
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in limits.items()) + "}"


@pytest.fixture
def policy(kube: client.ApiClient, namespace: str) -> Iterator[str]:
    """The example policy and binding for the test namespace, with ``LIMITS``; yields the
    policy's name."""
    admission = client.AdmissionregistrationV1Api(kube)
    [vap] = documents("policy.yaml")
    [binding] = documents("binding.yaml")
    assert binding["spec"]["policyName"] == vap["metadata"]["name"]
    [limits] = [v for v in vap["spec"]["variables"] if v["name"] == "limits"]
    assert "'maxWorkers'" in limits["expression"]  # the shipped example sets limits
    limits["expression"] = cel_literal(LIMITS)

    name = f"jupyter-dw-raycluster-limits-{namespace}"
    vap["metadata"]["name"] = binding["metadata"]["name"] = name
    binding["spec"]["policyName"] = name
    binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] = {
        "kubernetes.io/metadata.name": namespace
    }
    admission.create_validating_admission_policy(vap)
    admission.create_validating_admission_policy_binding(binding)
    yield name
    admission.delete_validating_admission_policy_binding(name)
    admission.delete_validating_admission_policy(name)


@pytest.fixture
def as_workbench(workbench) -> client.CustomObjectsApi:
    """The RayCluster API as the workbench's service account (a kernel's identity)."""
    return client.CustomObjectsApi(workbench(rules=RAY_RULES).api_client())


def create(api: client.CustomObjectsApi, namespace: str, body: dict[str, Any], **kw: Any) -> Any:
    body = {**body, "metadata": {**body["metadata"], "namespace": namespace}}
    return api.create_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", body, **kw)


def refusal(call) -> tuple[int, str]:
    with pytest.raises(client.ApiException) as refused:
        call()
    return refused.value.status, json.loads(refused.value.body)["message"]


def wait_enforced(api: client.CustomObjectsApi, namespace: str) -> None:
    """Policies and bindings reach the API server's admission chain asynchronously: wait
    (polling a server-side dry run) until a RayCluster with a disallowed image is refused by
    the policy's own rule."""
    probe = variant(BAD["worker image"])
    deadline = time.monotonic() + ENFORCED_TIMEOUT
    while True:
        try:
            create(api, namespace, probe, dry_run="All")
        except client.ApiException as err:
            if err.status == 403 and "images must start with" in err.body:
                return
            raise
        if time.monotonic() > deadline:
            pytest.fail(f"the policy was not enforced within {ENFORCED_TIMEOUT}s")
        time.sleep(0.2)  # polling the condition: the policy refusing


def test_the_policy_type_checks(kube, policy):
    admission = client.AdmissionregistrationV1Api(kube)
    name = policy
    deadline = time.monotonic() + ENFORCED_TIMEOUT
    while True:
        status = admission.read_validating_admission_policy(name).status
        if status is not None and status.observed_generation:
            break
        if time.monotonic() > deadline:
            pytest.fail("the API server did not type-check the policy")
        time.sleep(0.2)  # polling the condition: the status being written
    warnings = status.type_checking.expression_warnings if status.type_checking else None
    assert not warnings, [w.warning for w in warnings]


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_raycluster_over_the_limits_is_refused(kube, policy, namespace, as_workbench, case):
    wait_enforced(as_workbench, namespace)
    status, message = refusal(lambda: create(as_workbench, namespace, variant(BAD[case])))

    assert status == 403
    assert "ValidatingAdmissionPolicy" in message and "RayCluster bad" in message, message
    listing = client.CustomObjectsApi(kube).list_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters"
    )
    assert listing["items"] == []


def test_a_good_raycluster_is_created_and_cannot_be_grown(kube, policy, namespace, as_workbench):
    wait_enforced(as_workbench, namespace)
    created = create(as_workbench, namespace, good_raycluster())
    assert created["metadata"]["name"] == "good"

    # Growing it afterwards is checked too (UPDATE), whatever the client.
    status, message = refusal(
        lambda: as_workbench.patch_namespaced_custom_object(
            "ray.io",
            "v1",
            namespace,
            "rayclusters",
            "good",
            {"spec": {"workerGroupSpecs": [{**worker(created), "replicas": 9, "maxReplicas": 9}]}},
        )
    )
    assert status == 403 and "at most 4 workers" in message, message


def test_other_namespaces_are_not_bound(kube, policy, namespace, as_workbench):
    wait_enforced(as_workbench, namespace)
    core = client.CoreV1Api(kube)
    other = f"{namespace}-other"
    core.create_namespace({"metadata": {"name": other}})
    try:
        created = create(client.CustomObjectsApi(kube), other, variant(BAD["workers"]))
        assert created["metadata"]["namespace"] == other
    finally:
        core.delete_namespace(other)
