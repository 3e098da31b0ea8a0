"""``GET dw/api/queues`` on the real control plane, answered from a workbench service account.

Every number is compared with what Kueue itself wrote into LocalQueue and ClusterQueue status,
and headroom is proved by Kueue's own admission decisions: a Workload asking exactly the
reported headroom is admitted, one asking 1m CPU more is not.
"""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from typing import Any

import pytest

from jupyter_dw.domain.quantity import parse_quantity
from jupyter_dw.k8s.resources import CLUSTER_QUEUE, LOCAL_QUEUE
from jupyter_dw.k8s.session import KubeSession
from tests.cluster.fixtures import (
    WAIT_TIMEOUT,
    KueueObjects,
    condition,
    plain_workload,
    watch_until,
)
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

pytestmark = pytest.mark.cluster

KUEUE = "kueue.x-k8s.io"
WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES
EPSILON = Decimal("0.001")  # 1m CPU: Kueue's CPU granularity


async def get_queues(jp_fetch) -> dict[str, Any]:
    response = await jp_fetch("dw", "api", "queues", request_timeout=WAIT_TIMEOUT)
    assert response.code == 200
    return json.loads(response.body)


# --------------------------------------------------------------------------------------------
# Kueue objects and waiting for Kueue
# --------------------------------------------------------------------------------------------


class Cohort:
    """Three LocalQueues on two ClusterQueues in one cohort (names are per test).

    alpha: 4 CPUs, may borrow 3. beta: 6 CPUs, lends at most 2. team-a (the annotated default)
    and team-a2 send to alpha, team-b to beta.
    """

    def __init__(self, kueue: KueueObjects) -> None:
        self.kueue = kueue
        self.custom = kueue.custom
        flavor = kueue.flavor("cpu")
        self.flavor = flavor
        self.alpha = kueue.cluster_queue(
            "alpha",
            {flavor: {"cpu": {"nominalQuota": "4", "borrowingLimit": "3"}, "memory": "8Gi"}},
            cohort="pool",
        )
        self.beta = kueue.cluster_queue(
            "beta",
            {flavor: {"cpu": {"nominalQuota": "6", "lendingLimit": "2"}, "memory": "8Gi"}},
            cohort="pool",
        )
        for cq in (self.alpha, self.beta):
            kueue.wait_active("clusterqueues", cq)
        self.queues = {
            kueue.local_queue(
                "team-a", self.alpha, annotations={"kueue.x-k8s.io/default-queue": "true"}
            ): self.alpha,
            kueue.local_queue("team-a2", self.alpha): self.alpha,
            kueue.local_queue("team-b", self.beta): self.beta,
        }
        for lq in self.queues:
            kueue.wait_active("localqueues", lq)
        self.holding: dict[str, tuple[str, Decimal]] = {}  # admitted: name -> (queue, cpu)
        self.waiting: dict[str, str] = {}  # kept pending: name -> queue

    @property
    def version(self) -> str:
        return self.kueue.api_version

    @property
    def namespace(self) -> str:
        return self.kueue.namespace

    def submit(self, name: str, queue: str, cpu: Decimal | str) -> dict[str, Any]:
        """A plain Workload of one pod asking ``cpu`` in LocalQueue ``queue``."""
        body = plain_workload(self.version, name, queue, cpu_string(cpu))
        return self.custom.create_namespaced_custom_object(
            KUEUE, self.version, self.namespace, "workloads", body
        )

    def admit(self, name: str, queue: str, cpu: Decimal | str) -> dict[str, Any]:
        """Submit a Workload and assert that Kueue admits it; it then counts in :meth:`settle`."""
        self.submit(name, queue, cpu)
        workload = self.decided(name)
        assert is_admitted(workload), f"Kueue did not admit {name}: {quota_message(workload)}"
        self.holding[name] = (queue, parse_quantity(cpu) if isinstance(cpu, str) else cpu)
        return workload

    def refuse(self, name: str, queue: str, cpu: Decimal | str) -> dict[str, Any]:
        """Submit a Workload and assert that Kueue keeps it pending for lack of quota; it then
        counts as pending in :meth:`settle`."""
        self.submit(name, queue, cpu)
        workload = self.decided(name)
        assert not is_admitted(workload), f"Kueue admitted {name} asking {cpu} CPU"
        self.waiting[name] = queue
        return workload

    def decided(self, name: str) -> dict[str, Any]:
        """Wait for Kueue's decision on a Workload: admitted, or pending for lack of quota."""
        return self.wait_workload(
            name,
            lambda w: is_admitted(w) or "insufficient" in quota_message(w),
            "admitted or kept pending for lack of quota",
        )

    def delete(self, name: str) -> None:
        self.custom.delete_namespaced_custom_object(
            KUEUE, self.version, self.namespace, "workloads", name
        )
        self.holding.pop(name, None)
        self.waiting.pop(name, None)

    def wait_workload(self, name: str, predicate, what: str) -> dict[str, Any]:
        return watch_until(
            lambda **kw: self.custom.list_namespaced_custom_object(
                KUEUE, self.version, self.namespace, "workloads", **kw
            ),
            predicate,
            field_selector=f"metadata.name={name}",
            what=f"workload {name}: {what}",
        )

    def settle(self) -> None:
        """Wait until Kueue's ClusterQueue and LocalQueue status count exactly the workloads
        this test holds and keeps waiting (Kueue writes status some time after admitting)."""
        for cq in (self.alpha, self.beta):
            lqs = [lq for lq, target in self.queues.items() if target == cq]
            expected = (
                sum(1 for lq, _ in self.holding.values() if lq in lqs),
                sum(1 for lq in self.waiting.values() if lq in lqs),
                sum((cpu for lq, cpu in self.holding.values() if lq in lqs), Decimal(0)),
            )
            watch_until(
                lambda **kw: self.custom.list_cluster_custom_object(
                    KUEUE, self.version, "clusterqueues", **kw
                ),
                lambda obj, expected=expected: status_counts(obj) == expected,
                field_selector=f"metadata.name={cq}",
                what=f"ClusterQueue {cq} status to show {expected}",
            )
        for lq in self.queues:
            expected = (
                sum(1 for q, _ in self.holding.values() if q == lq),
                sum(1 for q in self.waiting.values() if q == lq),
                sum((cpu for q, cpu in self.holding.values() if q == lq), Decimal(0)),
            )
            watch_until(
                lambda **kw: self.custom.list_namespaced_custom_object(
                    KUEUE, self.version, self.namespace, "localqueues", **kw
                ),
                lambda obj, expected=expected: status_counts(obj) == expected,
                field_selector=f"metadata.name={lq}",
                what=f"LocalQueue {lq} status to show {expected}",
            )

    def kueue_view(self) -> tuple[dict[str, dict], dict[str, dict]]:
        """LocalQueues and ClusterQueues as Kueue reports them now (admin read)."""
        lqs = self.custom.list_namespaced_custom_object(
            KUEUE, self.version, self.namespace, "localqueues"
        )["items"]
        cqs = [
            self.custom.get_cluster_custom_object(KUEUE, self.version, "clusterqueues", name)
            for name in (self.alpha, self.beta)
        ]
        return (
            {o["metadata"]["name"]: o for o in lqs},
            {o["metadata"]["name"]: o for o in cqs},
        )


