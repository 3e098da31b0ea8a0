"""Capacity provisioning on the real control plane: a ClusterQueue requires Kueue's
ProvisioningRequest admission check, and the test plays the cluster autoscaler by setting the
ProvisioningRequest's conditions. The fit names the check; the cluster shows
``waiting-for-capacity`` with the check's state and the autoscaler's message (REST and the
events socket), then ``CapacityProvisioned`` → ``Admitted`` → ready; a ``Failed`` request
(no retries configured) shows ``rejected`` with the autoscaler's reason."""

from __future__ import annotations

from typing import Any

import pytest

import jupyter_dw as dw
from tests.cluster.fixtures import KueueObjects
from tests.integration.clusters_support import (
    Autoscaler,
    call,
    in_order,
    make_capacity_queue,
    open_events,
    small_cluster,
    state_is,
)
from tests.integration.test_notebook_widgets import until
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster

ETA = "capacity is being provisioned, ETA 2 minutes"
NO_CAPACITY = "no nodes of this shape in any zone"


@pytest.fixture
def capacity_queue(kube, kueue: KueueObjects) -> str:
    """The namespace's default queue requiring a ProvisioningRequest check (never retried);
    the check's name. Made before the server starts, so its first lists hold them."""
    return make_capacity_queue(kube, kueue)


def deactivated_by_check(state: dict[str, Any] | None) -> bool:
    """Kueue's last word on a rejected check: the workload deactivated because of it."""
    return (
        state is not None
        and state["state"] == "rejected"
        and state["reason"] == "DeactivatedDueToAdmissionCheck"
    )


def rejected_message_ok(kueue: KueueObjects, check: str, message: str | None) -> bool:
    """Kueue's deactivation message names the check; Kueue >= 0.15 (serving v1beta2) also
    repeats the autoscaler's reason there, 0.14 does not keep it once it deactivated."""
    words = [check, NO_CAPACITY] if kueue.api_version == "v1beta2" else [check]
    return all(w in (message or "") for w in words)


def check_of(state: dict[str, Any] | None) -> dict[str, Any]:
    assert state is not None and len(state["admission_checks"]) == 1, state
    return state["admission_checks"][0]


async def test_fit_names_the_check_then_provisioned_admitted_ready(
    kube, kueue, capacity_queue, identity, jp_fetch, jp_ws_fetch
):
    check = capacity_queue
    request = small_cluster("capacity", workers=1)
    code, fit = await call(jp_fetch, "POST", "clusters", "fit", body=request)
    assert code == 200, fit
    assert (fit["verdict"], fit["admission_checks"]) == ("fits-now", [check])
    assert f"fits the quota; then waits for capacity from admission check {check}" in fit["message"]

    events, _ = await open_events(jp_ws_fetch)
    try:
        assert (await call(jp_fetch, "POST", "clusters", body=request))[0] == 201
        waiting = await events.cluster_state(
            "capacity", state_is("waiting-for-capacity"), "waiting for capacity"
        )
        assert waiting is not None and waiting["quota_reserved"] and not waiting["admitted"]
        assert check_of(waiting)["name"] == check
        assert check_of(waiting)["state"] == "Pending"

        autoscaler = Autoscaler(kube, kueue.namespace)
        autoscaler.set(
            waiting["workload"], Accepted=("True", "accepted"), Provisioned=("False", ETA)
        )
        eta = await events.cluster_state(
            "capacity", lambda s: s is not None and check_of(s)["message"] == ETA, "the ETA"
        )
        assert eta is not None and eta["state"] == "waiting-for-capacity"
        assert eta["message"] == f"admission check {check} is Pending: {ETA}"
        code, listing = await call(jp_fetch, "GET", "clusters")
        (listed,) = [c for c in listing["clusters"] if c["name"] == "capacity"]
        assert (listed["state"], check_of(listed)["message"]) == ("waiting-for-capacity", ETA)

        autoscaler.set(
            waiting["workload"], Accepted=("True", "accepted"), Provisioned=("True", "nodes up")
        )
        ready = await events.cluster_state("capacity", state_is("ready"), "ready")
        assert ready is not None and check_of(ready)["state"] == "Ready"
        steps = ["QuotaReserved", "WaitingForCapacity", "CapacityProvisioned", "Admitted", "Ready"]
        assert in_order(events.milestones("capacity"), steps), events.milestones("capacity")
    finally:
        events.close()
    code, listing = await call(jp_fetch, "GET", "clusters")
    (listed,) = [c for c in listing["clusters"] if c["name"] == "capacity"]
    timeline = [m["name"] for m in listed["milestones"]]
    assert in_order(timeline, ["QuotaReserved", "CapacityProvisioned", "Admitted", "Ready"])


