"""Which flavors a pod set may use: taints, tolerations and node labels as Kueue checks them."""

from __future__ import annotations

import pytest

from jupyter_dw.domain.cluster_spec import SpecError, ValidatedClusterSpec
from jupyter_dw.domain.fit import FITS_NOW, NEVER_FITS, assess_fit, pod_sets_for_spec
from jupyter_dw.domain.fit_suggestion import suggest
from jupyter_dw.domain.quota import QuotaTree
from jupyter_dw.domain.scheduling import FlavorTraits, Taint, Toleration, flavor_mismatch
from tests.unit.test_fit import cpu_mem, cq

GPU_TAINT = Taint("nvidia.com/gpu", "NoSchedule", "present")
GPU_FLAVOR = FlavorTraits("gpu", {"node-type": "gpu"}, (GPU_TAINT,))
CPU_FLAVOR = FlavorTraits("cpu", {"node-type": "cpu"})


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        (Toleration("nvidia.com/gpu", "Exists"), True),
        (Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"), True),
        (Toleration("nvidia.com/gpu", "Equal", "absent"), False),
        (Toleration("nvidia.com/gpu", "Exists", effect="NoExecute"), False),
        (Toleration("", "Exists"), True),  # tolerates everything
        (Toleration("other", "Exists"), False),
    ],
)
def test_toleration_matching_is_kubernetes(toleration, tolerated):
    assert toleration.tolerates(GPU_TAINT) is tolerated


def test_only_blocking_taints_keep_a_flavor_out():
    soft = FlavorTraits("soft", {}, (Taint("spot", "PreferNoSchedule"),))
    assert flavor_mismatch(soft) is None
    assert flavor_mismatch(GPU_FLAVOR) == (
        "untolerated taint nvidia.com/gpu=present:NoSchedule in flavor gpu"
    )
    own = FlavorTraits("own", {}, (GPU_TAINT,), (Toleration("nvidia.com/gpu", "Exists"),))
    assert flavor_mismatch(own) is None  # the flavor's own tolerations count


def test_node_selector_only_counts_keys_the_flavor_labels():
    assert flavor_mismatch(CPU_FLAVOR, (), {"node-type": "cpu", "zone": "a"}) is None
    assert "doesn't match node affinity" in (
        flavor_mismatch(CPU_FLAVOR, (), {"node-type": "gpu"}) or ""
    )


def spec(**extra):
    return ValidatedClusterSpec.from_request(
        {
            "name": "x",
            "queue": "q",
            "workers": 2,
            "worker_cpu": "1",
            "worker_memory": "1Gi",
            "head_cpu": "1",
            "head_memory": "1Gi",
            **extra,
        }
    )


def judge(request_spec, flavors):
    # One resource group, the tainted flavor first: as Kueue tries them, in order.
    queue = cq("x", [(["cpu", "memory"], [("gpu", {"cpu": "8", "memory": "32Gi"}),
                                           ("cpu", {"cpu": "8", "memory": "32Gi"})])])  # fmt: skip
    tree = QuotaTree([queue], [])
    return assess_fit(pod_sets_for_spec(request_spec), queue, tree, flavors=flavors)


def test_an_untolerated_tainted_flavor_is_skipped_for_the_next():
    flavors = {"gpu": GPU_FLAVOR, "cpu": CPU_FLAVOR}
    without = judge(spec(), flavors)
    assert without.verdict == FITS_NOW and without.flavors == {"cpu": "cpu", "memory": "cpu"}
    tolerant = judge(spec(tolerations=["nvidia.com/gpu:NoSchedule"]), flavors)
    assert tolerant.flavors == {"cpu": "gpu", "memory": "gpu"}
    assert tolerant.assignment["workers"] == {"cpu": "gpu", "memory": "gpu"}


def test_no_usable_flavor_never_fits_with_kueues_words():
    only_gpu = cq("x", [cpu_mem("gpu", "8", "32Gi")])
    tree = QuotaTree([only_gpu], [])
    flavors = {"gpu": GPU_FLAVOR}
    verdict = assess_fit(pod_sets_for_spec(spec()), only_gpu, tree, flavors=flavors)
    assert verdict.verdict == NEVER_FITS
    assert "untolerated taint nvidia.com/gpu=present:NoSchedule in flavor gpu" in verdict.message
    assert suggest(spec(workers=4), only_gpu, tree, flavors={"gpu": GPU_FLAVOR}) is None


def test_unknown_flavors_are_assumed_usable():
    assert judge(spec(), None).flavors == {"cpu": "gpu", "memory": "gpu"}


def test_spec_tolerations_and_node_selector_parse_and_reach_every_pod():
    tolerations = ["nvidia.com/gpu=present:NoSchedule", {"key": "spot", "operator": "Exists"}]
    parsed = spec(tolerations=tolerations, node_selector="node-type=gpu")
    assert parsed.tolerations == (
        Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"),
        Toleration("spot", "Exists"),
    )
    obj = parsed.to_raycluster("ns")
    for template in (obj["spec"]["headGroupSpec"]["template"],
                     obj["spec"]["workerGroupSpecs"][0]["template"]):  # fmt: skip
        assert template["spec"]["nodeSelector"] == {"node-type": "gpu"}
        assert template["spec"]["tolerations"][1] == {"key": "spot", "operator": "Exists"}
    assert parsed.to_json()["tolerations"][0]["value"] == "present"


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("tolerations", [{"key": "a", "operator": "Lt"}], "operator"),
        ("tolerations", ["a:Sometimes"], "effect"),
        ("tolerations", [{"operator": "Equal", "value": "x"}], "without a key"),
        ("tolerations", [{"key": "a", "operator": "Exists", "value": "x"}], "takes no value"),
        ("tolerations", [{"key": "a", "colour": "red"}], "unknown toleration field"),
        ("tolerations", 5, "list of tolerations"),
        ("node_selector", "novalue", "key=value"),
        ("node_selector", {"bad key!": "x"}, "label key"),
    ],
)
def test_bad_placement_fields_are_refused_with_the_reason(field, value, says):
    with pytest.raises(SpecError) as error:
        spec(**{field: value})
    assert says in error.value.errors[field]