def cpu_string(cpu: Decimal | str) -> str:
    if isinstance(cpu, str):
        return cpu
    return f"{int(cpu * 1000)}m"


def quota_message(workload: dict[str, Any]) -> str:
    """Kueue's message on the QuotaReserved condition ("" when there is none yet)."""
    return str((condition(workload, "QuotaReserved") or {}).get("message") or "")


def is_admitted(workload: dict[str, Any]) -> bool:
    return (condition(workload, "Admitted") or {}).get("status") == "True"


def status_counts(obj: dict[str, Any]) -> tuple[int, int, Decimal]:
    """(reserving, pending, reserved CPU) from a ClusterQueue's or LocalQueue's status."""
    status = obj.get("status") or {}
    cpu = sum(
        (
            parse_quantity(r.get("total", "0"))
            for f in status.get("flavorsReservation") or []
            for r in f.get("resources") or []
            if r.get("name") == "cpu"
        ),
        Decimal(0),
    )
    return status.get("reservingWorkloads", 0), status.get("pendingWorkloads", 0), cpu


async def server_caught_up(session: KubeSession, lqs: dict[str, dict], cqs: dict[str, dict]):
    """Wait until the server's watch caches hold exactly these objects' statuses."""

    def same(kind, wanted: dict[str, dict]):
        cache = session.cache(kind)
        assert cache is not None, f"no {kind.plural} cache"

        def predicate(objects):
            have = {o["metadata"]["name"]: o.get("status") for o in objects}
            return all(have.get(name) == obj.get("status") for name, obj in wanted.items())

        assert cache.wait_until(predicate, WAIT_TIMEOUT), f"{kind.plural} cache never caught up"

    await asyncio.to_thread(session.wait_ready, WAIT_TIMEOUT)
    await asyncio.to_thread(same, LOCAL_QUEUE, lqs)
    if cqs and session.cache(CLUSTER_QUEUE) is not None:
        await asyncio.to_thread(same, CLUSTER_QUEUE, cqs)


