"""`make bench` renders the benchmarks page's tables (docs/explanation/benchmarks.md) from the
results' JSON, between markers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import readme_tables

REPO = Path(__file__).resolve().parents[2]

PHASE = {
    "seconds": 60.0,
    "requests_besides_watches": 7,
    "recheck_requests": 7,
    "other_requests": 0,
    "watches_opened": 0,
    "watches_open_at_end": 50,
    "widgets": 10,
    "sockets": 1,
}


def window(workbenches: int, phase: str) -> dict[str, object]:
    """One window of bench_fleet's figures, every field the table reads."""
    group = {"processes": 2 * workbenches, "cpu_seconds": 1.0, "rss_mib": 100.0, "pss_mib": 80.0}
    return {
        "phase": phase,
        "workbenches": workbenches,
        "kernels": 2 * workbenches,
        "changes": 110 if phase != "idle" else 0,
        "seconds": 60.0,
        "requests_besides_watches": 4 * workbenches,
        "recheck_requests": 4 * workbenches,
        "requests_per_workbench_minute": 4.0 if workbenches else 0.0,
        "watches_open_at_end": 12 * workbenches,
        "kube-apiserver": {
            "cores": 0.015,
            "rss_mib": 1100.0,
            "watches_open": 197 + 12 * workbenches,
            "watch_events": 600,
        },
        "kueue": {"cores": 0.003},
        "jupyter_servers": group,
        "kernel_processes": group,
    }


