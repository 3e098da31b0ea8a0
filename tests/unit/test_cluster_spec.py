import dataclasses
import functools
import re
from decimal import Decimal
from typing import Any

import jsonschema
import pytest
import yaml

from jupyter_dw.domain.cluster_spec import (
    DEFAULT_RAY_IMAGE,
    ELASTIC_JOB_ANNOTATION,
    FIELDS,
    GPU_RESOURCE,
    MANAGED_BY_LABEL,
    OWNER_ANNOTATION,
    OWNER_LABEL,
    QUEUE_LABEL,
    REQUEST_ERROR_KEY,
    SpecError,
    SpecPolicy,
    ValidatedClusterSpec,
    owner_label_value,
)
from jupyter_dw.domain.validation import env_name_error, label_key_error, label_value_error
from tests.cluster.versions import Versions

GI = 2**30
# The CRD and sample of the KubeRay version the test cluster runs, from the Go module cache
# (tests/cluster/build.sh downloads it; `make test` runs that first).
KUBERAY_SOURCE = Versions.selected().source("kuberay")
RAYCLUSTER_CRD = KUBERAY_SOURCE / "config" / "crd" / "bases" / "ray.io_rayclusters.yaml"
RAYCLUSTER_SAMPLES = (KUBERAY_SOURCE / "config" / "samples" / "ray-cluster.sample.yaml",)
QUEUES = ("user-queue", "team-a")
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


def build(data: dict[str, Any] | None = None, policy: SpecPolicy | None = None, **kw: Any):
    """from_request with a valid base request (name + known queue) and ``data`` on top."""
    request = {"name": "demo", "queue": "user-queue", **(data or {})}
    kw.setdefault("known_queues", QUEUES)
    return ValidatedClusterSpec.from_request(request, policy or SpecPolicy(), **kw)


def errors_of(data: dict[str, Any], policy: SpecPolicy | None = None, **kw: Any) -> dict:
    with pytest.raises(SpecError) as info:
        build(data, policy, **kw)
    return info.value.errors


def head_container(obj: dict) -> dict:
    return obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]


def worker_group(obj: dict) -> dict:
    (group,) = obj["spec"]["workerGroupSpecs"]
    return group


def worker_container(obj: dict) -> dict:
    return worker_group(obj)["template"]["spec"]["containers"][0]


# --- the RayCluster object -------------------------------------------------------------------


def test_raycluster_is_suspended_and_queued():
    obj = build({"workers": 3}).to_raycluster("ns1")
    assert obj["apiVersion"] == "ray.io/v1"
    assert obj["kind"] == "RayCluster"
    assert obj["metadata"]["name"] == "demo"
    assert obj["metadata"]["namespace"] == "ns1"
    assert obj["metadata"]["labels"][QUEUE_LABEL] == "user-queue"
    assert obj["metadata"]["labels"][MANAGED_BY_LABEL] == "jupyter-dw"
    assert obj["spec"]["suspend"] is True
    assert obj["spec"]["enableInTreeAutoscaling"] is False
    group = worker_group(obj)
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (3, 3, 3)
    # Kueue reserves the PodSet name "head" for the head group.
    assert group["groupName"] != "head"


def test_requests_equal_limits_and_no_gpu_unless_asked():
    spec = build({"head_cpu": "500m", "head_memory": "3Gi", "worker_cpu": 2, "worker_memory": "8G"})
    obj = spec.to_raycluster("ns1")
    head, worker = head_container(obj)["resources"], worker_container(obj)["resources"]
    assert head["requests"] == head["limits"] == {"cpu": "500m", "memory": "3Gi"}
    assert worker["requests"] == worker["limits"] == {"cpu": "2", "memory": "8G"}


def test_gpu_in_worker_requests_and_limits_only():
    obj = build({"worker_gpu": 2}).to_raycluster("ns1")
    worker = worker_container(obj)["resources"]
    assert worker["requests"][GPU_RESOURCE] == worker["limits"][GPU_RESOURCE] == "2"
    assert GPU_RESOURCE not in head_container(obj)["resources"]["limits"]


def test_head_ports_and_dashboard_host():
    obj = build().to_raycluster("ns1")
    ports = {port["name"]: port["containerPort"] for port in head_container(obj)["ports"]}
    assert ports == {"gcs-server": 6379, "dashboard": 8265, "client": 10001}
    assert obj["spec"]["headGroupSpec"]["rayStartParams"] == {"dashboard-host": "0.0.0.0"}
    assert "ports" not in worker_container(obj)