async def settled_queues(cohort: Cohort, session: KubeSession, jp_fetch) -> tuple:
    """Let Kueue settle, wait for the server to see it, then GET queues; also return Kueue's
    view the answer must equal."""
    await asyncio.to_thread(cohort.settle)
    lqs, cqs = cohort.kueue_view()
    await server_caught_up(session, lqs, cqs)
    return await get_queues(jp_fetch), lqs, cqs


# --------------------------------------------------------------------------------------------
# Comparing with Kueue's status
# --------------------------------------------------------------------------------------------


def q(value: str | None) -> Decimal | None:
    return None if value is None else parse_quantity(value)


def amounts(status: dict[str, Any], key: str, field: str = "total") -> dict[tuple, Decimal]:
    out: dict[tuple, Decimal] = {}
    for flavor in status.get(key) or []:
        for res in flavor.get("resources") or []:
            k = (flavor["name"], res["name"])
            out[k] = out.get(k, Decimal(0)) + parse_quantity(res.get(field, "0"))
    return out


def lq_status_matches(queue: dict[str, Any], lq: dict[str, Any]) -> None:
    status = lq.get("status") or {}
    assert queue["cluster_queue"] == lq["spec"]["clusterQueue"]
    assert queue["pending"] == status.get("pendingWorkloads", 0)
    assert queue["reserving"] == status.get("reservingWorkloads", 0)
    assert queue["admitted"] == status.get("admittedWorkloads", 0)
    assert queue["active"] is ((condition(lq, "Active") or {}).get("status") == "True")


def assert_equals_kueue(queue: dict[str, Any], lq: dict[str, Any], cq: dict[str, Any]) -> None:
    """Every number of one queue equals Kueue's LocalQueue/ClusterQueue spec and status."""
    lq_status_matches(queue, lq)
    spec = {
        (flavor["name"], res["name"]): res
        for group in cq["spec"]["resourceGroups"]
        for flavor in group["flavors"]
        for res in flavor["resources"]
    }
    cq_status = cq.get("status") or {}
    reserved = amounts(cq_status, "flavorsReservation")
    borrowed = amounts(cq_status, "flavorsReservation", "borrowed")
    used = amounts(cq_status, "flavorsUsage")
    lq_status = lq.get("status") or {}
    lq_reserved = amounts(lq_status, "flavorsReservation")
    lq_used = amounts(lq_status, "flavorsUsage" if "flavorsUsage" in lq_status else "flavorUsage")
    rows = {(r["flavor"], r["resource"]): r for r in queue["resources"]}
    assert set(rows) == set(spec)
    zero = Decimal(0)
    for key, row in rows.items():
        assert q(row["nominal"]) == parse_quantity(spec[key]["nominalQuota"]), key
        assert q(row["borrowing_limit"]) == q(spec[key].get("borrowingLimit")), key
        assert q(row["lending_limit"]) == q(spec[key].get("lendingLimit")), key
        assert q(row["reserved"]) == reserved.get(key, zero), key
        assert q(row["used"]) == used.get(key, zero), key
        assert q(row["borrowed"]) == borrowed.get(key, zero), key
        assert q(row["queue_reserved"]) == lq_reserved.get(key, zero), key
        assert q(row["queue_used"]) == lq_used.get(key, zero), key


