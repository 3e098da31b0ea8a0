"""The load, fleet, memory, start-up and codeflare-sdk benchmarks cannot rot: each runs with
``--smoke`` (tiny) and every figure it reports must have been measured.

bench_load, bench_fleet and bench_codeflare share one audited disposable control plane
(started here, ~30-45 s); bench_memory and bench_startup use the shared test plane. Cold
cost: the first run on a machine installs codeflare-sdk from PyPI into
``~/.cache/jupyter-dw/codeflare-venv`` (about 1 GB with Ray; a few minutes); later runs reuse
it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.audit import AuditedCluster
from tests.cluster.controlplane import ClusterState

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]


def run_smoke(name: str, out: Path, *extra: str) -> dict[str, Any]:
    """``python -m benchmarks.NAME --smoke --json OUT``; its figures."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--smoke", "--json", str(out), *extra],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    figures: dict[str, Any] = json.loads(out.read_text())
    return figures


@pytest.fixture(scope="module")
def audited_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An audited disposable control plane's directory (bench_load, bench_codeflare)."""
    directory = tmp_path_factory.mktemp("audited") / "plane"
    plane = AuditedCluster(directory)
    plane.up()
    yield directory
    plane.down()


RULES_REVIEW = "create selfsubjectrulesreviews"
KUEUE_PROBE = "get /apis/visibility.kueue.x-k8s.io/"
DISCOVERY = {"get /apis", "get /openapi/v3"}


def test_bench_load_counts_requests_and_watches(audited_plane: Path, tmp_path: Path) -> None:
    # Re-checks every 2 s: each 5 s window holds some in every session.
    figures = run_smoke(
        "bench_load", tmp_path / "load.json", "--cluster-dir", str(audited_plane), "--refresh", "2"
    )
    connections = figures["connections"]
    assert set(connections) == {"own", "server"}
    for phases in connections.values():
        few, many = phases["few"], phases["many"]
        assert many["widgets"] > few["widgets"] and many["sockets"] > few["sockets"]
        for phase in (few, many, phases.get("none", few), figures["before"]):
            assert phase["watches_open_at_end"] > 0  # the audit log saw the workbench's watches
            assert phase["requests_besides_watches"] == (
                phase["recheck_requests"] + phase["other_requests"]
            )
            # The goal's claims: nothing but the periodic re-check asks anything while idle ...
            assert phase["other_requests"] == 0, phase["requests_besides_watches_by_kind"]
        # ... and more widgets and tabs open no more watches.
        assert many["watches_open_by_resource"] == few["watches_open_by_resource"]
    # Kernels reading through the server open no watch of their own: the workbench's watches
    # are the server's, however many kernels run (each own kernel adds its own).
    own, server = connections["own"]["many"], connections["server"]["many"]
    assert server["watches_open_at_end"] < own["watches_open_at_end"]
    assert server["watches_open_at_end"] <= 12
    # The cadence before asks discovery at every re-check; the default only the rules review,
    # and Kueue's probe while a Workload of the namespace depends on Kueue.
    assert set(figures["before"]["requests_besides_watches_by_kind"]) >= DISCOVERY
    for phase in (connections[c][w] for c in ("own", "server") for w in ("few", "many")):
        asked = set(phase["requests_besides_watches_by_kind"])
        assert RULES_REVIEW in asked and any(k.startswith(KUEUE_PROBE) for k in asked), asked
        assert not asked & DISCOVERY, asked
    assert set(connections["server"]["none"]["requests_besides_watches_by_kind"]) == {RULES_REVIEW}


def test_bench_codeflare_counts_every_step_of_both(audited_plane: Path, tmp_path: Path) -> None:
    figures = run_smoke(
        "bench_codeflare", tmp_path / "codeflare.json", "--cluster-dir", str(audited_plane)
    )
    assert figures["codeflare_sdk_version"], figures.get("codeflare_sdk_blocked")
    for side in ("jupyter_dw", "jupyter_dw_own", "codeflare_sdk"):
        steps = figures[side]
        assert set(steps) >= {
            "import",
            "list_queues",
            "create",
            "wait_ready",
            "list_clusters",
            "delete",
        }
        assert steps["create"]["requests"] >= 1  # its create reached the audit log
        # Measured from the benchmark's own watch seeing Ready: jupyter_dw's watch may see the
        # same event a few ms sooner (a negative figure), so only its presence is checked.
        assert isinstance(steps["wait_ready"]["ready_to_known_ms"], float)
        assert steps["list_clusters"]["status"]
    assert figures["jupyter_dw"]["import"]["requests"] == 0  # importing contacts nothing
    # The kernel of a server read through it: its first list asked the API server nothing
    # (the server's caches answered), and no watch was opened for it.
    assert figures["jupyter_dw"]["connection"] == "server"
    assert figures["jupyter_dw"]["list_queues"]["requests"] == 0
    assert figures["jupyter_dw"]["list_queues"]["watches"] == 0
    assert figures["jupyter_dw"]["list_queues"]["api_import_seconds"] > 0
    assert figures["jupyter_dw"]["server_start"]["watches"] > 0  # the server's, before
    assert figures["jupyter_dw_own"]["connection"] == "own"


