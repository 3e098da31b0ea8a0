"""flavorFungibility and admission checks in the fit verdict, as Kueue v0.19.2's flavor assigner
(``findFlavorForPodSets``, ``shouldTryNextFlavor``, ``isPreferred``) and its ClusterQueue API
decide them. Numbers worked out in the comments."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from jupyter_dw.domain.fit import FITS_NOW, MUST_WAIT, PodSetRequest, assess_fit
from jupyter_dw.domain.kueue_model import (
    AdmissionCheckRule,
    ClusterQueueQuota,
    CohortQuota,
    FlavorFungibility,
)
from jupyter_dw.domain.quota import QuotaTree
from tests.unit.test_fit import cpu_mem, cq_obj

GI = 2**30


def queue(
    name: str,
    flavors: list[tuple[str, str]],
    *,
    cohort: str | None = "pool",
    fungibility: dict[str, str] | None = None,
    version: str = "v1beta2",
    **spec: Any,
) -> ClusterQueueQuota:
    """A ClusterQueue with one cpu+memory group: ``flavors`` are (name, cpu nominal)."""
    groups = [cpu_mem(f, cpu, "64Gi") for f, cpu in flavors]
    obj = cq_obj(
        name, [(["cpu", "memory"], [g[1][0] for g in groups])], cohort=cohort, version=version
    )
    if fungibility is None:
        del obj["spec"]["flavorFungibility"]
    else:
        obj["spec"]["flavorFungibility"] = fungibility
    obj["spec"].update(spec)
    return ClusterQueueQuota.from_object(obj)


def pod_set(cpu: str, count: int = 1) -> list[PodSetRequest]:
    return [PodSetRequest("workers", count, {"cpu": Decimal(cpu), "memory": Decimal(GI)})]


def verdict(team: ClusterQueueQuota, cpu: str, *others: ClusterQueueQuota, cohorts=()):
    tree = QuotaTree([team, *others], list(cohorts))
    return assess_fit(pod_set(cpu), tree.cluster_queue(team.name), tree)


# "spot" has no quota of its own in team (everything there is borrowed from lender's 8 CPU);
# "reserved" is team's own 4 CPU. Kueue tries spot first.
LENDER = queue("lender", [("spot", "8")])
TRY_NEXT = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}


def test_default_stops_at_the_first_flavor_even_if_it_borrows() -> None:
    team = queue("team", [("spot", "0"), ("reserved", "4")])
    assert team.flavor_fungibility == FlavorFungibility("MayStopSearch", "TryNextFlavor")
    fit = verdict(team, "2", LENDER)
    assert (fit.verdict, fit.flavors["cpu"]) == (FITS_NOW, "spot")


def test_try_next_flavor_prefers_a_flavor_without_borrowing() -> None:
    team = queue("team", [("spot", "0"), ("reserved", "4")], fungibility=TRY_NEXT)
    fit = verdict(team, "2", LENDER)
    assert (fit.verdict, fit.flavors["cpu"]) == (FITS_NOW, "reserved")
    assert fit.assignment == {"workers": {"cpu": "reserved", "memory": "reserved"}}


def test_try_next_flavor_falls_back_to_the_flavor_borrowing_least() -> None:
    # 6 CPU: reserved (4) cannot take it at all; spot borrows from the cohort: spot it is.
    team = queue("team", [("spot", "0"), ("reserved", "4")], fungibility=TRY_NEXT)
    fit = verdict(team, "6", LENDER)
    assert (fit.verdict, fit.flavors["cpu"]) == (FITS_NOW, "spot")


def test_try_next_flavor_counts_what_the_queue_already_holds() -> None:
    # reserved: 4 nominal, 3 already reserved → 2 more would borrow (and nobody lends it).
    obj = cq_obj(
        "team",
        [
            (
                ["cpu", "memory"],
                [
                    ("spot", {"cpu": "0", "memory": "64Gi"}),
                    ("reserved", {"cpu": "4", "memory": "64Gi"}),
                ],
            )
        ],
        cohort="pool",
        reserved={("reserved", "cpu"): "3"},
    )
    obj["spec"]["flavorFungibility"] = TRY_NEXT
    team = ClusterQueueQuota.from_object(obj)
    fit = verdict(team, "2", LENDER)
    assert (fit.verdict, fit.flavors["cpu"]) == (FITS_NOW, "spot")


def test_v1beta1_borrow_reads_as_may_stop_search() -> None:
    team = queue(
        "team",
        [("spot", "0"), ("reserved", "4")],
        version="v1beta1",
        fungibility={"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
    )
    assert team.flavor_fungibility == FlavorFungibility("MayStopSearch", "MayStopSearch")
    assert verdict(team, "2", LENDER).flavors["cpu"] == "spot"


def test_borrowing_level_climbs_the_cohort_tree() -> None:
    # team (2 nominal) -> cohort "pool" (own 2) -> root cohort "org" (own 8).
    team = queue("team", [("spot", "2")])
    pool = CohortQuota.from_object(
        {
            "metadata": {"name": "pool"},
            "spec": {"parentName": "org", "resourceGroups": [cpu_group("spot", "2")]},
        }
    )
    org = CohortQuota.from_object(
        {"metadata": {"name": "org"}, "spec": {"resourceGroups": [cpu_group("spot", "8")]}}
    )
    tree = QuotaTree([team], [pool, org])
    levels = [tree.borrowing_level("team", "spot", "cpu", Decimal(n)) for n in (2, 4, 5)]
    assert levels == [0, 1, 2]


def cpu_group(flavor: str, cpu: str) -> dict[str, Any]:
    return {
        "coveredResources": ["cpu", "memory"],
        "flavors": [
            {
                "name": flavor,
                "resources": [
                    {"name": "cpu", "nominalQuota": cpu},
                    {"name": "memory", "nominalQuota": "64Gi"},
                ],
            }
        ],
    }


# -- admission checks -----------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_checks_are_read_from_the_strategy_and_v1beta1s_list(version: str) -> None:
    spec: dict[str, Any] = {
        "admissionChecksStrategy": {
            "admissionChecks": [{"name": "capacity"}, {"name": "gpus", "onFlavors": ["gpu"]}]
        }
    }
    team = queue("team", [("cpu", "8")], cohort=None, version=version, **spec)
    assert team.admission_checks == (
        AdmissionCheckRule("capacity"),
        AdmissionCheckRule("gpus", ("gpu",)),
    )
    legacy = queue(
        "old", [("cpu", "8")], cohort=None, version="v1beta1", admissionChecks=["capacity"]
    )
    assert legacy.admission_checks == (AdmissionCheckRule("capacity"),)


def test_fits_the_quota_then_waits_for_capacity() -> None:
    strategy = {"admissionChecks": [{"name": "capacity"}, {"name": "gpus", "onFlavors": ["gpu"]}]}
    team = queue("team", [("cpu", "8")], cohort=None, admissionChecksStrategy=strategy)
    fit = verdict(team, "2")
    assert fit.verdict == FITS_NOW  # quota is what the verdict judges
    assert fit.admission_checks == ("capacity",)  # "gpus" runs only on flavor gpu
    assert fit.to_json()["admission_checks"] == ["capacity"]
    assert "fits the quota; then waits for capacity from admission check capacity" in fit.message
    assert "fits now" not in fit.message


def test_a_waiting_verdict_also_names_the_checks() -> None:
    # 4 CPU nominal, 3 reserved: 2 more must wait for quota, then for the check.
    obj = cq_obj("team", [cpu_mem("cpu", "4", "64Gi")], reserved={("cpu", "cpu"): "3"})
    obj["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "capacity"}]}
    team = ClusterQueueQuota.from_object(obj)
    fit = verdict(team, "2")
    assert fit.verdict == MUST_WAIT
    assert fit.message.endswith("; then for capacity from admission check capacity.")


def test_no_checks_fits_now() -> None:
    fit = verdict(queue("team", [("cpu", "8")], cohort=None), "2")
    assert fit.admission_checks == () and "fits now" in fit.message


# whenCanPreempt: a flavor that fits only by preempting. "busy" (first) has 4 CPU, all reserved
# by admitted workloads; "idle" has 4 CPU free. Kueue takes idle unless it may stop to preempt.
STOP_TO_PREEMPT = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}
PREEMPTS = {"withinClusterQueue": "LowerPriority"}


@pytest.mark.parametrize(
    ("spec", "caveat"),
    [
        ({}, False),  # Kueue's defaults: never preempts, tries the next flavor
        ({"preemption": PREEMPTS}, False),  # preempts, but whenCanPreempt: TryNextFlavor
        ({"flavorFungibility": STOP_TO_PREEMPT}, False),  # may stop, but never preempts
        ({"flavorFungibility": STOP_TO_PREEMPT, "preemption": PREEMPTS}, True),
        (
            {
                "flavorFungibility": STOP_TO_PREEMPT,
                "preemption": {"withinClusterQueue": "Never", "borrowWithinCohort": {}},
            },
            False,
        ),
    ],
)
def test_a_fit_past_a_full_flavor_says_when_kueue_may_stop_to_preempt(
    spec: dict[str, Any], caveat: bool
) -> None:
    groups = [cpu_mem("busy", "4", "64Gi"), cpu_mem("idle", "4", "64Gi")]
    obj = cq_obj(
        "team",
        [(["cpu", "memory"], [g[1][0] for g in groups])],
        reserved={("busy", "cpu"): "4"},
    )
    obj["spec"].update(spec)
    team = ClusterQueueQuota.from_object(obj)
    fit = verdict(team, "2")
    assert (fit.verdict, fit.flavors["cpu"]) == (FITS_NOW, "idle")
    said = "may instead preempt lower-priority workloads in flavor busy" in fit.message
    assert said is caveat, fit.message