def test_image_and_env_on_every_container():
    request = {"image": "quay.io/me/ray:x", "ray_version": "2.60.0", "env": {"A": "1", "B": ""}}
    obj = build(request).to_raycluster("ns1")
    for container in (head_container(obj), worker_container(obj)):
        assert container["image"] == "quay.io/me/ray:x"
        assert container["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": ""}]


def test_no_env_key_without_env():
    obj = build().to_raycluster("ns1")
    assert "env" not in head_container(obj)
    assert "env" not in worker_container(obj)


def test_owner_label_and_full_identity_annotation():
    identity = "system:serviceaccount:team-a:notebook"
    obj = build().to_raycluster("ns1", owner=identity)
    assert obj["metadata"]["labels"][OWNER_LABEL] == owner_label_value(identity)
    assert obj["metadata"]["annotations"][OWNER_ANNOTATION] == identity


def test_no_owner_means_no_owner_label_or_annotation():
    obj = build().to_raycluster("ns1", owner=None)
    assert OWNER_LABEL not in obj["metadata"]["labels"]
    assert "annotations" not in obj["metadata"]


def test_user_labels_and_priority_on_the_raycluster():
    obj = build({"labels": {"team": "nlp"}, "priority": "high"}).to_raycluster("ns1")
    assert obj["metadata"]["labels"]["team"] == "nlp"
    assert obj["metadata"]["labels"][PRIORITY_LABEL] == "high"


def test_no_priority_means_no_priority_label():
    spec = build()
    assert spec.priority is None and spec.to_json()["priority"] is None
    assert PRIORITY_LABEL not in spec.to_raycluster("ns1")["metadata"]["labels"]


def test_autoscaling_cluster_is_an_elastic_job():
    policy = SpecPolicy(elastic_jobs=True)
    obj = build({"workers": 2, "min_workers": 1, "max_workers": 5}, policy).to_raycluster("ns1")
    assert obj["metadata"]["annotations"][ELASTIC_JOB_ANNOTATION] == "true"
    assert obj["spec"]["enableInTreeAutoscaling"] is True
    group = worker_group(obj)
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (2, 1, 5)


def test_fixed_size_cluster_has_no_elastic_annotation_even_when_allowed():
    obj = build({"workers": 2}, SpecPolicy(elastic_jobs=True)).to_raycluster("ns1")
    assert ELASTIC_JOB_ANNOTATION not in obj["metadata"].get("annotations", {})


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("rayproject/ray:2.60.0", "2.60.0"),
        ("rayproject/ray:2.52.1-py312-gpu", "2.52.1"),
        ("quay.io/project-codeflare/ray:2.52.0-py311-cu121", "2.52.0"),
        ("rayproject/ray-ml:2.55.0@sha256:" + "0" * 64, "2.55.0"),
    ],
)
def test_ray_version_from_image_tag(image, version):
    spec = build({"image": image})
    assert spec.ray_version == version
    assert spec.to_raycluster("ns1")["spec"]["rayVersion"] == version


@pytest.mark.parametrize("image", ["rayproject/ray:latest", "quay.io/me/custom:2.0.0"])
def test_another_image_needs_a_ray_version_and_gets_it(image):
    errors = errors_of({"image": image})
    assert set(errors) == {"ray_version"}
    assert "required" in errors["ray_version"] and "2.52.0 or newer" in errors["ray_version"]
    spec = build({"image": image, "ray_version": "2.53.1"})
    assert spec.to_raycluster("ns1")["spec"]["rayVersion"] == "2.53.1"
    assert spec.to_json()["ray_version"] == "2.53.1"


