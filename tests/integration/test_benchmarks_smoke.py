"""Each benchmark's ``--smoke`` run: a tiny setup and a few rounds on the local control plane,
checking only that every figure was measured, so the benchmarks cannot rot. Each runs as its
own process, as ``make bench`` runs it, against this session's control plane (the benchmark's
``LocalCluster().up()`` finds it running); the figures are printed, never asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
SMOKE_TIMEOUT = 240
"""Seconds: each smoke run takes well under a minute alone; the margin is for a loaded host."""


def smoke(module: str, cluster) -> str:
    """Run ``python -m benchmarks.<module> --smoke``; its output, after checking it passed."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", "--smoke"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=SMOKE_TIMEOUT,
    )
    assert done.returncode == 0, f"{module} --smoke failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    assert "smoke: ok" in done.stderr, done.stderr[-4000:]
    return done.stdout


def test_bench_events_smoke(cluster):
    out = smoke("bench_events", cluster)
    assert "visibility-API calls per change" in out


def test_bench_sidebar_smoke(cluster):
    out = smoke("bench_sidebar", cluster)
    assert "write -> socket message" in out
