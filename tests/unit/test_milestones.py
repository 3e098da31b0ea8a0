"""Milestones with their times, from the controllers' own timestamps."""

from __future__ import annotations

from typing import Any

from jupyter_dw.domain.cluster_state import cluster_snapshot
from jupyter_dw.domain.milestones import milestones
from tests.unit.test_cluster_state import (
    ADMITTED,
    ADMITTED_AT,
    CREATED,
    PENDING_V1BETA2,
    RESERVED,
    cond,
    evicted_workload,
    kuberay_status,
    raycluster,
    running,
    workload,
)

HEAD_AT = "2026-08-01T10:00:09Z"


def pod(role: str, name: str, ready_at: str | None) -> dict[str, Any]:
    conditions = [cond("Ready", "True", "", at=ready_at)] if ready_at else []
    return {
        "metadata": {"name": name, "labels": {"ray.io/node-type": role, "ray.io/cluster": "demo"}},
        "status": {"phase": "Running", "conditions": conditions},
    }


def timeline(rc: dict, wl: dict | None, pods: list[dict] = ()) -> list[tuple[str, str | None]]:
    status = cluster_snapshot(rc, wl)
    return [(m.name, m.time) for m in milestones(status, rc, wl, pods)]


def test_queued_cluster_has_only_its_submission() -> None:
    assert timeline(raycluster(), workload(PENDING_V1BETA2)) == [("Submitted", CREATED)]


def test_ready_cluster_has_every_step_with_times_in_order() -> None:
    status = kuberay_status("ready", ready_workers=2, desired=2)
    status["conditions"][0]["lastTransitionTime"] = HEAD_AT  # HeadPodReady
    rc = running(raycluster(**status))
    reserved = cond("QuotaReserved", "True", "QuotaReserved", at="2026-08-01T10:00:04Z")
    pods = [
        pod("worker", "w-b", "2026-08-01T10:00:12Z"),
        pod("worker", "w-a", "2026-08-01T10:00:11Z"),
        pod("head", "h", HEAD_AT),
    ]
    assert timeline(rc, workload(reserved, ADMITTED, admission=True), pods) == [
        ("Submitted", CREATED),
        ("QuotaReserved", "2026-08-01T10:00:04Z"),
        ("Admitted", ADMITTED_AT),
        ("HeadReady", HEAD_AT),
        ("WorkerReady:1", "2026-08-01T10:00:11Z"),
        ("WorkerReady:2", "2026-08-01T10:00:12Z"),
        ("Ready", "2026-08-01T10:00:12Z"),
    ]


def test_ready_count_from_kuberay_even_before_the_pod_cache_catches_up() -> None:
    rc = running(raycluster(**kuberay_status("ready", ready_workers=1, desired=2)))
    steps = timeline(rc, workload(RESERVED, ADMITTED, admission=True), [])
    assert steps[-2:] == [("HeadReady", CREATED), ("WorkerReady:1", None)]


def test_eviction_and_preemption_are_timed_by_kueues_conditions() -> None:
    rc = raycluster()
    evicted = evicted_workload("PodsReadyTimeout", "pods not ready")
    assert timeline(rc, evicted)[-1][0] == "Evicted"
    preempted = evicted_workload("Preempted", "preempted", cond("Preempted", "True", "InCohort"))
    assert timeline(rc, preempted)[-1] == ("Preempted", CREATED)


def test_deleting_is_timed_by_the_deletion_timestamp() -> None:
    rc = raycluster()
    rc["metadata"]["deletionTimestamp"] = "2026-08-01T11:00:00Z"
    assert timeline(rc, None)[-1] == ("Deleting", "2026-08-01T11:00:00Z")