@pytest.mark.parametrize(
    ("mode", "data", "field", "words"),
    [
        ("token", {"image": "rayproject/ray:2.51.2"}, "image", "older than 2.52.0"),
        ("token", {"image": "quay.io/x/y:1", "ray_version": "2.9.3"}, "ray_version", "2.52.0"),
        ("k8s", {"image": "rayproject/ray:2.54.0"}, "image", "older than 2.55.0"),
        ("k8s", {"image": "quay.io/x/y:1", "ray_version": "2.54.9"}, "ray_version", "2.55.0"),
        ("token", {"ray_version": "two"}, "ray_version", "not a Ray version"),
        ("token", {"ray_version": 2.6}, "ray_version", "must be a string"),
        ("token", {"ray_version": "2.59.0"}, "ray_version", "does not match the image's tag"),
    ],
)
def test_a_ray_version_the_auth_mode_cannot_run_is_a_field_error(mode, data, field, words):
    errors = errors_of(data, SpecPolicy(ray_auth=mode))
    assert set(errors) == {field}, errors
    assert words in errors[field]


def test_disabled_auth_accepts_any_ray_version_and_says_so_in_every_container():
    spec = build({"image": "rayproject/ray:2.9.3"}, SpecPolicy(ray_auth="disabled"))
    obj = spec.to_raycluster("ns1")
    assert obj["spec"]["rayVersion"] == "2.9.3"
    assert obj["spec"]["authOptions"] == {"mode": "disabled"}
    for container in (head_container(obj), worker_container(obj)):
        assert {"name": "RAY_AUTH_MODE", "value": "disabled"} in container["env"]


@pytest.mark.parametrize(
    ("mode", "options"),
    [
        ("token", {"mode": "token"}),
        ("k8s", {"mode": "token", "enableK8sTokenAuth": True}),
    ],
)
def test_auth_options_follow_the_mode_and_kuberay_sets_the_rest(mode, options):
    obj = build({}, SpecPolicy(ray_auth=mode)).to_raycluster("ns1")
    assert obj["spec"]["authOptions"] == options
    assert obj["spec"]["rayVersion"] == "2.60.0"
    # KubeRay adds RAY_AUTH_MODE/RAY_AUTH_TOKEN (or the k8s token volume) itself.
    for container in (head_container(obj), worker_container(obj)):
        assert "env" not in container


def test_without_auth_options_in_the_schema_none_are_sent():
    obj = build().to_raycluster("ns1", auth_options_served=False)
    assert "authOptions" not in obj["spec"]
    assert obj["spec"]["rayVersion"] == "2.60.0"


@pytest.mark.parametrize("name", ["RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_ENABLE_K8S_TOKEN_AUTH"])
def test_env_may_not_set_rays_authentication(name):
    errors = errors_of({"env": {name: "disabled"}})
    assert set(errors) == {"env"} and "ray_auth" in errors["env"]


@pytest.mark.parametrize(
    ("image", "mode"),
    [("rayproject/ray:2.47.1", "token"), ("rayproject/ray:2.52.0", "k8s")],
)
def test_a_default_image_too_old_for_the_mode_is_a_policy_error(image, mode):
    with pytest.raises(ValueError, match="default_image"):
        SpecPolicy(default_image=image, ray_auth=mode)


def test_an_unknown_auth_mode_is_a_policy_error():
    with pytest.raises(ValueError, match="ray_auth"):
        SpecPolicy(ray_auth="none")


@pytest.mark.parametrize("namespace", ["", "Bad_NS", "a" * 64, None])
def test_invalid_namespace_is_a_value_error(namespace):
    with pytest.raises(ValueError, match="namespace"):
        build().to_raycluster(namespace)


# --- the object against the pinned KubeRay CRD schema ----------------------------------------


@functools.cache
def _rayclusters_v1_schema() -> dict:
    # Cached: parsing the 17,000-line CRD takes seconds.
    assert RAYCLUSTER_CRD.exists(), f"{RAYCLUSTER_CRD} missing: run tests/cluster/build.sh"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load(RAYCLUSTER_CRD.read_text(), Loader=loader)  # a safe loader either way
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version["schema"]["openAPIV3Schema"]


