"""A cluster's usage in the notebook's HTML (``%dw list``, ``h.status()``) and in the widgets'
ESM (one module made of the shared static files)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from jupyter_dw.core.cluster_results import ClusterInfo
from jupyter_dw.domain.cluster_state import cluster_snapshot
from jupyter_dw.domain.usage import ClusterUsage, RayLoad, ResourceUse
from jupyter_dw.notebook import widgets
from jupyter_dw.notebook.display import cluster_html, usage_html

NO_METRICS = "the metrics API (metrics.k8s.io/v1beta1) is not served here"


def info(usage: ClusterUsage | None, idle_since: str | None = None) -> ClusterInfo:
    status = cluster_snapshot({"metadata": {"name": "rc", "namespace": "ns"}, "spec": {}})
    return ClusterInfo(status, None, "me", (), (), usage=usage, idle_since=idle_since)


def test_used_of_held_and_an_unknown_use_in_words():
    usage = ClusterUsage(
        {
            "cpu": ResourceUse(Decimal(4), Decimal("1.437")),
            "memory": ResourceUse(Decimal(8 * 2**30), None),
            "nvidia.com/gpu": ResourceUse(Decimal(1), Decimal(0)),
        },
        NO_METRICS,
        ray=RayLoad({"CPU": (Decimal(1), Decimal(4))}, 1, 0, 2),
    )
    html = usage_html(usage, None)
    assert "CPU 1.4 of 4 used" in html
    assert f'Memory 8Gi held <span style="opacity:.7">— use unknown: {NO_METRICS}' in html
    assert "GPU 0 of 1 used by Ray" in html
    assert "Ray: 1 of 4 CPU in use, 1 job running, 2 actors" in html
    assert "Idle" not in html
    assert "CPU 1.4 of 4 used" in cluster_html(info(usage))
    assert usage_html(None, None) == ""


def test_an_idle_cluster_says_for_how_long_and_what_it_holds():
    since = datetime.now(timezone.utc) - timedelta(minutes=42, seconds=10)
    usage = ClusterUsage(
        {"cpu": ResourceUse(Decimal(4), None), "nvidia.com/gpu": ResourceUse(Decimal(1), None)},
        NO_METRICS,
        ray=RayLoad({"CPU": (Decimal(0), Decimal(4))}, 0, 0, 0),
        idle=True,
        idle_basis="ray",
    )
    html = usage_html(usage, since.isoformat())
    assert "Idle 42 min (since <time" in html
    assert "holding 4 CPU and 1 GPU" in html


def test_the_widgets_esm_holds_what_its_files_import(tmp_path, monkeypatch):
    status = widgets.esm("shared/workers_bar.js", "shared/usage_bar.js", "status.js")
    assert "\nimport " not in status and not status.startswith("import ")
    assert "export function usageRows" in status and "export function parseQuantity" in status
    (tmp_path / "a.js").write_text('import { x } from "./b.js";\nexport const a = 1;\n')
    monkeypatch.setattr(widgets, "STATIC", tmp_path)
    monkeypatch.setattr(widgets, "SHARED", ())
    with pytest.raises(ValueError, match=r"a\.js imports b\.js"):
        widgets.esm("a.js")
