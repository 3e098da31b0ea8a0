"""Kueue with ``ElasticJobsViaWorkloadSlices`` turned off (the disposable control plane's
Kueue restarted with the gate set to false): the product learns it from Kueue's answer to a
dry run, refuses autoscaling clusters naming the feature gate, and creates nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.disposable import DisposableCluster
from tests.integration.clusters_support import call, make_queue, small_cluster
from tests.integration.workbench_rbac import namespace_rules

WORKBENCH_RULES = namespace_rules()

pytestmark = pytest.mark.cluster

GATE = "ElasticJobsViaWorkloadSlices"


@pytest.fixture
def gate_off(faults: DisposableCluster) -> Iterator[DisposableCluster]:
    """Kueue restarted with the gate off for this test, then back to its default (on)."""
    faults.stop_component("kueue")
    faults.start_component("kueue", kueue_config={"featureGates": {GATE: False}})
    try:
        yield faults
    finally:
        faults.stop_component("kueue")
        faults.start_component("kueue", kueue_config={})


async def test_with_the_gate_off_autoscaling_is_refused_naming_it(
    gate_off, kueue, namespace, identity, jp_fetch
):
    make_queue(kueue)
    code, context = await call(jp_fetch, "GET", "context")
    assert code == 200, context
    elastic = context["kueue"]["elastic_jobs"]
    assert elastic["enabled"] is False and elastic["learned_from"] == "dry-run", elastic
    assert GATE in elastic["detail"]

    request = small_cluster("grows", workers=1, min_workers=1, max_workers=4)
    code, answer = await call(jp_fetch, "POST", "clusters", body=request)
    assert code == 400 and answer["code"] == "invalid_spec", answer
    assert GATE in answer["errors"]["max_workers"]
    code, listed = await call(jp_fetch, "GET", "clusters")
    assert listed["clusters"] == []  # nothing was created

    assert (await call(jp_fetch, "POST", "clusters", body=small_cluster("fixed", 1)))[0] == 201
    code, answer = await call(jp_fetch, "POST", "clusters", "fixed", "scale", body={"workers": 2})
    assert code == 400 and answer["code"] == "not_elastic", answer
    assert GATE in answer["reason"]
