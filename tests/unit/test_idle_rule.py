"""The idle rule's verdict and the settings that make it (pure; the runner is tested on the
real control plane in tests/integration/test_idle_rule.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from traitlets import TraitError

from jupyter_dw.core.settings import DWSettings
from jupyter_dw.domain.idle_rule import IdleRule, judge, waiting_near
from jupyter_dw.domain.kueue_model import ClusterQueueQuota, LocalQueueInfo
from jupyter_dw.domain.quota import QuotaTree

SINCE = "2026-11-26T10:00:00Z"
T0 = datetime(2026, 11, 26, 10, 0, tzinfo=timezone.utc)
RULE = IdleRule(timeout=3600, action="stop", only_when_others_wait=True, warning=600)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_warned_before_then_acted_on_while_others_wait():
    early = judge(RULE, SINCE, at(30), waiting=2)
    assert early is not None and not early.warning and not early.act
    assert early.at == "2026-11-26T11:00:00Z" and early.idle_seconds == 1800
    warned = judge(RULE, SINCE, at(50), waiting=2)
    assert warned is not None and warned.warning and not warned.act
    due = judge(RULE, SINCE, at(60), waiting=2)
    assert due is not None and due.act
    assert due.reason() == {"by": "idle-rule", "idle_seconds": 3600, "waiting": 2, "action": "stop"}
    assert (
        due.message()
        == "Stopped by jupyter_dw's idle rule after 60 min idle while 2 workloads waited."
    )


def test_held_back_while_nobody_waits_unless_told_otherwise():
    alone = judge(RULE, SINCE, at(120), waiting=0)
    assert alone is not None and alone.held_back and not alone.act and not alone.warning
    anyway = IdleRule(timeout=3600, action="delete", only_when_others_wait=False)
    acted = judge(anyway, SINCE, at(120), waiting=0)
    assert acted is not None and acted.act and acted.message().startswith("Deleted")


def test_no_verdict_while_busy_or_with_the_rule_off():
    assert judge(RULE, None, at(120), waiting=3) is None
    assert judge(IdleRule(), SINCE, at(120), waiting=3) is None


def cq(name: str, cohort: str | None, pending: int) -> ClusterQueueQuota:
    return ClusterQueueQuota(name=name, cohort=cohort, pending=pending)


def test_waiting_counts_the_cluster_queue_and_its_cohort_tree():
    tree = QuotaTree(
        [cq("a", "team", 1), cq("b", "team", 2), cq("c", None, 5), cq("d", "other", 7)]
    )
    assert waiting_near(tree, "a") == 3
    assert waiting_near(tree, "c") == 5
    assert waiting_near(tree, None) == 0 and waiting_near(None, "a") == 0
    # Without the ClusterQueues, the namespace's LocalQueues into it are what can be known.
    local = [
        LocalQueueInfo(name="team", namespace="ns", cluster_queue="a", pending=2),
        LocalQueueInfo(name="other", namespace="ns", cluster_queue="b", pending=4),
    ]
    assert waiting_near(None, "a", local) == 2
    # Kueue writes the two counts apart: the larger is what is known to wait.
    lagging = QuotaTree([cq("a", None, 0)])
    assert waiting_near(lagging, "a", local) == 2


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"idle_cluster_timeout": -1}, "JupyterDW.idle_cluster_timeout"),
        ({"idle_cluster_warning": float("nan")}, "JupyterDW.idle_cluster_warning"),
        ({"idle_cluster_action": "archive"}, "idle_cluster_action"),
        ({"on_server_stop": "pause"}, "on_server_stop"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(settings, named):
    with pytest.raises(TraitError, match=named):
        DWSettings(**settings)


def test_a_rule_that_cannot_work_is_refused_naming_the_setting():
    no_usage = DWSettings(idle_cluster_timeout=600, usage_interval=0)
    with pytest.raises(TraitError, match=r"JupyterDW\.idle_cluster_timeout needs usage"):
        no_usage.idle_rule()
    too_short = DWSettings(idle_cluster_timeout=5, usage_interval=15)
    with pytest.raises(TraitError, match=r"at least JupyterDW\.usage_interval"):
        too_short.idle_rule()
    fine = DWSettings(idle_cluster_timeout=600, idle_cluster_action="delete").idle_rule()
    assert fine.on and fine.action == "delete" and fine.only_when_others_wait
