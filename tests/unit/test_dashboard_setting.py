"""``ray_dashboard_proxy`` is a setting kernels read too: with the proxy off, a cluster has no
``dashboard_url`` anywhere, and what is shown says how to reach the dashboard instead."""

from __future__ import annotations

import pytest

from jupyter_dw.core.clusters import ClusterService
from jupyter_dw.core.services import DWCore
from jupyter_dw.core.settings import load_settings


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "/user/a/dw/ray/my-ray/"),
        ({"JUPYTER_DW_RAY_DASHBOARD_PROXY": "false"}, None),
        ({"JUPYTER_DW_RAY_DASHBOARD_PROXY": "true"}, "/user/a/dw/ray/my-ray/"),
    ],
)
def test_a_kernel_core_knows_whether_the_proxy_is_on(environ, expected):
    settings = load_settings(environ={"JUPYTER_DW_NAMESPACE": "team-a", **environ}, paths=[])
    core = DWCore.from_settings(settings, "/user/a/dw/ray", lazy_watches=True)
    assert core.clusters.dashboard_url("my-ray") == expected


def test_the_proxy_setting_comes_from_config_files_too(tmp_path):
    (tmp_path / "jupyter_server_config.json").write_text(
        '{"JupyterDW": {"ray_dashboard_proxy": false}}'
    )
    assert load_settings(environ={}, paths=[str(tmp_path)]).ray_dashboard_proxy is False


def test_without_a_base_there_is_no_url():
    service = ClusterService(session=None, policy=None, dashboard_base=None)  # type: ignore[arg-type]
    assert service.dashboard_url("my-ray") is None
    assert ClusterService(None, None, "/dw/ray").dashboard_url("a b") == "/dw/ray/a%20b/"  # type: ignore[arg-type]


@pytest.mark.parametrize("url", ["/dw/ray/my-ray/", None])
def test_the_notebook_view_says_where_the_dashboard_is(url):
    from jupyter_dw.core.cluster_results import ClusterInfo
    from jupyter_dw.domain.cluster_state import cluster_snapshot
    from jupyter_dw.notebook.display import cluster_html

    raycluster = {
        "metadata": {"name": "my-ray", "namespace": "team-a"},
        "spec": {"suspend": True, "headGroupSpec": {}},
    }
    info = ClusterInfo(cluster_snapshot(raycluster), url, None, (), ())
    html = cluster_html(info)
    if url is not None:
        assert f"<code>{url}</code>" in html
    else:
        assert "proxy is turned off" in html
        assert "kubectl port-forward svc/my-ray-head-svc 8265" in html
