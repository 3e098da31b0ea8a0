"""bench_decode's smoke run: a small snapshot decoded, every figure measured (no cluster)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks import bench_decode


def test_the_smoke_run_measures_every_figure(tmp_path: Path, monkeypatch, capsys) -> None:
    out = tmp_path / "figures.json"
    monkeypatch.setattr(sys, "argv", ["bench_decode", "--smoke", "--json", str(out)])
    bench_decode.main()
    figures = json.loads(out.read_text())
    assert figures["workloads"] == 100 and figures["snapshot_kib"] > 0
    for key in ("encode_ms", "parse_ms", "decode_ms", "workload_decode_ms", "cluster_decode_ms"):
        assert isinstance(figures[key], float) and figures[key] > 0, key
    assert "smoke: ok" in capsys.readouterr().err
