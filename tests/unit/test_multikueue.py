"""MultiKueue as the manager cluster shows it: the dispatching checks and where a Workload went.

The objects are real: ``data/multikueue_objects.json`` holds what the MultiKueue test bed's
manager (tests/cluster/multikueue.py) wrote, with Kueue 0.19.2 (``v1beta2-*``) and 0.14.8
(``v1beta1-*``; ``managedFields`` dropped): the AdmissionCheck ``dispatch-to-workers`` and its
MultiKueueConfig ``workers`` (one worker, ``worker-1``), a RayCluster's Workload admitted on
the worker (``admitted``), one offered to the full worker (``nominated``), and the dispatched
RayCluster with the status MultiKueue copied back from the worker.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from jupyter_dw.core.cluster_results import ClusterInfo
from jupyter_dw.core.queue_results import QueueList
from jupyter_dw.domain.cluster_state import cluster_snapshot
from jupyter_dw.domain.kueue_model import ClusterQueueQuota, LocalQueueInfo
from jupyter_dw.domain.multikueue import (
    Dispatcher,
    Placement,
    dispatchers,
    dispatchers_seen,
    fit_note,
    placed_outcome,
    placement,
    unreachable_dashboard,
)
from jupyter_dw.domain.quota import queue_summaries
from jupyter_dw.domain.usage import ClusterUsage
from jupyter_dw.domain.workloads import (
    JobWorkload,
    WorkloadInfo,
    job_workload_from_json,
    workload_fields,
    workload_info,
)
from tests.unit.test_event_deltas import answer
from tests.unit.test_json_decode import round_trip, through_json

DATA = json.loads((Path(__file__).parent / "data" / "multikueue_objects.json").read_text())
JOBS = json.loads((Path(__file__).parent / "data" / "kueue_0.19.2_job_workloads.json").read_text())
VERSIONS = ("v1beta2", "v1beta1")
CHECK = "dispatch-to-workers"
WORKER = "worker-1"


def real(key: str) -> dict[str, Any]:
    return copy.deepcopy(DATA[key])


@pytest.mark.parametrize("version", VERSIONS)
def test_the_multikueue_check_with_its_workers(version):
    found = dispatchers([real(f"{version}-admissioncheck")], [real(f"{version}-multikueueconfig")])
    assert found == {CHECK: Dispatcher(CHECK, "workers", (WORKER,))}
    assert found[CHECK].to_json() == {"check": CHECK, "config": "workers", "workers": [WORKER]}
    assert "runs its workloads on worker clusters worker-1" in found[CHECK].sentence


@pytest.mark.parametrize("version", VERSIONS)
def test_without_the_configs_the_workers_are_unknown(version):
    found = dispatchers([real(f"{version}-admissioncheck")], None)
    assert found == {CHECK: Dispatcher(CHECK, "workers", None)}
    assert "which ones this workbench may not read" in found[CHECK].sentence


def test_a_check_of_another_controller_dispatches_nothing():
    other = real("v1beta2-admissioncheck")
    other["spec"]["controllerName"] = "kueue.x-k8s.io/provisioning-request"
    assert dispatchers([other], []) == {}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("known", [None, frozenset({CHECK})])
def test_an_admitted_workload_runs_on_its_worker(version, known):
    where = placement(real(f"{version}-admitted"), known)
    assert where is not None and where.dispatched
    assert (where.worker_cluster, where.nominated_clusters) == (WORKER, ())
    assert (where.check, where.check_state) == (CHECK, "Ready")
    assert WORKER in (where.check_message or "")
    assert where.sentence == "runs on worker cluster worker-1 (sent there by MultiKueue)"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("known", [None, frozenset({CHECK})])
def test_a_nominated_workload_waits_for_a_worker(version, known):
    workload = real(f"{version}-nominated")
    where = placement(workload, known)
    assert where is not None and not where.dispatched
    assert where.nominated_clusters == (WORKER,)
    assert (where.check, where.check_state) == (CHECK, "Pending")
    info = workload_info(workload, dispatching=known)
    assert info is not None and info.state == "waiting-for-capacity"
    assert info.message == (
        f"admission check {CHECK} is Pending: MultiKueue offered it to worker cluster worker-1 "
        "and waits for one to admit it (the worker's own reason is not copied back to this "
        "cluster)"
    )
    assert info.to_json()["placement"]["nominated_clusters"] == [WORKER]


def test_before_nomination_only_the_known_check_tells():
    workload = real("v1beta2-nominated")
    del workload["status"]["nominatedClusterNames"]
    assert placement(workload, None) is None  # one Pending check of unknown controller
    where = placement(workload, frozenset({CHECK}))
    assert where == Placement(None, (), CHECK, "Pending", None)
    assert where.sentence == "waiting for MultiKueue to offer it to a worker cluster"


def test_a_ready_check_names_the_worker_before_cluster_name_is_read():
    workload = real("v1beta1-admitted")
    del workload["status"]["clusterName"]
    where = placement(workload, None)
    assert where is not None and where.worker_cluster == WORKER


def test_a_workload_without_multikueue_has_no_placement():
    assert placement(JOBS["v1beta2-admitted"], None) is None
    assert placement(JOBS["v1beta2-admitted"], frozenset({CHECK})) is None
    info = workload_info(JOBS["v1beta2-admitted"])
    assert info is not None and info.placement is None


@pytest.mark.parametrize("version", VERSIONS)
def test_a_dispatched_cluster_is_ready_from_the_status_copied_back(version):
    snapshot = cluster_snapshot(
        real(f"{version}-raycluster-dispatched"), real(f"{version}-admitted"), pods=()
    )
    assert (snapshot.state, snapshot.head_ready) == ("ready", True)
    assert (snapshot.workers_ready, snapshot.workers_desired) == (1, 1)
    assert snapshot.placement is not None and snapshot.placement.worker_cluster == WORKER
    assert snapshot.to_json()["placement"]["worker_cluster"] == WORKER


def test_placed_outcome_leaves_other_states_alone():
    where = Placement(None, (WORKER,), CHECK, "Pending", "")
    queued = ("queued", "Pending", "couldn't assign flavors")
    assert placed_outcome(queued, where) == queued
    waiting = ("waiting-for-capacity", None, f"admission check {CHECK} is Pending")
    assert placed_outcome(waiting, None) == waiting
    assert "offered it to worker cluster" in str(placed_outcome(waiting, where)[2])


def test_the_unreachable_dashboard_and_the_fit_say_why():
    where = Placement(WORKER, (), CHECK, "Ready", None)
    assert unreachable_dashboard(where).startswith("runs on worker cluster worker-1: its Ray")
    assert "JupyterDW.multikueue_dashboard_url" in unreachable_dashboard(where)
    note = fit_note(Dispatcher(CHECK, "workers", (WORKER,)), "team-cq")
    assert "MultiKueue decides which one runs it" in note
    assert "quota of this cluster's ClusterQueue team-cq" in note


def test_a_queue_whose_cluster_queue_dispatches_says_so():
    def queue(name: str, cluster_queue: str) -> LocalQueueInfo:
        return LocalQueueInfo.from_object(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": "team"},
                "spec": {"clusterQueue": cluster_queue},
            }
        )

    def cluster_queue(name: str, checks: list[str]) -> ClusterQueueQuota:
        strategy = {"admissionChecks": [{"name": c} for c in checks]}
        return ClusterQueueQuota.from_object(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {"resourceGroups": [], "admissionChecksStrategy": strategy},
            }
        )

    found = dispatchers([real("v1beta2-admissioncheck")], [real("v1beta2-multikueueconfig")])
    summaries = queue_summaries(
        [queue("far", "mk-cq"), queue("near", "plain-cq")],
        [cluster_queue("mk-cq", ["capacity", CHECK]), cluster_queue("plain-cq", ["capacity"])],
        [],
        dispatchers=found,
    )
    by_name = {s.name: s for s in summaries}
    assert by_name["far"].multikueue == found[CHECK]
    assert by_name["far"].to_json()["multikueue"]["workers"] == [WORKER]
    assert by_name["near"].multikueue is None
    # Without the AdmissionChecks (not readable), the queue's own objects cannot say.
    assert all(
        s.multikueue is None
        for s in queue_summaries(
            [queue("far", "mk-cq")], [cluster_queue("mk-cq", [CHECK])], [], dispatchers=None
        )
    )


# -- read back by a kernel through its server (jupyter_dw.domain.json_decode) -----------------


@pytest.mark.parametrize("key", ["v1beta2-admitted", "v1beta2-nominated", "v1beta1-admitted"])
def test_a_placed_workload_reads_back(key):
    made = workload_info(real(key), dispatching=frozenset({CHECK}))
    assert made is not None and made.placement is not None
    back = round_trip(WorkloadInfo, made)
    assert back.placement == made.placement
    job_part = JobWorkload.of(made)
    assert job_workload_from_json(through_json(workload_fields(job_part))) == job_part


def test_a_cluster_on_a_worker_reads_back_with_its_note():
    snapshot = cluster_snapshot(real("v1beta2-raycluster-dispatched"), real("v1beta2-admitted"))
    assert snapshot.placement is not None
    note = unreachable_dashboard(snapshot.placement)
    made = ClusterInfo(
        snapshot,
        None,
        "alice",
        (),
        (),
        usage=ClusterUsage(metrics_reason="runs on worker cluster worker-1: measured there"),
        dashboard_note=note,
    )
    back = round_trip(ClusterInfo, made)
    assert (back.placement, back.dashboard_note) == (made.placement, note)


def test_a_dispatching_queue_reads_back():
    found = dispatchers([real("v1beta2-admissioncheck")], [real("v1beta2-multikueueconfig")])
    summary = replace(answer(1).queues[0], multikueue=found[CHECK])
    back = round_trip(QueueList, QueueList("ns", "v1beta2", True, True, (summary,)))
    assert back.queues[0].multikueue == found[CHECK]


def test_without_the_checks_a_queues_workloads_tell():
    nominated, admitted = real("v1beta2-nominated"), real("v1beta1-admitted")
    plain = JOBS["v1beta2-admitted"]
    assert dispatchers_seen([plain, nominated, admitted]) == {"team": Dispatcher(CHECK)}
    summaries = queue_summaries(
        [LocalQueueInfo.from_object(
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": "team", "namespace": "mk"}, "spec": {"clusterQueue": "cq"}}
        )],
        None,
        seen=dispatchers_seen([nominated]),
    )  # fmt: skip
    assert summaries[0].multikueue == Dispatcher(CHECK)
    assert "which ones this workbench may not read" in Dispatcher(CHECK).sentence