def by_name(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {queue["name"]: queue for queue in answer["queues"]}


def cpu_row(queue: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in queue["resources"] if r["resource"] == "cpu")


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


async def test_every_number_equals_kueue_status_with_one_queue_borrowing(
    kueue, jp_fetch, session, kueue_api_version
):
    cohort = Cohort(kueue)
    # alpha borrows 1 CPU (5 > its 4), beta uses 3 of its own, and one workload cannot fit.
    await asyncio.to_thread(cohort.admit, "fill-a", "team-a", "5")
    await asyncio.to_thread(cohort.admit, "fill-b", "team-b", "3")
    await asyncio.to_thread(cohort.refuse, "too-big", "team-a2", "20")

    answer, lqs, cqs = await settled_queues(cohort, session, jp_fetch)

    assert answer["namespace"] == cohort.namespace
    assert answer["kueue_api"] == kueue_api_version
    assert answer["quota_visible"] is True
    queues = by_name(answer)
    assert set(queues) == {"team-a", "team-a2", "team-b"}
    for name, queue in queues.items():
        assert queue["quota_visible"] is True
        assert_equals_kueue(queue, lqs[name], cqs[queue["cluster_queue"]])
    # The scenario really has a borrower and a pending workload (else the above proves little).
    assert q(cpu_row(queues["team-a"])["borrowed"]) == Decimal(1)
    assert queues["team-a2"]["pending"] == 1
    assert queues["team-a"]["default"] is True
    assert queues["team-a"]["default_convention"] == "annotation"
    assert not queues["team-a2"]["default"] and not queues["team-b"]["default"]
    # Lending limit: alpha may still take only what beta lends (2) minus what it borrowed (1);
    # beta keeps 1 of its own 4 unlendable CPUs plus that 1.
    assert q(cpu_row(queues["team-a"])["headroom"]) == Decimal(1)
    assert q(cpu_row(queues["team-b"])["headroom"]) == Decimal(2)


async def test_headroom_is_what_kueue_admits(kueue, jp_fetch, session):
    """In several cohort states, exactly the reported headroom is admitted; 1m more is not."""
    cohort = Cohort(kueue)
    counter = iter(range(1000))

    async def prove(queue: str) -> Decimal:
        answer, _, _ = await settled_queues(cohort, session, jp_fetch)
        headroom = q(cpu_row(by_name(answer)[queue])["headroom"])
        assert headroom is not None and headroom > 0, f"{queue}: nothing to prove"
        n = next(counter)
        await asyncio.to_thread(cohort.refuse, f"more-{n}", queue, headroom + EPSILON)
        cohort.delete(f"more-{n}")
        await asyncio.to_thread(cohort.admit, f"exact-{n}", queue, headroom)
        cohort.delete(f"exact-{n}")  # back to the state under test, once Kueue has seen it
        await asyncio.to_thread(cohort.settle)
        return headroom

    async def state() -> dict[str, Decimal]:
        return {queue: await prove(queue) for queue in ("team-a2", "team-b")}

    # 1. Empty cohort: alpha gets its 4 plus the 2 beta lends; beta its 6 plus alpha's 4.
    empty = await state()
    # 2. After a borrow: alpha holds 5 (1 borrowed from beta's lendable 2).
    await asyncio.to_thread(cohort.admit, "fill-a", "team-a", "5")
    borrowed = await state()
    # 3. And beta uses 3 of its own.
    await asyncio.to_thread(cohort.admit, "fill-b", "team-b", "3")
    both = await state()

    # The states differ, so each proof above tested a different number.
    assert empty["team-a2"] > borrowed["team-a2"]
    assert empty["team-b"] > borrowed["team-b"] > both["team-b"]


@pytest.mark.parametrize("cluster_rules", [None], indirect=True)
async def test_without_clusterqueue_permission_quota_is_hidden_not_an_error(
    kueue, jp_fetch, session
):
    cohort = Cohort(kueue)
    await asyncio.to_thread(cohort.admit, "fill-a", "team-a", "5")

    answer, lqs, _ = await settled_queues(cohort, session, jp_fetch)

    assert session.cache(CLUSTER_QUEUE) is None  # the access review said no
    assert answer["quota_visible"] is False
    queues = by_name(answer)
    assert set(queues) == {"team-a", "team-a2", "team-b"}
    for name, queue in queues.items():
        lq_status_matches(queue, lqs[name])
        assert queue["quota_visible"] is False
        assert "clusterqueues.kueue.x-k8s.io" in queue["hint"]
        reserved = amounts(lqs[name].get("status") or {}, "flavorsReservation")
        for row in queue["resources"]:
            assert row["nominal"] is None and row["headroom"] is None and row["borrowed"] is None
            assert q(row["reserved"]) == reserved.get((row["flavor"], row["resource"]), 0)
    assert q(cpu_row(queues["team-a"])["reserved"]) == Decimal(5)


async def test_an_admitted_workload_shows_up_without_restart(kueue, jp_fetch, session):
    cohort = Cohort(kueue)
    before, _, _ = await settled_queues(cohort, session, jp_fetch)
    assert by_name(before)["team-b"]["admitted"] == 0
    assert q(cpu_row(by_name(before)["team-b"])["reserved"]) == 0
    relists = {kind.plural: session.cache(kind).relists for kind in (LOCAL_QUEUE, CLUSTER_QUEUE)}

    await asyncio.to_thread(cohort.admit, "late", "team-b", "2")
    after, lqs, cqs = await settled_queues(cohort, session, jp_fetch)

    team_b = by_name(after)["team-b"]
    assert team_b["admitted"] == 1
    assert q(cpu_row(team_b)["queue_reserved"]) == Decimal(2)
    assert q(cpu_row(team_b)["reserved"]) == Decimal(2)
    assert_equals_kueue(team_b, lqs["team-b"], cqs[cohort.beta])
    # The change came through the watches, not a new list (nor a restart).
    for kind in (LOCAL_QUEUE, CLUSTER_QUEUE):
        assert session.cache(kind).relists == relists[kind.plural]
