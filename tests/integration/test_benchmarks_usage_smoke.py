"""The usage benchmark cannot rot: it runs with ``--smoke`` (5 clusters, 6 s windows, a 2 s
usage interval) on an audited disposable control plane of its own (~30-45 s) with the test
bed's Ray stand-in, and every figure it reports must have been measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_benchmarks_load_smoke import run_smoke

pytestmark = pytest.mark.cluster


def test_bench_usage_measures_every_configuration(tmp_path: Path) -> None:
    figures = run_smoke("bench_usage", tmp_path / "usage.json")
    assert figures["clusters"] == 5 and figures["sockets"] == 2
    configs = figures["configs"]
    assert list(configs) == ["off", "usage", "rule"]
    for name, c in configs.items():
        assert c["seconds"] > 0, name
        assert c["watches_open_at_end"] > 0, name  # the audit log saw the workbench's watches
        assert c["requests"] == (
            c["metrics_requests"] + c["recheck_requests"] + c["other_requests"]
        ), name
        for key in (
            "metrics_per_minute",
            "others_per_minute",
            "ray_calls_per_cluster_per_minute",
            "cluster_messages_per_socket_per_minute",
        ):
            assert isinstance(c[key], float), (name, key)
    # Usage off asks neither the metrics API nor any Ray; on, both are asked in the window.
    off = configs["off"]
    assert off["metrics_requests"] == 0 and off["ray_calls"] == 0, off
    assert not off["usage_shown"]
    for name in ("usage", "rule"):
        c = configs[name]
        assert c["usage_shown"] and c["metrics_requests"] >= 1, c
        assert c["ray_calls_per_cluster_min"] >= 3, c  # each cluster's Ray asked at least once
    assert configs["rule"]["idle_action_shown"] and not configs["usage"]["idle_action_shown"]
