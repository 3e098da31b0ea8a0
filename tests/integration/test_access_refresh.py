"""Permissions follow the cluster without a restart: a ClusterRole granted after the server
started shows quota (GET context, GET queues, the events socket) within
``access_refresh_interval``; a Role revoked is seen at once after the 403 it causes, long
before the interval."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.cluster.fixtures import WorkbenchIdentity, wait_allowed
from tests.integration.clusters_support import (
    call,
    create_suspended_raycluster,
    make_queue,
    open_events,
    small_cluster,
    wait_gone,
)
from tests.integration.rbac_examples import (
    CLUSTER_ROLE_FILE,
    ROLE_FILE,
    example_objects,
    examples_applied,
)

pytestmark = pytest.mark.cluster

WORKBENCH_RULES: list[dict[str, str]] = []  # unused: the identity below gets the examples
CREATE = "create rayclusters.ray.io"
LIST_CQ = "list clusterqueues.kueue.x-k8s.io"


@pytest.fixture
def identity(workbench, admin, monkeypatch) -> Iterator[WorkbenchIdentity]:
    """The workbench with the example Role only (no ClusterRole), pod environment set."""
    wb = workbench()
    with examples_applied(admin, wb, files=(ROLE_FILE,)):
        for key, value in wb.environ.items():
            monkeypatch.setenv(key, value)
        yield wb


async def verdicts(jp_fetch) -> dict[str, bool]:
    code, context = await call(jp_fetch, "GET", "context")
    assert code == 200, context
    return {p["permission"]: p["allowed"] for p in context["permissions"]}


async def wait_verdict(jp_fetch, permission: str, expected: bool, timeout: float) -> None:
    """Wait until ``GET context`` reports ``expected`` for ``permission`` (the server has no
    event for a re-check: ask it, within ``timeout``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (await verdicts(jp_fetch))[permission] is not expected:
        if loop.time() > deadline:
            raise TimeoutError(f"GET context never said {permission} is {expected}")
        await asyncio.sleep(0.2)


@pytest.mark.parametrize("dw_config", [{"access_refresh_interval": 1.0}], indirect=True)
async def test_a_cluster_role_granted_later_shows_quota_without_a_restart(
    kueue, admin, identity, jp_fetch, jp_ws_fetch
):
    make_queue(kueue, cpu="4", memory="8Gi")
    events, snapshot = await open_events(jp_ws_fetch)
    assert snapshot["queues"]["quota_visible"] is False
    assert (await verdicts(jp_fetch))[LIST_CQ] is False

    with examples_applied(admin, identity, files=(CLUSTER_ROLE_FILE,)):
        # The new ClusterQueue watch reports the queue's quota on the open socket.
        message = await events.until(
            lambda m: m["type"] == "queues" and (m["queues"] or {}).get("quota_visible") is True,
            "a queues message with quota visible",
            timeout=30,
        )
        assert message["kind"] in ("ClusterQueue", "Cohort", "ResourceFlavor")
        assert (await verdicts(jp_fetch))[LIST_CQ] is True
        code, context = await call(jp_fetch, "GET", "context")
        assert "clusterqueues" in context["caches"]
        code, queues = await call(jp_fetch, "GET", "queues")
        assert code == 200 and queues["quota_visible"] is True
        [team] = queues["queues"]
        assert {r["resource"]: r["headroom"] for r in team["resources"]} == {
            "cpu": "4",
            "memory": "8Gi",
        }
    events.close()


@pytest.mark.parametrize("dw_config", [{"access_refresh_interval": 3600.0}], indirect=True)
async def test_a_revoked_role_is_seen_at_once_after_its_403(
    kueue, admin, identity, namespace, jp_fetch
):
    make_queue(kueue)
    assert (await verdicts(jp_fetch))[CREATE] is True
    code, listing = await call(jp_fetch, "GET", "clusters")
    assert code == 200

    binding = next(
        o
        for o in example_objects(ROLE_FILE, namespace, identity.name)
        if o["kind"] == "RoleBinding"
    )
    admin.delete(binding)
    wait_allowed(identity, "create", "ray.io", "rayclusters", expected=False)

    code, refused = await call(jp_fetch, "POST", "clusters", body=small_cluster("late"))
    assert code == 403 and refused["denied"] == CREATE
    # The 403 asked for a re-check at once: an hour's interval does not apply.
    await wait_verdict(jp_fetch, CREATE, False, timeout=15)
    code, context = await call(jp_fetch, "GET", "context")
    assert not {"rayclusters", "localqueues", "workloads", "pods"} & set(context["caches"])
    code, listing = await call(jp_fetch, "GET", "clusters")
    assert code == 403 and listing["denied"] in (
        "list rayclusters.ray.io",
        "watch rayclusters.ray.io",
    )


@pytest.mark.parametrize("dw_config", [{"access_refresh_interval": 1.0}], indirect=True)
async def test_a_deletion_made_while_access_was_revoked_is_told_once_access_is_back(
    kube, kueue, admin, identity, namespace, jp_fetch, jp_ws_fetch
):
    """A cache dropped (its permission revoked) and made again (granted back) lists afresh:
    what went away meanwhile must still come as a deletion, not be shown for ever. (After an
    API server restart, its authorizer denies everything for a moment: the same path.)"""
    make_queue(kueue)
    create_suspended_raycluster(kube, namespace, "doomed")
    create_suspended_raycluster(kube, namespace, "kept")
    events, snapshot = await open_events(jp_ws_fetch)
    # Made just before the socket opened: each is in its snapshot, or told right after it (the
    # server's cache may not have had the last one's event yet; a CI run saw that).
    for name in {"doomed", "kept"} - {c["name"] for c in snapshot["clusters"]}:
        await events.cluster_state(name, lambda state: state is not None, "shown")

    binding = next(
        o
        for o in example_objects(ROLE_FILE, namespace, identity.name)
        if o["kind"] == "RoleBinding"
    )
    admin.delete(binding)
    wait_allowed(identity, "list", "ray.io", "rayclusters", expected=False)
    await wait_verdict(jp_fetch, "list rayclusters.ray.io", False, timeout=15)
    custom = client.CustomObjectsApi(kube)
    custom.delete_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", "doomed")
    assert wait_gone(kube, namespace, "doomed")
    since = len(events.seen)

    admin.apply(binding)
    wait_allowed(identity, "list", "ray.io", "rayclusters")
    await wait_verdict(jp_fetch, "list rayclusters.ray.io", True, timeout=15)
    await events.since(
        since,
        lambda m: m["type"] == "cluster" and m["name"] == "doomed" and m["state"] is None,
        "the deletion made while access was revoked",
    )
    code, listing = await call(jp_fetch, "GET", "clusters")
    assert code == 200, listing
    assert [c["name"] for c in listing["clusters"]] == ["kept"]
