"""Freshness and watch health: how states combine and keep their start."""

from __future__ import annotations

import pytest

from jupyter_dw.domain.freshness import FRESH, Freshness, WatchHealth, worst


def test_moving_keeps_since_while_the_state_stays():
    away = FRESH.moved_to("reconnecting", "refused", 100.0)
    still = away.moved_to("reconnecting", "timed out", 105.0)
    assert (still.state, still.reason, still.since) == ("reconnecting", "timed out", 100.0)
    back = still.moved_to("live", None, 110.0)
    assert (back.state, back.reason, back.since) == ("live", None, 110.0)
    assert back.moved_to("live", None, 120.0) is back


def test_worst_prefers_stale_then_reconnecting_then_the_earliest():
    early = Freshness("reconnecting", "a", 10.0)
    late = Freshness("reconnecting", "b", 20.0)
    stale = Freshness("stale", "forbidden", 30.0)
    assert worst([late, early]) == early
    assert worst([early, stale, late]) == stale
    assert worst([]) == FRESH
    assert worst([FRESH, Freshness("live", None, 5.0)]).live


def test_unknown_states_are_refused():
    with pytest.raises(ValueError, match="unknown freshness state"):
        Freshness("fine")


def test_a_cluster_depends_on_kueue_only_when_kueue_manages_it():
    down = Freshness("stale", "Kueue is not answering", 50.0)
    health = WatchHealth({"rayclusters": FRESH, "workloads": FRESH, "pods": FRESH}, down)
    sources = ("rayclusters", "workloads", "pods")
    assert health.of_cluster(sources, follows_workload=True) == down
    assert health.of_cluster(sources, follows_workload=False).live
    assert health.freshness == down


def test_json_has_state_reason_and_an_rfc3339_since():
    away = Freshness("reconnecting", "refused", 0.25)
    assert away.to_json() == {
        "state": "reconnecting",
        "reason": "refused",
        "since": "1970-01-01T00:00:00.250Z",
    }
    health = WatchHealth({"pods": away, "localqueues": FRESH})
    assert list(health.to_json()["caches"]) == ["localqueues", "pods"]
    assert health.to_json()["freshness"]["state"] == "reconnecting"


def test_the_notebook_display_says_when_a_state_is_not_current():
    from jupyter_dw.core.cluster_results import ClusterInfo
    from jupyter_dw.domain.cluster_state import cluster_snapshot
    from jupyter_dw.notebook.display import cluster_html

    raycluster = {"metadata": {"name": "rc", "namespace": "ns"}, "spec": {}}
    status = cluster_snapshot(raycluster)
    fresh = ClusterInfo(status, "/dw/ray/rc/", None, (), ())
    away = Freshness("reconnecting", "Cannot reach the Kubernetes API server", 0.0)
    assert "last known state" not in cluster_html(fresh)
    html = cluster_html(ClusterInfo(status, "/dw/ray/rc/", None, (), (), away))
    assert "reconnecting since 1970-01-01T00:00:00.000Z" in html
    assert "Cannot reach the Kubernetes API server" in html


def test_kueue_down_is_told_by_its_visibility_api_or_its_webhook():
    from jupyter_dw.k8s.client import FailedCall
    from jupyter_dw.k8s.kueue_health import kueue_failure as _kueue_failure

    visibility = FailedCall(
        "GET", "/apis/visibility.kueue.x-k8s.io/v1beta2", 503, "ServiceUnavailable", "down"
    )
    assert "visibility API answers 503" in (_kueue_failure(visibility) or "")
    webhook = FailedCall(
        "POST",
        "/apis/ray.io/v1/namespaces/ns/rayclusters",
        500,
        "InternalError",
        'Internal error occurred: failed calling webhook "mraycluster.kb.io": failed to call '
        'webhook: Post "https://kueue-webhook-service.kueue-system.svc:443/mutate": refused',
    )
    assert "webhook cannot be called" in (_kueue_failure(webhook) or "")
    other = FailedCall("GET", "/apis/ray.io/v1/namespaces/ns/rayclusters", 503, "Unavailable", "")
    assert _kueue_failure(other) is None  # the API server's own 503 says nothing of Kueue


def test_a_visibility_answer_says_kueue_is_live_and_spares_the_next_probe():
    from jupyter_dw.k8s.kueue_health import KueueHealth

    changes: list[str] = []
    health = KueueHealth(lambda: changes.append(health.freshness.state))
    health.set("stale", "Kueue is not answering")
    assert health.take_answered() is False  # nothing answered yet

    health.answered()

    assert health.live and changes == ["stale", "live"]
    assert health.returns == 1  # back: what was learned from it is worth asking again
    assert health.take_answered() is True
    assert health.take_answered() is False  # taken: the re-check after it probes again
