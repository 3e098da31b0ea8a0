"""bench_fleet's arithmetic: a cost as fixed + per workbench, read at a larger fleet, and what a
change costs over idling; the API server's metrics summed from Prometheus' text."""

from __future__ import annotations

import os

import pytest

from benchmarks.apiserver_metrics import parse
from benchmarks.fleet_projection import fit, per_change
from benchmarks.process_stats import rss_mib, sample


def test_a_straight_cost_is_read_back_exactly() -> None:
    line = fit([(0, 197.0), (10, 317.0), (50, 797.0)])  # 12 watches per workbench
    assert line.fixed == pytest.approx(197.0)
    assert line.per_workbench == pytest.approx(12.0)
    assert line.at(1000) == pytest.approx(12_197.0)
    assert line.worst_residual == pytest.approx(0.0)


def test_a_bent_cost_says_how_far_its_points_are_from_the_line() -> None:
    line = fit([(0, 0.0), (10, 10.0), (20, 40.0)])
    # Least squares: slope 2, through the means (10, 16.67): fixed -3.33.
    assert line.per_workbench == pytest.approx(2.0)
    assert line.fixed == pytest.approx(-10 / 3)
    assert line.worst_residual == pytest.approx(20 / 3)


def test_one_fleet_size_makes_no_line() -> None:
    with pytest.raises(ValueError, match="two fleet sizes"):
        fit([(50, 1.0), (50, 2.0)])


def test_a_change_costs_what_its_window_spent_over_idling() -> None:
    # 60 s of churn spent 9 CPU-s where idling spends 0.05 per second: 6 over idle, 120 changes.
    assert per_change(9.0, 0.05, 60.0, 120) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="without changes"):
        per_change(9.0, 0.05, 60.0, 0)


def test_apiserver_metrics_are_summed_over_their_labels() -> None:
    text = "\n".join(
        [
            "# HELP apiserver_longrunning_requests ...",
            'apiserver_longrunning_requests{resource="pods",verb="WATCH"} 3',
            'apiserver_longrunning_requests{resource="pods",verb="CONNECT"} 7',
            'apiserver_longrunning_requests{resource="workloads",verb="WATCH"} 9',
            'apiserver_watch_events_total{group="",resource="pods"} 100',
            'apiserver_watch_events_total{group="kueue.x-k8s.io",resource="workloads"} 2.5e+01',
            'apiserver_watch_events_sizes_sum{resource="pods"} 2048',
            "go_goroutines 3413",
            "go_memstats_heap_inuse_bytes 9.85817088e+08",
        ]
    )
    metrics = parse(text)
    assert metrics.watches_open == 12  # CONNECT is long-running too, but no watch
    assert metrics.watch_events == 125
    assert metrics.watch_event_bytes == 2048
    assert metrics.goroutines == 3413
    assert metrics.heap_inuse_bytes == 985_817_088


def test_process_figures_count_only_processes_alive() -> None:
    here = sample([os.getpid(), 2**22 + 1])  # this process, and a PID above pid_max
    assert here.processes == 1
    assert here.rss_mib == pytest.approx(rss_mib(os.getpid()) or 0.0, rel=0.2)
    assert here.pss_mib > 0 and here.cpu_seconds > 0