def unknown_fields(obj: Any, schema: dict, path: str = "") -> list[str]:
    """Paths of fields the schema does not declare: the API server would silently prune them."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    found: list[str] = []
    if isinstance(obj, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, value in obj.items():
            if properties is not None and key in properties:
                found += unknown_fields(value, properties[key], f"{path}.{key}")
            elif isinstance(extra, dict):
                found += unknown_fields(value, extra, f"{path}.{key}")
            elif properties is not None:
                found.append(f"{path}.{key}")
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(obj):
            found += unknown_fields(item, schema["items"], f"{path}[{index}]")
    return found


SCHEMA_CASES = {
    "plain": ({}, SpecPolicy()),
    "gpu": ({"worker_gpu": 1, "env": {"A": "b"}, "labels": {"team": "x"}}, SpecPolicy()),
    "elastic": ({"min_workers": 0, "max_workers": 4}, SpecPolicy(elastic_jobs=True)),
    "head-only": ({"workers": 0}, SpecPolicy()),
    "k8s-auth": ({}, SpecPolicy(ray_auth="k8s")),
    "auth-disabled": ({"env": {"A": "b"}}, SpecPolicy(ray_auth="disabled")),
}


@pytest.mark.parametrize("case", sorted(SCHEMA_CASES))
def test_raycluster_validates_against_crd_schema(case):
    schema = _rayclusters_v1_schema()
    data, policy = SCHEMA_CASES[case]
    obj = build(data, policy).to_raycluster("ns1", owner="alice@example.com")
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(obj)]
    assert errors == []
    assert unknown_fields(obj, schema) == []


def test_unknown_field_check_accepts_upstream_samples_and_catches_a_typo():
    schema = _rayclusters_v1_schema()
    for sample in RAYCLUSTER_SAMPLES:
        obj = yaml.safe_load(sample.read_text())
        assert unknown_fields(obj, schema) == [], sample
    typo = build().to_raycluster("ns1")
    typo["spec"]["workerGroupSpecs"][0]["minReplica"] = 1
    assert unknown_fields(typo, schema) == [".spec.workerGroupSpecs[0].minReplica"]


# --- defaults ---------------------------------------------------------------------------------

CUSTOM_POLICY = SpecPolicy(
    default_image="quay.io/team/ray:2.60.0",
    default_head_cpu="2",
    default_head_memory="6Gi",
    default_worker_cpu="4",
    default_worker_memory="16Gi",
    default_worker_gpu=1,
    default_workers=3,
)


def test_defaults_come_from_the_policy():
    spec = ValidatedClusterSpec.from_request({"name": "demo"}, CUSTOM_POLICY, QUEUES, "team-a")
    assert spec.queue == "team-a"
    assert spec.image == "quay.io/team/ray:2.60.0"
    assert (spec.head_cpu, spec.head_memory) == (Decimal(2), Decimal(6 * GI))
    assert (spec.worker_cpu, spec.worker_memory) == (Decimal(4), Decimal(16 * GI))
    assert spec.worker_gpu == 1
    assert (spec.workers, spec.min_workers, spec.max_workers) == (3, 3, 3)
    assert dict(spec.env) == {} and dict(spec.labels) == {}


def test_built_in_defaults():
    spec = build()
    assert spec.image == DEFAULT_RAY_IMAGE
    assert (spec.workers, spec.worker_gpu) == (1, 0)
    assert spec.head_cpu > 0 and spec.worker_memory >= GI


def test_none_and_empty_queue_mean_omitted():
    spec = build(
        {"queue": "", "workers": None, "image": None}, CUSTOM_POLICY, default_queue="team-a"
    )
    assert spec.queue == "team-a"
    assert spec.workers == 3
    assert spec.image == CUSTOM_POLICY.default_image


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ({"min_workers": 5, "max_workers": 8}, (5, 5, 8)),  # default 3 raised to the floor
        ({"min_workers": 0, "max_workers": 2}, (2, 0, 2)),  # default 3 lowered to the ceiling
        ({"max_workers": 6}, (3, 3, 6)),  # min defaults to workers
        ({"min_workers": 1}, (3, 1, 3)),  # max defaults to workers
    ],
)
def test_omitted_workers_default_within_given_bounds(bounds, expected):
    policy = dataclasses.replace(CUSTOM_POLICY, elastic_jobs=True)
    spec = build(bounds, policy)
    assert (spec.workers, spec.min_workers, spec.max_workers) == expected


def test_quantities_and_counts_accept_numbers_and_strings():
    spec = build(
        {
            "worker_cpu": 1.5,
            "head_cpu": " 250m ",
            "worker_memory": 3 * GI,
            "head_memory": "1e9",
            "worker_gpu": "2",
            "workers": "4",
            "max_workers": 4.0,
        }
    )
    assert spec.worker_cpu == Decimal("1.5")
    assert spec.head_cpu == Decimal("0.25")
    assert spec.worker_memory == Decimal(3 * GI)
    assert spec.head_memory == Decimal(10**9)
    assert (spec.worker_gpu, spec.workers, spec.max_workers) == (2, 4, 4)


def test_zero_workers_is_a_head_only_cluster():
    spec = build({"workers": 0})
    assert (spec.workers, spec.min_workers, spec.max_workers) == (0, 0, 0)


def test_name_of_53_characters_is_accepted():
    assert build({"name": "a" * 53}).name == "a" * 53


def test_known_queues_none_skips_the_existence_check():
    assert build({"queue": "anything"}, known_queues=None).queue == "anything"


# --- validation: one bad input at a time --------------------------------------------------------

LIMITS = SpecPolicy(
    max_workers=4,
    max_head_cpu="4",
    max_head_memory="8Gi",
    max_worker_cpu="8",
    max_worker_memory="32Gi",
    max_worker_gpu=2,
    allowed_images=("rayproject/ray:", "quay.io/team/*"),
)

BAD_INPUTS = [
    # (case id, request changes, policy, field, message fragment)
    ("name-missing", {"name": None}, None, "name", "required"),
    ("name-not-str", {"name": 5}, None, "name", "must be a string"),
    ("name-upper", {"name": "My_Ray"}, None, "name", "did you mean 'my-ray'"),
    ("name-digit-first", {"name": "1ray"}, None, "name", "must start with a letter"),
    ("name-too-long", {"name": "a" * 54}, None, "name", "the limit is 53"),
    ("name-trailing-dash", {"name": "ray-"}, None, "name", "end with a letter or digit"),
    ("name-newline", {"name": "ray\n"}, None, "name", "lower-case letters"),
    ("queue-unknown", {"queue": "nope"}, None, "queue", "no LocalQueue 'nope'"),
    ("queue-bad-name", {"queue": "Bad_Q"}, None, "queue", "not a valid LocalQueue name"),
    ("queue-not-str", {"queue": 3}, None, "queue", "must be a string"),
    ("queue-omitted-no-default", {"queue": None}, None, "queue", "no default LocalQueue"),
    ("head-cpu-garbage", {"head_cpu": "lots"}, None, "head_cpu", "not a Kubernetes quantity"),
    ("head-cpu-zero", {"head_cpu": 0}, None, "head_cpu", "more than 0 CPUs"),
    ("worker-cpu-negative", {"worker_cpu": "-1"}, None, "worker_cpu", "more than 0 CPUs"),
    ("worker-cpu-too-fine", {"worker_cpu": "0.0001"}, None, "worker_cpu", "millicore"),
    ("worker-cpu-bool", {"worker_cpu": True}, None, "worker_cpu", "not a quantity"),
    ("memory-milli", {"worker_memory": "500m"}, None, "worker_memory", "did you mean '500Mi'"),
    ("memory-plain-number", {"head_memory": 4}, None, "head_memory", "did you mean '4Gi'"),
    ("memory-zero", {"worker_memory": "0"}, None, "worker_memory", "more than 0 bytes"),
    ("memory-garbage", {"worker_memory": "8 GB"}, None, "worker_memory", "not a Kubernetes"),
    ("gpu-fraction", {"worker_gpu": "0.5"}, None, "worker_gpu", "whole number of GPUs"),
    ("gpu-negative", {"worker_gpu": -1}, None, "worker_gpu", "whole number of GPUs"),
    ("workers-negative", {"workers": -1}, None, "workers", "0 or more"),
    ("workers-word", {"workers": "three"}, None, "workers", "whole number"),
    ("workers-bool", {"workers": True}, None, "workers", "whole number"),
    ("workers-fraction", {"workers": 2.5}, None, "workers", "whole number"),
    ("workers-int32", {"workers": 2**31}, None, "workers", "too large"),
    (
        "min-over-workers",
        {"workers": 2, "min_workers": 3},
        None,
        "min_workers",
        "more than workers",
    ),
    (
        "max-under-workers",
        {"workers": 2, "max_workers": 1},
        None,
        "max_workers",
        "less than workers",
    ),
    ("min-over-max", {"min_workers": 3, "max_workers": 2}, None, "min_workers", "max_workers (2)"),
    ("autoscale-max", {"workers": 1, "max_workers": 3}, None, "max_workers", "elastic jobs"),
    ("autoscale-min", {"workers": 3, "min_workers": 1}, None, "min_workers", "elastic jobs"),
    ("limit-workers", {"workers": 5}, LIMITS, "workers", "limit of 4 workers"),
    ("limit-max-workers", {"max_workers": 9}, LIMITS, "max_workers", "limit of 4 workers"),
    ("limit-worker-cpu", {"worker_cpu": 9}, LIMITS, "worker_cpu", "8 CPUs per worker"),
    ("limit-worker-mem", {"worker_memory": "33Gi"}, LIMITS, "worker_memory", "32Gi per worker"),
    ("limit-worker-gpu", {"worker_gpu": 3}, LIMITS, "worker_gpu", "2 GPUs per worker"),
    ("limit-head-cpu", {"head_cpu": "4001m"}, LIMITS, "head_cpu", "4 CPUs for the head"),
    ("limit-head-mem", {"head_memory": "9Gi"}, LIMITS, "head_memory", "8Gi for the head"),
    ("image-not-allowed", {"image": "docker.io/evil/ray:1"}, LIMITS, "image", "not allowed"),
    ("image-prefix-is-exact", {"image": "rayproject/ray-evil:1"}, LIMITS, "image", "not allowed"),
    ("image-empty", {"image": "  "}, None, "image", "must not be empty"),
    ("image-space", {"image": "ray project"}, None, "image", "spaces"),
    ("image-not-str", {"image": ["x"]}, None, "image", "must be a string"),
    ("env-not-mapping", {"env": ["A=1"]}, None, "env", "mapping of variable names"),
    ("env-bad-name", {"env": {"1A": "x"}}, None, "env", "'1A' is not a valid variable name"),
    ("env-dash-name", {"env": {"MY-VAR": "x"}}, None, "env", "not a valid variable name"),
    ("env-non-str-value", {"env": {"THREADS": 4}}, None, "env", "must be a string, got 4"),
    ("env-redis", {"env": {"RAY_REDIS_ADDRESS": "r:6379"}}, None, "env", "GCS fault tolerance"),
    (
        "env-autoscaler-v2",
        {"env": {"RAY_enable_autoscaler_v2": "1"}},
        None,
        "env",
        "autoscaler v2",
    ),
    ("labels-not-mapping", {"labels": "team=x"}, None, "labels", "mapping of label keys"),
    ("labels-bad-key", {"labels": {"-team": "x"}}, None, "labels", "label key '-team'"),
    ("labels-bad-prefix", {"labels": {"Bad_Prefix/k": "x"}}, None, "labels", "invalid prefix"),
    ("labels-bad-value", {"labels": {"team": "a b"}}, None, "labels", "label value 'a b'"),
    ("labels-long-value", {"labels": {"team": "a" * 64}}, None, "labels", "longer than 63"),
    ("labels-non-str", {"labels": {"team": 1}}, None, "labels", "must be a string"),
    ("labels-queue", {"labels": {QUEUE_LABEL: "q"}}, None, "labels", "'queue' field"),
    ("labels-managed-by", {"labels": {MANAGED_BY_LABEL: "me"}}, None, "labels", "jupyter-dw"),
    ("labels-owner", {"labels": {OWNER_LABEL: "me"}}, None, "labels", "identity"),
    ("labels-ray", {"labels": {"ray.io/cluster": "x"}}, None, "labels", "belongs to KubeRay"),
    ("labels-kueue", {"labels": {"kueue.x-k8s.io/job-uid": "1"}}, None, "labels", "Kueue"),
    ("unknown-field", {"worker_cpus": 2}, None, "worker_cpus", "did you mean 'worker_cpu'"),
    ("unknown-field-none", {"gpus": None}, None, "gpus", "unknown field"),
]


@pytest.mark.parametrize(
    ("data", "policy", "field", "fragment"),
    [case[1:] for case in BAD_INPUTS],
    ids=[case[0] for case in BAD_INPUTS],
)
def test_bad_input_is_reported_on_its_field(data, policy, field, fragment):
    errors = errors_of(data, policy)
    assert field in errors, errors
    assert fragment in errors[field]


def test_default_queue_missing_from_known_queues():
    errors = errors_of({"queue": None}, default_queue="gone")
    assert "no LocalQueue 'gone' (the namespace default)" in errors["queue"]
    assert "available: team-a, user-queue" in errors["queue"]


def test_autoscaling_error_names_both_bounds_when_both_differ():
    errors = errors_of({"workers": 2, "min_workers": 1, "max_workers": 3})
    assert set(errors) == {"min_workers", "max_workers"}
    assert "ElasticJobsViaWorkloadSlices" in errors["max_workers"]


def test_autoscaler_v2_env_is_fine_when_autoscaling():
    policy = SpecPolicy(elastic_jobs=True)
    spec = build({"max_workers": 3, "env": {"RAY_enable_autoscaler_v2": "1"}}, policy)
    assert spec.autoscaling


def test_the_priority_label_is_set_only_through_the_priority_field():
    errors = errors_of({"labels": {PRIORITY_LABEL: "high"}})
    assert set(errors) == {"labels"}
    assert "'priority' field" in errors["labels"]


def test_a_known_priority_is_accepted_and_read_back():
    spec = build({"priority": " high "}, known_priorities={"high", "low"})
    assert spec.priority == "high"
    assert build(spec.to_json(), known_priorities={"high"}).priority == "high"


def test_an_unknown_priority_names_the_classes_that_exist():
    errors = errors_of({"priority": "urgent"}, known_priorities={"high", "low"})
    assert errors == {"priority": "no WorkloadPriorityClass 'urgent'; available: high, low"}
    errors = errors_of({"priority": "urgent"}, known_priorities=set())
    assert "the cluster has none" in errors["priority"]


def test_an_unreadable_priority_list_leaves_the_name_to_kueue():
    assert build({"priority": "whatever"}, known_priorities=None).priority == "whatever"


@pytest.mark.parametrize("bad", ["High", "a b", "-x", "x" * 64, 3, ["high"]])
def test_an_invalid_priority_is_a_field_error(bad):
    assert set(errors_of({"priority": bad}, known_priorities=None)) == {"priority"}


def test_an_empty_priority_is_no_priority():
    assert build({"priority": ""}, known_priorities={"high"}).priority is None


@pytest.mark.parametrize("image", ["rayproject/ray:2.60.0", "quay.io/team/ray:any-tag"])
def test_allowed_images_match_by_prefix_or_pattern(image):
    assert build({"image": image, "ray_version": "2.60.0"}, LIMITS).image == image


def test_all_errors_are_collected():
    data = {"name": "BAD", "workers": -1, "worker_memory": "x", "env": {"1": "x"}, "extra": 1}
    with pytest.raises(SpecError) as info:
        build(data)
    assert set(info.value.errors) == {"name", "workers", "worker_memory", "env", "extra"}
    assert isinstance(info.value, ValueError)
    for field in info.value.errors:
        assert f"{field}: " in str(info.value)


def test_non_mapping_request():
    with pytest.raises(SpecError) as info:
        ValidatedClusterSpec.from_request(["name", "demo"], SpecPolicy())  # type: ignore[arg-type]
    assert list(info.value.errors) == [REQUEST_ERROR_KEY]


def test_unknown_field_message_lists_known_fields():
    message = errors_of({"size": 3})["size"]
    assert all(name in message for name in FIELDS)


# --- totals for the quota fit verdict ---------------------------------------------------------


def test_total_requests_is_head_plus_workers():
    spec = build(
        {
            "head_cpu": 1,
            "head_memory": "2Gi",
            "workers": 3,
            "worker_cpu": 2,
            "worker_memory": "4Gi",
            "worker_gpu": 1,
        }
    )
    assert spec.total_requests() == {
        "cpu": Decimal(7),
        "memory": Decimal(14 * GI),
        GPU_RESOURCE: Decimal(3),
    }


def test_total_requests_keeps_fractions_exact():
    spec = build({"head_cpu": "500m", "worker_cpu": "250m", "workers": 2})
    assert spec.total_requests()["cpu"] == Decimal(1)


@pytest.mark.parametrize(("workers", "gpus"), [(2, 0), (0, 1)])
def test_total_requests_has_no_gpu_key_without_gpus(workers, gpus):
    totals = build({"workers": workers, "worker_gpu": gpus}).total_requests()
    assert set(totals) == {"cpu", "memory"}


def test_total_requests_counts_workers_not_max_unless_asked():
    spec = build(
        {"workers": 1, "max_workers": 4, "worker_cpu": 2, "head_cpu": 1},
        SpecPolicy(elastic_jobs=True),
    )
    assert spec.total_requests()["cpu"] == Decimal(3)
    assert spec.total_requests(at_max=True)["cpu"] == Decimal(9)


# --- to_json ----------------------------------------------------------------------------------


def test_to_json_uses_canonical_quantities():
    spec = build({"worker_cpu": 1.5, "worker_memory": 2 * GI, "head_memory": "1000M"})
    data = spec.to_json()
    assert list(data) == list(FIELDS)
    assert (data["worker_cpu"], data["worker_memory"], data["head_memory"]) == (
        "1500m",
        "2Gi",
        "1G",
    )
    assert data["worker_gpu"] == 0 and isinstance(data["workers"], int)


def test_to_json_round_trips_through_from_request():
    policy = SpecPolicy(elastic_jobs=True)
    spec = build(
        {"max_workers": 3, "worker_gpu": 1, "env": {"A": "b"}, "labels": {"t": "x"}}, policy
    )
    again = ValidatedClusterSpec.from_request(spec.to_json(), policy, QUEUES)
    assert again == spec


# --- the spec and the policy are values ------------------------------------------------------


def test_spec_is_immutable():
    spec = build({"env": {"A": "b"}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.workers = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.env["A"] = "c"  # type: ignore[index]
    assert hash(spec) == hash(build({"env": {"A": "b"}}))


def test_policy_parses_quantities_and_lists():
    policy = SpecPolicy(
        default_head_cpu="500m",
        default_worker_memory="4Gi",
        max_worker_gpu="4",
        allowed_images=["rayproject/ray:"],  # type: ignore[arg-type]
    )
    assert policy.default_head_cpu == Decimal("0.5")
    assert policy.default_worker_memory == Decimal(4 * GI)
    assert policy.max_worker_gpu == 4
    assert policy.allowed_images == ("rayproject/ray:",)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"default_workers": 5, "max_workers": 4}, "default_workers"),
        ({"default_worker_cpu": "16", "max_worker_cpu": "8"}, "default_worker_cpu"),
        ({"default_worker_gpu": 1, "max_worker_gpu": 0}, "default_worker_gpu"),
        ({"default_head_memory": "lots"}, "default_head_memory"),
        ({"allowed_images": ("quay.io/",)}, "default_image"),
        ({"max_workers": -1}, "max_workers"),
        ({"elastic_jobs": "yes"}, "elastic_jobs"),
    ],
)
def test_inconsistent_policy_fails_at_creation(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        SpecPolicy(**kwargs)


# --- owner label --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "identity",
    [
        "system:serviceaccount:team-a:notebook",
        "alice@example.com",
        "-leading-dash",
        "x" * 200,
        "::",
        "",
    ],
)
def test_owner_label_value_is_a_valid_label_value(identity):
    value = owner_label_value(identity)
    assert label_value_error(value) is None
    assert 0 < len(value) <= 63


def test_owner_label_value_keeps_safe_identities_and_stays_readable():
    assert owner_label_value("alice") == "alice"
    assert owner_label_value("system:serviceaccount:ns:nb").startswith(
        "system.serviceaccount.ns.nb-"
    )


def test_owner_label_values_do_not_collide():
    identities = ["a:b", "a.b", "a@b", "a/b", "x" * 100, "x" * 101]
    values = [owner_label_value(identity) for identity in identities]
    assert len(set(values)) == len(identities)
    assert values == [owner_label_value(identity) for identity in identities]  # deterministic


# --- name rules used above ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("team", True),
        ("example.com/team", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("example.com/", False),
        ("/team", False),
        ("team\n", False),
    ],
)
def test_label_keys(key, ok):
    assert (label_key_error(key) is None) is ok


@pytest.mark.parametrize(("name", "ok"), [("OMP_NUM_THREADS", True), ("_x", True), ("X\n", False)])
def test_env_names(name, ok):
    assert (env_name_error(name) is None) is ok


def test_error_messages_quote_values_without_regex_surprises():
    # A trailing newline must not slip past a "$" anchor anywhere in the chain.
    errors = errors_of({"worker_cpu": "2\n", "labels": {"team": "x\n"}})
    assert "worker_cpu" not in errors  # quantities are stripped, "2\n" is 2 CPUs
    assert re.search(r"label value 'x\\n'", errors["labels"])