def test_bench_fleet_measures_the_plane_alone_and_with_workbenches(
    audited_plane: Path, tmp_path: Path
) -> None:
    figures = run_smoke("bench_fleet", tmp_path / "fleet.json", "--cluster-dir", str(audited_plane))
    alone, fleet = figures["sizes"]
    assert alone["idle"]["workbenches"] == 0 and fleet["idle"]["workbenches"] == 3
    assert alone["idle"]["requests_besides_watches"] == 0  # no workbench, nothing audited
    idle = fleet["idle"]
    assert idle["jupyter_servers"]["processes"] == 3 and idle["kernel_processes"]["processes"] == 6
    assert idle["jupyter_servers"]["pss_mib"] > 0 and idle["kernel_processes"]["pss_mib"] > 0
    assert idle["kernels"] == 6
    # Nothing but the session's periodic re-check asks while idle, and the kernels read
    # through their servers: a workbench's watches are its server's, however many kernels.
    assert idle["other_requests"] == 0, idle["requests_besides_watches_by_kind"]
    assert 0 < idle["watches_open_per_workbench"] <= 12
    # The API server's own count of every client's watches sees the fleet's (controllers may
    # be re-opening one of theirs at the moment of either reading).
    added = idle["kube-apiserver"]["watches_open"] - alone["idle"]["kube-apiserver"]["watches_open"]
    assert abs(added - idle["watches_open_at_end"]) <= 3, (added, idle["watches_open_at_end"])
    churn = fleet["churn"]
    assert churn["changes"] > 0 and churn["kube-apiserver"]["watch_events"] > 0
    # Every workbench watches every flavor: a flavor change is an event to each of them (3
    # here; the API server's count holds the controllers' events too, which vary a little).
    fanout, fanout_alone = fleet["fanout"], alone["fanout"]
    per_change = {
        w["workbenches"]: w["kube-apiserver"]["watch_events"] / w["changes"]
        for w in (fanout, fanout_alone)
    }
    assert per_change[3] - per_change[0] >= 2, per_change
    assert fanout["sidebar_messages"] == 0, fanout["sidebar_messages_by_type"]  # nothing shown
    assert figures["codeflare_sdk_version"], figures.get("codeflare_sdk_blocked")
    codeflare = figures["codeflare"]
    assert codeflare["requests_per_user_minute"] > 0 and codeflare["watches_opened"] == 0
    projection = figures["projection"]
    assert projection["lines"]["watches_open"]["per_workbench"] <= 12
    assert set(projection["codeflare"]["at"]) == {"3", "1000"}


def test_bench_memory_measures_both_holders(cluster: ClusterState, tmp_path: Path) -> None:
    figures = run_smoke("bench_memory", tmp_path / "memory.json")
    for holder in ("jupyter_dw", "baseline"):
        assert len(figures[holder]["runs"]) >= 1
        assert isinstance(figures[holder]["added_mib"], float)
    kernels = figures["kernels"]
    assert kernels["bare_mib"] > 0
    for mode in ("server", "own"):
        assert len(kernels[mode]["runs"]) >= 1  # each kernel asserted its own connection mode
    # A kernel reading through its server holds no watch cache of its own.
    assert kernels["server"]["added_mib"] < kernels["own"]["added_mib"]


def test_bench_startup_measures_paired_starts(cluster: ClusterState, tmp_path: Path) -> None:
    figures = run_smoke("bench_startup", tmp_path / "startup.json")
    assert figures["pairs"] == 2
    for key in ("with_extension", "without_extension", "first_answer"):
        assert figures[key]["median_ms"] > 0
    assert "median_ms" in figures["added"]
