"""Use against held and idle, from PodMetrics and Ray's own load (pure)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from jupyter_dw.domain.quantity import parse_quantity
from jupyter_dw.domain.usage import (
    RayLoad,
    cluster_pods,
    cluster_usage,
    pod_usages,
    queue_holding,
    ray_resources,
    shown_amount,
)


def pod(name: str, cpu: str = "1", memory: str = "2Gi", cluster: str = "c", node: str = "n1"):
    return {
        "metadata": {"name": name, "labels": {"ray.io/cluster": cluster}},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "ray", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            ],
        },
        "status": {"phase": "Running"},
    }


def metrics(name: str, cpu: str, memory: str = "100Mi", at: str = "2026-11-26T10:00:15Z"):
    return {
        "metadata": {"name": name},
        "timestamp": at,
        "window": "15s",
        "containers": [{"name": "ray", "usage": {"cpu": cpu, "memory": memory}}],
    }


def test_use_is_summed_per_cluster_against_its_requests():
    pods = cluster_pods([pod("h"), pod("w1"), pod("other", cluster="d")], "c")
    assert [p["metadata"]["name"] for p in pods] == ["h", "w1"]
    usages = pod_usages([metrics("h", "250m"), metrics("w1", "1150m", "1Gi")])
    usage = cluster_usage(pods, usages)
    assert usage.to_json()["resources"] == {
        "cpu": {"held": "2", "used": "1400m"},
        "memory": {"held": "4Gi", "used": "1124Mi"},
    }
    assert usage.metrics_reason is None and usage.sampled_at == "2026-11-26T10:00:15Z"
    assert usage.idle is False and usage.idle_basis == "metrics"


def test_an_unknown_use_is_never_a_zero():
    pods = cluster_pods([pod("h")], "c")
    unread = cluster_usage(pods, None, "the metrics API is not served (metrics.k8s.io/v1beta1)")
    assert unread.to_json()["resources"]["cpu"] == {"held": "1", "used": None}
    assert unread.metrics_reason == "the metrics API is not served (metrics.k8s.io/v1beta1)"
    assert unread.idle is None
    # A pod not sampled yet (metrics-server needs two scrapes): unknown, with the pod named.
    partial = cluster_usage(
        cluster_pods([pod("h"), pod("w")], "c"), pod_usages([metrics("h", "0")])
    )
    assert partial.resources["cpu"].used is None
    assert partial.metrics_reason == "the metrics API has no sample of pod w yet"
    assert partial.idle is None


def test_idle_by_the_metrics_api_is_every_pod_below_the_fraction_of_its_cpu():
    pods = cluster_pods([pod("h", cpu="1"), pod("w", cpu="2")], "c")
    quiet = pod_usages([metrics("h", "40m"), metrics("w", "90m")])
    assert cluster_usage(pods, quiet, idle_cpu_fraction=Decimal("0.05")).idle is True
    one_busy = pod_usages([metrics("h", "40m"), metrics("w", "100m")])  # 5 % of 2: not below
    assert cluster_usage(pods, one_busy, idle_cpu_fraction=Decimal("0.05")).idle is False


def test_ray_s_word_decides_idle_where_it_answered():
    pods = cluster_pods([pod("h")], "c")
    busy_cpu = pod_usages([metrics("h", "900m")])
    idle_ray = RayLoad({"CPU": (Decimal(0), Decimal(4))}, 0, 0, 0)
    usage = cluster_usage(pods, busy_cpu, ray=idle_ray)
    assert usage.idle is True and usage.idle_basis == "ray"
    for busy in (
        RayLoad({"CPU": (Decimal(1), Decimal(4))}, 0, 0, 0),
        RayLoad({"CPU": (Decimal(0), Decimal(4))}, 1, 0, 0),
        RayLoad({"CPU": (Decimal(0), Decimal(4))}, 0, 1, 0),
        RayLoad({"CPU": (Decimal(0), Decimal(4))}, 0, 0, 2),
    ):
        assert cluster_usage(pods, None, ray=busy).idle is False
    # Ray answered only in part and showed nothing busy: the metrics API decides.
    half = RayLoad({"CPU": (Decimal(0), Decimal(4))}, None, 0, 0)
    quiet = pod_usages([metrics("h", "1m")])
    assert cluster_usage(pods, quiet, ray=half).idle_basis == "metrics"


def test_ray_s_cluster_status_gives_logical_resources_without_its_internal_ones():
    answer: dict[str, Any] = {
        "data": {
            "clusterStatus": {
                "loadMetricsReport": {
                    "usage": {
                        "CPU": [1.0, 4.0],
                        "GPU": [0.0, 1.0],
                        "memory": [0.0, 8e9],
                        "object_store_memory": [0.0, 2e9],
                        "objectStoreMemory": [0.0, 2e9],
                        "node:10.0.0.1": [0.0, 1.0],
                        "node:__internal_head__": [0.0, 1.0],
                    }
                }
            }
        }
    }
    assert ray_resources(answer) == {
        "CPU": (Decimal("1.0"), Decimal("4.0")),
        "GPU": (Decimal("0.0"), Decimal("1.0")),
    }
    assert ray_resources({"data": {"clusterStatus": None}}) is None


def test_pods_that_hold_no_node_are_not_counted():
    gated = pod("g")
    gated["spec"].pop("nodeName")
    done = pod("d")
    done["status"]["phase"] = "Succeeded"
    going = pod("x")
    going["metadata"]["deletionTimestamp"] = "2026-11-26T10:00:00Z"
    assert cluster_pods([gated, done, going], "c") == []
    usage = cluster_usage([], {})
    assert usage.idle is None and usage.metrics_reason == "no pod of it runs"


def gpu_pod(name: str, gpus: str = "1") -> dict[str, Any]:
    found = pod(name)
    found["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = gpus
    return found


def test_a_gpu_s_use_is_ray_s_gpus_in_use():
    pods = cluster_pods([gpu_pod("h", "2")], "c")
    ray = RayLoad({"GPU": (Decimal(1), Decimal(2))}, 0, 0, 1)
    usage = cluster_usage(pods, None, "no metrics API", ray=ray)
    assert usage.to_json()["resources"]["nvidia.com/gpu"] == {"held": "2", "used": "1"}
    assert usage.to_json()["resources"]["cpu"] == {"held": "1", "used": None}
    # Ray not asked (head not ready): unknown, not zero.
    assert cluster_usage(pods, None).resources["nvidia.com/gpu"].used is None


def test_a_queue_s_holding_sums_clusters_and_is_unknown_when_any_part_is():
    known = cluster_usage(cluster_pods([pod("h")], "c"), pod_usages([metrics("h", "400m")]))
    other = cluster_usage(
        cluster_pods([pod("h2", cpu="3", cluster="d")], "d"), pod_usages([metrics("h2", "1")])
    )
    assert queue_holding([known, other]).to_json() == {
        "clusters": 2,
        "resources": {
            "cpu": {"held": "4", "used": "1400m"},
            "memory": {"held": "4Gi", "used": "200Mi"},
        },
    }
    unread = cluster_usage(cluster_pods([gpu_pod("g")], "c"), None, "no metrics API")
    summed = queue_holding([known, unread]).to_json()["resources"]
    assert summed["cpu"] == {"held": "2", "used": None}
    assert summed["nvidia.com/gpu"] == {"held": "1", "used": None}
    # A cluster holding nothing (stopped: no pod) neither counts nor makes the sum unknown.
    stopped = cluster_usage([], None, "no metrics API")
    assert queue_holding([known, stopped]).to_json() == {
        "clusters": 1,
        "resources": {
            "cpu": {"held": "1", "used": "400m"},
            "memory": {"held": "2Gi", "used": "100Mi"},
        },
    }
    assert queue_holding([]).to_json() == {"clusters": 0, "resources": {}}


@pytest.mark.parametrize(
    ("resource", "quantity", "shown"),
    [
        # What usage_bar.js's amountText shows for the same quantities (node, 2026-11).
        ("cpu", "1437m", "1.4"),
        ("cpu", "250010307n", "0.25"),
        ("cpu", "0.0104", "0.01"),
        ("cpu", "2500000n", "3m"),
        ("cpu", "0.005", "5m"),
        ("cpu", "4", "4"),
        ("cpu", "123.4", "123"),
        ("memory", "812Mi", "812Mi"),
        ("memory", "1324Mi", "1.3Gi"),
        ("memory", "2469606195", "2.3Gi"),
        ("memory", "0", "0"),
        ("", "0.25", "0.25"),
    ],
)
def test_a_figure_is_shown_as_the_sidebar_words_it(resource, quantity, shown):
    assert shown_amount(resource, parse_quantity(quantity)) == shown