RESULTS = {
    "load": {
        "kernels": 5,
        "before": {**PHASE, "recheck_per_process_per_minute": 4.0},
        "connections": {
            "own": {"few": PHASE, "many": {**PHASE, "widgets": 20, "sockets": 5}},
            "server": {
                "few": PHASE,
                "many": {**PHASE, "widgets": 20, "recheck_per_process_per_minute": 2.0},
                "none": {**PHASE, "workloads": False, "recheck_per_process_per_minute": 1.0},
            },
        },
    },
    "memory": {
        "workloads": 5000,
        "pods": 5000,
        "jupyter_dw": {"added_mib": 41.5, "runs": [41.5, 42.0]},
        "baseline": {"added_mib": 98.0, "runs": [98.0]},
        "kernels": {
            "bare_mib": 95.0,
            "server": {"added_mib": 9.5, "runs": [9.4, 9.6]},
            "sockets": {"rows": {"snapshot_bytes": 843548, "server_mib_per_socket": 1.2}},
        },
    },
    "startup": {
        "pairs": 10,
        "with_extension": {"median_ms": 900.0, "max_ms": 1200.0},
        "without_extension": {"median_ms": 850.0, "max_ms": 1100.0},
        "added": {"median_ms": 50.0},
        "first_answer": {"median_ms": 300.0, "max_ms": 400.0},
    },
    "codeflare": {
        "codeflare_sdk_version": "0.40.1",
        "cannot": {"list_queues": "names and flavors only"},
        "jupyter_dw": {
            "import": {"seconds": 0.01, "requests": 0, "watches": 0},
            "list_queues": {
                "seconds": 0.2,
                "requests": 0,
                "watches": 0,
                "api_import_seconds": 0.18,
            },
            "wait_ready": {"seconds": 3.0, "requests": 0, "watches": 0, "ready_to_known_ms": 12},
            "server_start": {"seconds": 3.5, "requests": 26, "session_checks": 14, "watches": 12},
        },
        "jupyter_dw_own": {
            "list_queues": {"seconds": 0.4, "requests": 19, "session_checks": 14, "watches": 4},
        },
    },
    "fleet": {
        "sizes": [
            {phase: window(n, phase) for phase in ("idle", "churn", "fanout")} for n in (0, 10, 50)
        ],
        "projection": {
            "workbenches": 1000,
            "lines": {
                name: {
                    "fixed": 1.0,
                    # Kueue's CPU per change fell as the fleet grew, beyond the noise.
                    "per_workbench": -2.0 if name == "kueue_cpu_ms_per_change" else 2.0,
                    "per_workbench_se": 0.5,
                    "within_noise": name == "apiserver_rss_mib",
                    "at": 2001.0,
                    "at_most": 3001.0,
                    "worst_residual": 0.25,
                }
                for name in readme_tables.FLEET_LINES
            },
            "changes_per_second": 1.8,
            "apiserver_ms_per_change": 144.3,
            "apiserver_cores_churning": 0.67,
            "codeflare": {
                "at": {"1000": {"requests_per_minute": 102657.8, "apiserver_cores": 2.7}}
            },
        },
    },
    "usage": {
        "clusters": 50,
        "sockets": 5,
        "usage_interval": 15.0,
        "idle_cluster_timeout": 3600.0,
        "configs": {
            name: {
                "seconds": 60.0,
                "requests_per_minute": 4.0 + metrics,
                "metrics_per_minute": metrics,
                "recheck_per_minute": 4.0,
                "others_per_minute": 0.0,
                "watches_opened": 0,
                "ray_calls_per_cluster_per_minute": ray,
                "cluster_messages_per_socket_per_minute": 0.5,
            }
            for name, metrics, ray in (("off", 0.0, 0.0), ("usage", 4.0, 12.0), ("rule", 4.0, 12.0))
        },
    },
    "decode": {
        "queues": 200,
        "workloads": 5000,
        "clusters": 50,
        "rounds": 20,
        "snapshot_kib": 3723.0,
        "encode_ms": 101.9,
        "parse_ms": 32.8,
        "decode_ms": 111.8,
        "workload_parse_ms": 0.004,
        "workload_decode_ms": 0.017,
        "cluster_parse_ms": 0.011,
        "cluster_decode_ms": 0.045,
    },
    "soak": {
        "seconds": 1812.0,
        "interval_seconds": 10.0,
        "warmup_seconds": 360.0,
        "cycles": 120,
        "cycle_seconds_median": 12.5,
        "cycle_seconds_max": 48.0,
        "series": {
            name: {
                "start": 131.2,
                "end": 133.0,
                "max": 134.5,
                "slope_per_hour": 0.52,
                "slope_se": 0.31,
                "within_noise": True,
            }
            for name in readme_tables.SOAK_SERIES
        }
        | {
            "kernel_threads": {
                "start": 4,
                "end": 4,
                "max": 4,
                "slope_per_hour": 0.0,
                "slope_se": 0.0,
                "within_noise": False,
            }
        },
        "views": {"changes_owed": 2345, "misses": 0, "sockets_opened": 60, "kernels_started": 40},
        "restarts": {
            "kube-apiserver": {
                "at_seconds": 610.0,
                "down_seconds": 25.7,
                "views_told": "reconnecting",
                "live_again_seconds": 0.2,
            },
            "kueue": {
                "at_seconds": 1210.0,
                "down_seconds": 0.4,
                "views_told": None,
                "live_again_seconds": 0.0,
            },
        },
        "rest": {"calls": 840, "retried": {}},
        "watches": {
            "server_after_warmup": 12,
            "server_at_end": 12,
            "apiserver_after_warmup": 212,
            "apiserver_at_end": 212,
        },
        "left_behind": {
            "rayclusters": [],
            "rayjobs": [],
            "workloads": [],
            "pods": [],
            "kernel_processes": [],
            "link_files_after_stop": [],
        },
        "series_after_restarts": {
            "since_seconds": 1290.0,
            **{
                name: {"slope_per_hour": -0.1, "slope_se": 0.4, "within_noise": True}
                for name in readme_tables.SOAK_SERIES
            }
            | {"kernel_threads": {"slope_per_hour": 0.0, "slope_se": 0.0, "within_noise": False}},
        },
        "load_average_before": [3.1, 2.0, 1.0],
        "load_average_during": {"min": 2.0, "median": 5.5, "max": 20.25},
        "load_average_after": [4.2, 3.0, 2.0],
    },
}


def readme_with_markers(tmp_path: Path) -> Path:
    readme = tmp_path / "README.md"
    blocks = "\n".join(f"<!-- bench:{n} -->\nold {n}\n<!-- /bench:{n} -->" for n in RESULTS)
    readme.write_text(f"# Title\n\n{blocks}\n\nthe end\n")
    return readme


def write_results(directory: Path, names: list[str], returncode: int = 0) -> None:
    for name in names:
        result = {"returncode": returncode, "figures": RESULTS[name]}
        (directory / f"bench_{name}.json").write_text(json.dumps(result))


