"""Admission checks (the ProvisioningRequest check asking the cluster autoscaler for nodes) in
a cluster's state, its milestones and its transitions. Workloads are written as Kueue v0.19.2
stores them; the rejected one is the shape seen on the test bed after a ProvisioningRequest
turned ``Failed`` with ``retryStrategy.backoffLimitCount: 0``."""

from __future__ import annotations

from typing import Any

from jupyter_dw.domain.cluster_state import cluster_snapshot, transition
from jupyter_dw.domain.milestones import milestones
from tests.unit.test_cluster_state import (
    ADMITTED,
    ADMITTED_AT,
    CREATED,
    RESERVED,
    cond,
    kuberay_status,
    raycluster,
    running,
    workload,
)

CHECK = "capacity"
CHECK_AT = "2026-08-01T10:00:02Z"
REJECTED_MSG = (
    'The workload is deactivated due to AdmissionCheck in Rejected state: "capacity" '
    "(no nodes of this shape in any zone)"
)


def with_checks(wl: dict[str, Any], *checks: tuple[str, str, str]) -> dict[str, Any]:
    wl["status"]["admissionChecks"] = [
        {"name": name, "state": state, "message": message, "lastTransitionTime": CHECK_AT}
        for name, state, message in checks
    ]
    return wl


def test_quota_reserved_with_a_pending_check_waits_for_capacity() -> None:
    wl = with_checks(workload(RESERVED, admission=True), (CHECK, "Pending", "ETA 2 minutes"))
    status = cluster_snapshot(raycluster(), wl)
    assert status.state == "waiting-for-capacity"
    assert status.message == f"admission check {CHECK} is Pending: ETA 2 minutes"
    assert [c.to_json() for c in status.admission_checks] == [
        {"name": CHECK, "state": "Pending", "message": "ETA 2 minutes", "time": CHECK_AT}
    ]
    assert not status.capacity_provisioned
    assert status.to_json()["admission_checks"][0]["state"] == "Pending"


def test_the_first_check_not_ready_is_the_one_named() -> None:
    wl = with_checks(
        workload(RESERVED, admission=True), ("a", "Ready", "done"), ("b", "Pending", "")
    )
    status = cluster_snapshot(raycluster(), wl)
    assert (status.state, status.message) == (
        "waiting-for-capacity",
        "admission check b is Pending",
    )


def test_a_retry_eviction_is_still_waiting_for_capacity() -> None:
    message = 'Evicted due to AdmissionCheck in Retry state: "capacity" (Retrying after failure)'
    wl = with_checks(
        workload(cond("Evicted", "True", "AdmissionCheck", message)), (CHECK, "Retry", "x")
    )
    status = cluster_snapshot(raycluster(), wl)
    assert (status.state, status.reason, status.message) == (
        "waiting-for-capacity",
        "AdmissionCheck",
        message,
    )


def test_a_rejected_check_deactivates_and_shows_kueues_words() -> None:
    # Kueue resets the check to Pending after the eviction; the Evicted condition keeps why.
    wl = with_checks(
        workload(
            cond("QuotaReserved", "False", "Pending", REJECTED_MSG),
            cond("Evicted", "True", "DeactivatedDueToAdmissionCheck", REJECTED_MSG),
            active=False,
        ),
        (CHECK, "Pending", "Reset to Pending after eviction. Previously: Rejected"),
    )
    status = cluster_snapshot(raycluster(), wl)
    assert (status.state, status.reason, status.message) == (
        "rejected",
        "DeactivatedDueToAdmissionCheck",
        REJECTED_MSG,
    )


def test_a_check_seen_rejected_before_the_eviction_names_itself() -> None:
    wl = with_checks(workload(RESERVED, admission=True), (CHECK, "Rejected", "no capacity"))
    status = cluster_snapshot(raycluster(), wl)
    assert (status.state, status.reason) == ("rejected", "Rejected")
    assert status.message == f"admission check {CHECK} rejected the workload: no capacity"


def test_deactivated_by_hand_is_stopped_not_rejected() -> None:
    wl = workload(
        cond("Evicted", "True", "Deactivated", "The workload is deactivated"), active=False
    )
    assert cluster_snapshot(raycluster(), wl).state == "stopped"


def test_provisioned_then_admitted_then_ready_with_milestones_in_order() -> None:
    reserved = with_checks(workload(RESERVED, admission=True), (CHECK, "Pending", ""))
    provisioned = with_checks(
        workload(RESERVED, ADMITTED, admission=True), (CHECK, "Ready", "nodes are ready")
    )
    ready_rc = running(raycluster(**kuberay_status(head="ready", ready_workers=2)))
    waiting = cluster_snapshot(raycluster(), reserved)
    admitted = cluster_snapshot(running(raycluster()), provisioned)
    ready = cluster_snapshot(ready_rc, provisioned)
    assert (waiting.state, admitted.state, ready.state) == (
        "waiting-for-capacity",
        "admitted",
        "ready",
    )
    assert transition(None, waiting) == ["QuotaReserved", "WaitingForCapacity"]
    assert transition(waiting, admitted) == ["CapacityProvisioned", "Admitted"]
    steps = [(m.name, m.time) for m in milestones(ready, ready_rc, provisioned)]
    assert steps[:4] == [
        ("Submitted", CREATED),
        ("QuotaReserved", CREATED),
        ("CapacityProvisioned", ADMITTED_AT),
        ("Admitted", ADMITTED_AT),
    ]


def test_without_checks_there_is_no_capacity_milestone() -> None:
    wl = workload(RESERVED, ADMITTED, admission=True)
    status = cluster_snapshot(running(raycluster()), wl)
    assert status.admission_checks == () and not status.capacity_provisioned
    assert "CapacityProvisioned" not in [m.name for m in milestones(status, raycluster(), wl)]
    assert "CapacityProvisioned" not in transition(None, status)


def test_the_notebook_html_lists_each_check_escaped() -> None:
    from jupyter_dw.core.cluster_results import ClusterInfo
    from jupyter_dw.notebook.display import cluster_html

    wl = with_checks(workload(RESERVED, admission=True), (CHECK, "Pending", "ETA <2 minutes>"))
    status = cluster_snapshot(raycluster(), wl)
    html = cluster_html(ClusterInfo(status, "/dw/ray/demo/", None, (), ()))
    assert "waiting-for-capacity" in html
    assert f"admission check <b>{CHECK}</b>: Pending — ETA &lt;2 minutes&gt;" in html


def test_a_decided_deactivation_by_a_check_is_already_rejected() -> None:
    target = cond("DeactivationTarget", "True", "AdmissionCheck", "check capacity rejected")
    status = cluster_snapshot(raycluster(), workload(RESERVED, target, admission=True))
    assert (status.state, status.reason, status.message) == (
        "rejected",
        "AdmissionCheck",
        "check capacity rejected",
    )


def test_kueue_014s_deactivation_message_is_shown_as_it_is() -> None:
    # Kueue 0.14 does not repeat the autoscaler's words once it has deactivated the workload.
    message = "The workload is deactivated due to Admission check(s): capacity, were rejected"
    wl = workload(
        cond("Evicted", "True", "DeactivatedDueToAdmissionCheck", message),
        version="v1beta1",
        active=False,
    )
    status = cluster_snapshot(raycluster(), wl)
    assert (status.state, status.message) == ("rejected", message)