async def test_failed_provisioning_is_rejected_with_the_autoscalers_reason(
    kube, kueue, capacity_queue, identity, jp_fetch, jp_ws_fetch
):
    check = capacity_queue
    events, _ = await open_events(jp_ws_fetch)
    try:
        request = small_cluster("nocapacity", workers=1)
        assert (await call(jp_fetch, "POST", "clusters", body=request))[0] == 201
        waiting = await events.cluster_state(
            "nocapacity", state_is("waiting-for-capacity"), "waiting for capacity"
        )
        assert waiting is not None
        Autoscaler(kube, kueue.namespace).set(waiting["workload"], Failed=("True", NO_CAPACITY))
        rejected = await events.cluster_state("nocapacity", deactivated_by_check, "rejected")
        assert rejected is not None and not rejected["admitted"]
        assert rejected_message_ok(kueue, check, rejected["message"]), rejected["message"]
        assert "Rejected" in events.milestones("nocapacity")
    finally:
        events.close()
    _, listing = await call(jp_fetch, "GET", "clusters")
    (listed,) = [c for c in listing["clusters"] if c["name"] == "nocapacity"]
    assert listed["state"] == "rejected"
    assert rejected_message_ok(kueue, check, listed["message"]), listed["message"]


async def test_the_status_widget_shows_the_check_and_its_timeline(
    kernel, kueue, kube, capacity_queue
):
    check = capacity_queue
    verdict = dw.fit(**small_cluster("widget", workers=1))
    assert verdict.admission_checks == (check,)
    assert "fits the quota; then waits for capacity" in verdict.message
    dw.submit(**small_cluster("widget", workers=1))
    status = dw.ClusterStatus("widget")
    try:
        await until(status, "state", lambda s: s == "waiting-for-capacity", "waiting")
        assert [c["name"] for c in status.admission_checks] == [check]
        assert f"admission check {check} is Pending" in (status.message or "")
        workload = kernel.core.clusters.get("widget").workload
        Autoscaler(kube, kueue.namespace).set(
            workload, Accepted=("True", "accepted"), Provisioned=("True", "nodes up")
        )
        await until(status, "state", lambda s: s == "ready", "ready")
        assert [c["state"] for c in status.admission_checks] == ["Ready"]
        steps = [m["name"] for m in status.milestones]
        assert in_order(steps, ["QuotaReserved", "CapacityProvisioned", "Admitted", "Ready"])
    finally:
        status.close()


async def test_waiting_for_ready_gives_up_when_the_check_rejects(
    kernel, kueue, kube, capacity_queue
):
    handle = dw.submit(**small_cluster("given-up", workers=1))
    waiting = await handle.wait_async("waiting-for-capacity", timeout=90)
    Autoscaler(kube, kueue.namespace).set(waiting.workload, Failed=("True", NO_CAPACITY))
    with pytest.raises(dw.ClusterFailed) as failed:
        await handle.wait_async("ready", timeout=90)
    assert "is rejected" in str(failed.value)
    assert capacity_queue in str(failed.value.reason)