def test_every_table_is_rendered_between_its_markers(tmp_path: Path) -> None:
    readme = readme_with_markers(tmp_path)
    write_results(tmp_path, list(RESULTS))
    assert readme_tables.render(tmp_path, readme) == list(RESULTS)
    text = readme.read_text()
    assert "old " not in text and text.startswith("# Title") and text.endswith("the end\n")
    assert (
        "| each on its own | more widgets and sockets (60 s) | yes | 20 / 5 | 5 | 7 | 7 | — |"
        in text
    )
    assert "Kueue's probe at every re-check (60 s) | yes | 10 / 5 | 1 | 7 | 7 | 4.0 |" in text
    assert (
        "| through the server | more widgets and sockets (60 s) | yes | 20 / 5 | 1 | 7 | 7 | 2.0 |"
        in text
    )
    assert (
        "no Workload depending on Kueue (60 s) | no | 10 / 5 | 1 | 7 | 7 | 1.0 | 0 | 0 | 50 |"
        in text
    )
    assert "| jupyter_dw's watch caches | 41.5 MiB | 41.5, 42.0 |" in text
    assert "| added (per pair) | 50.0 ms | |" in text
    assert "(Ready → known: 12.0 ms)" in text
    assert (
        "| list queues | 0 + 0 | 0.200 s (importing the API: 0.180 s) | 19 (14 checks) + 4 | "
        "0.400 s | names and flavors only |"
    ) in text
    assert "| before: the server's start (the pod's, before a notebook opens) | 26 (14 checks)" in (
        text
    )
    assert "| 50 (100) | idle, 60 s | 200.0 (200.0) | 4.00 | 600 / 797 | 0.015 cores |" in text
    assert "| 10 (20) | fan-out: 110 flavor changes, 60 s |" in text
    assert "| watches open (the workbenches') | 1 | 2 ± 0.5 | **2,001** | 0.25 | 0 |" in text
    assert "| API server RSS (MiB) | 1 | 2 ± 0.5 | within the noise (≤ 3,001) |" in text
    assert "| Kueue CPU per change (ms) | 1.0 | -2 ± 0.5 | no growth measured (≤ 3,001.0) |" in text
    assert (
        "| requests besides watches, per minute | 1.0 | 2 ± 0.5 | **2,001.0** | 0.25 | 102,657.8 |"
    ) in text
    assert "| API server CPU while 1.8 changes/s (cores) | | | **0.67** | | |" in text
    assert "baseline, same run | 60 s | 4.0 | 0.0 | 4.0 | 0.0 | 0 | 0.0 |" in text
    assert "| (b) usage on, every 15 s | 60 s | 8.0 | 4.0 | 4.0 | 0.0 | 0 | 12.0 | 0.5 |" in text
    assert "(`idle_cluster_timeout = 3600`) | 60 s | 8.0 | 4.0 | 4.0 | 0.0 | 0 | 12.0 |" in text
    assert "| the kernel: decoded into the core's objects (added) | 111.8 ms |" in text
    assert "through its server (over a bare kernel) | 9.5 MiB | 9.4, 9.6 |" in text
    assert "(`?workloads=rows`) | 1.2 MiB | snapshot 843,548 bytes |" in text
    assert "| a `workload` message: `json.loads` / + decoded | 0.004 ms / 0.017 ms |" in text
    assert "| after the warm-up (6 of 30 min, a sample every 10 s) | start (the baseline) |" in text
    assert "(± standard error) | slope per hour from 22 min (after the restarts) |" in text
    assert (
        "| the Jupyter server: RSS (MiB) | 131.2 | 133.0 | 134.5 | +0.52 ± 0.31, within the noise "
        "| -0.1 ± 0.4, within the noise |"
    ) in text
    assert "| 3.1 / 2.0, 5.5, 20.2 / 4.2 |" in text
    assert (
        "| … threads | 4 | 4 | 4 | 0 (every sample the same) | 0 (every sample the same) |" in text
    )
    assert "| changes owed to the open views / missed | 2,345 / **0** (60 sockets and 40" in text
    assert (
        "| restarts | kube-apiserver at 10 min: down 25.7 s, views marked reconnecting, live again "
        "0.2 s after; kueue at 20 min: down 0.4 s, views live again 0 s after |"
    ) in text
    assert "| 12 / 12 (every client's: 212 / 212) |" in text
    assert "link files after the server stopped | 0, 0, 0 |" in text


def test_a_failed_or_missing_run_leaves_its_table(tmp_path: Path) -> None:
    readme = readme_with_markers(tmp_path)
    write_results(tmp_path, ["load"], returncode=1)
    write_results(tmp_path, ["memory"])
    assert readme_tables.render(tmp_path, readme) == ["memory"]
    text = readme.read_text()
    assert "old load" in text and "old startup" in text and "old memory" not in text


def test_a_readme_without_the_markers_is_refused_by_name(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    write_results(tmp_path, ["startup"])
    with pytest.raises(ValueError, match="bench:startup"):
        readme_tables.render(tmp_path, readme)
    assert readme.read_text() == "no markers\n"


def test_the_benchmarks_page_has_every_marker_pair() -> None:
    assert readme_tables.PAGE == REPO / "docs" / "explanation" / "benchmarks.md"
    text = readme_tables.PAGE.read_text()
    for name in readme_tables.TABLES:
        assert f"<!-- bench:{name} -->" in text and f"<!-- /bench:{name} -->" in text, name
