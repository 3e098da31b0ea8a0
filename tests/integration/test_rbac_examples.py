"""Every feature works through the server with exactly examples/rbac/ granted (applied as a
maintainer would): queues with headroom, fit, create, list, get, delete, the events socket and
positions; without the optional ClusterRole quota is hidden with the fix as the hint."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest

from jupyter_dw.domain.quota import HIDDEN_QUOTA_HINT
from tests.cluster.fixtures import WorkbenchIdentity
from tests.integration.clusters_support import (
    call,
    headroom_becomes,
    make_queue,
    open_events,
    queues_listing,
    small_cluster,
    state_is,
)
from tests.integration.rbac_examples import CLUSTER_ROLE_FILE, ROLE_FILE, examples_applied

pytestmark = pytest.mark.cluster

WORKBENCH_RULES: list[dict[str, str]] = []  # unused: the identity below gets the examples


@pytest.fixture
def example_files(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """Which example files to apply (default: both)."""
    return getattr(request, "param", (ROLE_FILE, CLUSTER_ROLE_FILE))


@pytest.fixture
def identity(workbench, admin, example_files, monkeypatch) -> Iterator[WorkbenchIdentity]:
    """The workbench service account with exactly the example RBAC, its pod environment set
    before the server starts."""
    wb = workbench()  # a ServiceAccount and its token, no RBAC
    with examples_applied(admin, wb, files=example_files):
        for key, value in wb.environ.items():
            monkeypatch.setenv(key, value)
        yield wb


async def test_every_feature_works_with_exactly_the_example_rbac(
    kueue, namespace, jp_fetch, jp_ws_fetch
):
    queue = make_queue(kueue, cpu="4", memory="8Gi")

    code, context = await call(jp_fetch, "GET", "context")
    assert code == 200
    assert {p["permission"]: p["allowed"] for p in context["permissions"]} == {
        p["permission"]: True for p in context["permissions"]
    }

    code, queues = await call(jp_fetch, "GET", "queues")
    assert code == 200 and queues["quota_visible"] is True
    [team] = queues["queues"]
    assert team["name"] == queue.local_queue and team["default"] is True
    headroom = {r["resource"]: r["headroom"] for r in team["resources"]}
    assert headroom == {"cpu": "4", "memory": "8Gi"}

    events, snapshot = await open_events(jp_ws_fetch)
    assert snapshot["queues"]["quota_visible"] is True and snapshot["clusters"] == []

    first = small_cluster("first", workers=2)  # 3 CPU of 4
    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=first)
    assert code == 200 and fit["verdict"] == "fits-now", fit
    code, created = await call(jp_fetch, "POST", "clusters", body=first)
    assert code == 201, created
    await events.cluster_state("first", state_is("ready"), "first ready")
    # Kueue writes the ClusterQueue's usage after it admits, not with it: fit on that.
    await headroom_becomes(events, jp_fetch, queue, Decimal(1))

    second = small_cluster("second", workers=2)
    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=second)
    assert code == 200 and fit["verdict"] == "must-wait", fit
    code, _ = await call(jp_fetch, "POST", "clusters", body=second)
    assert code == 201
    await events.cluster_state(
        "second",
        lambda s: s is not None and s["state"] == "queued" and s["message"] is not None,
        "second queued",
    )

    code, listing = await call(jp_fetch, "GET", "clusters")
    assert code == 200 and listing["positions_visible"] is True
    clusters = {c["name"]: c for c in listing["clusters"]}
    assert clusters["first"]["state"] == "ready"
    assert clusters["second"]["position_in_local_queue"] == 0  # the visibility API
    code, one = await call(jp_fetch, "GET", "clusters", "first")
    assert code == 200 and one["workers_ready"] == 2 and len(one["pods"]) == 3  # pods read

    code, deleted = await call(jp_fetch, "DELETE", "clusters", "first")
    assert (code, deleted["deleted"]) == (200, True)
    await events.cluster_state("second", state_is("ready"), "second admitted when first went")
    code, _ = await call(jp_fetch, "DELETE", "clusters", "second")
    assert code == 200
    await events.cluster_state("second", lambda s: s is None, "second gone")
    code, missing = await call(jp_fetch, "GET", "clusters", "second")
    assert code == 404 and missing["code"] == "not_found"
    events.close()


@pytest.mark.parametrize("example_files", [(ROLE_FILE,)], indirect=True)
async def test_without_the_cluster_role_quota_is_hidden_with_the_fix(kueue, jp_fetch, jp_ws_fetch):
    queue = make_queue(kueue)

    queues = await queues_listing(jp_fetch, jp_ws_fetch, queue)
    assert queues["quota_visible"] is False
    [team] = queues["queues"]
    assert team["name"] == queue.local_queue and team["quota_visible"] is False
    assert team["hint"] == HIDDEN_QUOTA_HINT
    assert "examples/rbac/clusterrole.yaml" in team["hint"]
    assert "jupyter dw doctor" in team["hint"]

    code, context = await call(jp_fetch, "GET", "context")
    denied = {p["permission"] for p in context["permissions"] if not p["allowed"]}
    assert denied == {p["permission"] for p in context["permissions"] if not p["required"]}

    # Everything in the namespace still works.
    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("solo", workers=1))
    assert code == 201, created
    code, listing = await call(jp_fetch, "GET", "clusters")
    assert code == 200 and [c["name"] for c in listing["clusters"]] == ["solo"]
    code, _ = await call(jp_fetch, "DELETE", "clusters", "solo")
    assert code == 200
