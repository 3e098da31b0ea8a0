"""The configuration reference (docs/reference/configuration.md, written by docs/generate.py)
is the traitlets help of JupyterDW, and the example jupyter_server_config.py loads and gives a
valid policy."""

from __future__ import annotations

from pathlib import Path

import pytest
from traitlets import TraitError
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from jupyter_dw.core.settings import DWSettings, load_settings
from jupyter_dw.domain.cluster_spec import SpecPolicy
from jupyter_dw.server import config_reference
from jupyter_dw.server.app import JupyterDW

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "jupyter_server_config.py"


def test_the_reference_covers_every_setting_with_its_help():
    text = config_reference.config_reference()
    names = set(DWSettings.class_own_traits(config=True)) | set(
        JupyterDW.class_own_traits(config=True)
    )
    assert {"namespace", "access_refresh_interval", "ray_dashboard_url"} <= names
    for name in names:
        assert f"## `{name}`" in text
    # Help text, not just names: a phrase from one help string of each class.
    assert "service-account ``token``" in text
    assert "short-lived capability in the URL" in text
    assert "`JUPYTER_DW_MAX_WORKERS`" in text
    # Kernels reach Ray heads too (h.submit_job): the dashboard template is shared.
    assert "`JUPYTER_DW_RAY_DASHBOARD_URL`" in text
    assert "`JUPYTER_DW_RAY_CLIENT_URL`" in text


def test_the_example_config_loads_and_gives_a_valid_policy():
    config = PyFileConfigLoader(EXAMPLE.name, str(EXAMPLE.parent)).load_config()
    section = config["JupyterDW"]
    known = set(JupyterDW.class_traits(config=True))
    assert set(section) <= known, set(section) - known  # no misspelt setting
    assert len(section) >= 15

    app = JupyterDW(config=config)  # the server's own validation (dashboard URL, port)
    policy = app.spec_policy()
    assert isinstance(policy, SpecPolicy)
    assert policy.max_workers == section["max_workers"]
    assert policy.allowed_images == tuple(section["allowed_images"])
    assert app.ray_dashboard_url == section["ray_dashboard_url"]


def test_a_kernel_reads_the_example_config_too(tmp_path):
    (tmp_path / "jupyter_server_config.py").write_text(EXAMPLE.read_text())
    settings = load_settings(environ={}, paths=[str(tmp_path)])
    assert settings.default_worker_memory == "16Gi"
    assert settings.spec_policy().default_workers == 2


def test_a_bad_refresh_interval_is_refused_with_its_name():
    with pytest.raises(TraitError, match="access_refresh_interval must be positive"):
        DWSettings(config=Config({"DWSettings": {"access_refresh_interval": 0}}))
    with pytest.raises(TraitError, match="JUPYTER_DW_ACCESS_REFRESH_INTERVAL"):
        load_settings(environ={"JUPYTER_DW_ACCESS_REFRESH_INTERVAL": "soon"}, paths=[])
