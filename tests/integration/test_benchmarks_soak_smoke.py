"""The soak cannot rot: ``bench_soak --smoke`` (2 minutes of cycles, the API server and Kueue
restarted on the way) on an audited disposable control plane of its own (it restarts that
plane's components: never the shared test plane). Every figure must have been measured, and
the soak's structural claims hold: every open view was told every change it owed, and nothing
is left behind. Speed and flatness are not asserted (the 30-minute run measures them; two
minutes on a shared machine would only measure the machine).

Cold cost: 2 min 54 s at load average 10 (the plane's start, ~35 s, included; then 2 minutes of
cycles of ~5 s, and ~25 s more for the API server's restart: it ignores SIGTERM for 15 s while
watches are open). Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_soak import SERIES
from tests.integration.test_benchmarks_load_smoke import run_smoke

pytestmark = pytest.mark.cluster


def test_bench_soak_tells_every_view_every_change_and_leaves_nothing(tmp_path: Path) -> None:
    figures = run_smoke("bench_soak", tmp_path / "soak.json")
    assert figures["cycles"] >= 3, figures["cycles"]
    assert set(figures["restarts"]) == {"kube-apiserver", "kueue"}
    # The API server was down for seconds: the views were told (and live again after).
    assert figures["restarts"]["kube-apiserver"]["views_told"] is not None
    views = figures["views"]
    assert views["sockets_opened"] >= 1 and views["kernels_started"] >= 1
    assert views["changes_owed"] >= 9 * figures["cycles"]  # 9 a cycle to each long-lived view
    assert views["misses"] == 0, views["missed"]
    # Every series measured (a process that had ended would read 0).
    for name in SERIES:
        trend = figures["series"][name]
        assert trend["samples"] >= 3 and trend["start"] > 0 and trend["end"] > 0, (name, trend)
        assert isinstance(trend["slope_per_hour"], float), (name, trend)
    # Nothing left behind: the server's watches as after the warm-up, resource by resource ...
    watches = figures["watches"]
    assert watches["server_after_warmup"] > 0
    assert watches["server_by_resource_at_end"] == watches["server_by_resource_after_warmup"]
    left = figures["left_behind"]
    # ... no object of the cycles, no kernel process but the long-lived one ...
    for kind in ("rayclusters", "rayjobs", "workloads", "pods", "kernel_processes"):
        assert left[kind] == [], (kind, left[kind])
    # ... and the kernel link file of the live server only, gone once it stopped.
    assert left["link_files_while_serving"] == [left["link_file_expected"]]
    assert left["link_files_after_stop"] == []
