"""Settings a kernel reads the way the server does: Jupyter config files, then JUPYTER_DW_*."""

from __future__ import annotations

import json

import pytest
from traitlets import Int, TraitError, Unicode

from jupyter_dw.core.settings import DWSettings, environment_config, load_settings, setting_names
from jupyter_dw.domain.spec_policy import SIZES
from jupyter_dw.notebook.ray_connect import version_mismatches
from jupyter_dw.notebook.runtime import kernel_base_url
from tests.openapi_check import openapi


def write_config(directory, name: str, text: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text)


def test_files_on_the_config_path_then_the_environment(tmp_path):
    user, system = tmp_path / "user", tmp_path / "system"
    write_config(system, "jupyter_server_config.json", json.dumps(
        {"JupyterDW": {"namespace": "from-system", "max_workers": 4}, "ServerApp": {"port": 1}}
    ))  # fmt: skip
    write_config(user / "jupyter_server_config.d", "dw.json", json.dumps(
        {"JupyterDW": {"default_worker_memory": "4Gi"}}
    ))  # fmt: skip
    write_config(user, "jupyter_server_config.py", 'c.JupyterDW.namespace = "from-user"\n')
    settings = load_settings(environ={}, paths=[str(user), str(system)])  # user wins
    assert settings.namespace == "from-user"
    assert settings.max_workers == 4
    assert settings.default_worker_memory == "4Gi"

    env = {"JUPYTER_DW_NAMESPACE": "from-env", "JUPYTER_DW_ALLOWED_IMAGES": "rayproject/, b/*"}
    settings = load_settings(environ=env, paths=[str(user), str(system)])
    assert settings.namespace == "from-env"
    assert settings.allowed_images == ["rayproject/", "b/*"]


def test_a_broken_config_file_is_skipped(tmp_path):
    write_config(tmp_path, "jupyter_server_config.py", "this is not python\n")
    write_config(tmp_path, "jupyter_server_config.json", '{"JupyterDW": {"max_workers": 2}}')
    assert load_settings(environ={}, paths=[str(tmp_path)]).max_workers == 2


@pytest.mark.parametrize(
    ("variable", "value", "setting", "expected"),
    [
        ("JUPYTER_DW_ELASTIC_JOBS", "true", "elastic_jobs", "true"),
        ("JUPYTER_DW_ELASTIC_JOBS", "0", "elastic_jobs", "false"),
        ("JUPYTER_DW_REQUEST_TIMEOUT", "2.5", "request_timeout", 2.5),
        ("JUPYTER_DW_MAX_WORKERS", "", "max_workers", None),
        ("JUPYTER_DW_ALLOWED_IMAGES", '["a/", "b/"]', "allowed_images", ["a/", "b/"]),
    ],
)
def test_environment_values_are_parsed_by_type(variable, value, setting, expected):
    assert environment_config({variable: value}) == {setting: expected}


@pytest.mark.parametrize(
    ("variable", "value"),
    [("JUPYTER_DW_MAX_WORKERS", "many"), ("JUPYTER_DW_ELASTIC_JOBS", "maybe")],
)
def test_bad_environment_values_name_the_variable(variable, value):
    with pytest.raises(TraitError, match=variable):
        environment_config({variable: value})


def test_discovery_refresh_interval_is_off_by_default_and_never_negative():
    assert load_settings(environ={}, paths=[]).session_options()["discovery_refresh_interval"] == 0
    env = {"JUPYTER_DW_DISCOVERY_REFRESH_INTERVAL": "60"}
    assert load_settings(environ=env, paths=[]).discovery_refresh_interval == 60
    with pytest.raises(TraitError, match="discovery_refresh_interval must be 0"):
        load_settings(environ={"JUPYTER_DW_DISCOVERY_REFRESH_INTERVAL": "-1"}, paths=[])


def test_an_inconsistent_combination_is_refused():
    env = {"JUPYTER_DW_MAX_WORKERS": "2", "JUPYTER_DW_DEFAULT_WORKERS": "3"}
    with pytest.raises(TraitError, match="defaults and limits"):
        load_settings(environ=env, paths=[])


def test_every_setting_has_an_environment_variable():
    assert "namespace" in setting_names() and "allowed_images" in setting_names()
    env = {f"JUPYTER_DW_{name.upper()}": "" for name in ("namespace", "kube_context")}
    assert environment_config(env) == {"namespace": None, "kube_context": None}


def test_kernel_base_url_from_the_workbench_environment():
    assert kernel_base_url({}) == "/"
    assert kernel_base_url({"NB_PREFIX": "/notebook/team/wb"}) == "/notebook/team/wb/"
    assert kernel_base_url({"JUPYTER_DW_BASE_URL": "/x/", "NB_PREFIX": "/y"}) == "/x/"


def test_ray_client_version_mismatches_are_named():
    image = "rayproject/ray:2.60.0-py311"
    assert version_mismatches(image, "2.60.0", (3, 11)) == []
    problems = version_mismatches(image, "2.50.1", (3, 12))
    assert len(problems) == 2
    assert "Ray 2.50.1" in problems[0] and "2.60.0" in problems[0]
    assert "Python 3.12" in problems[1] and "3.11" in problems[1]
    assert version_mismatches("quay.io/x/custom:1", "2.0.0", (3, 11)) == []
    assert version_mismatches("rayproject/ray:2.60.0", None, (3, 12)) == []


def test_an_unreadable_config_file_refuses_writes_naming_it(tmp_path):
    """Fail closed: the administrator's limits may be in the broken file, so a kernel refuses
    to create or scale (reading still works), naming the file and the error."""
    from jupyter_dw.core.clusters import ClusterService
    from jupyter_dw.core.settings import SettingsUnreadable

    broken = tmp_path / "jupyter_server_config.json"
    broken.write_text('{"JupyterDW": {"max_workers": 4,}}')  # a trailing comma
    settings = load_settings(environ={}, paths=[str(tmp_path)])
    assert len(settings.config_errors) == 1 and str(broken) in settings.config_errors[0]
    service = ClusterService(None, settings.spec_policy(), config_errors=settings.config_errors)  # type: ignore[arg-type]
    with pytest.raises(SettingsUnreadable, match="cannot be read") as refused:
        service.create({"name": "x", "workers": 1})
    assert str(broken) in refused.value.reason and refused.value.status == 500
    with pytest.raises(SettingsUnreadable):
        service.scale("x", 2)


def test_readable_config_files_leave_writes_allowed(tmp_path):
    (tmp_path / "jupyter_server_config.json").write_text('{"JupyterDW": {"max_workers": 4}}')
    settings = load_settings(environ={}, paths=[str(tmp_path)])
    assert settings.config_errors == () and settings.max_workers == 4


def test_the_published_policy_is_the_configured_one_as_a_request_writes_it():
    """What ``GET context`` publishes for a form to show: every sized field of SIZES (the one
    table), exactly the fields the contract names, each default and limit as configured,
    written the way a request sends it (counts as numbers, quantities as their text)."""
    env = {
        "JUPYTER_DW_DEFAULT_WORKER_CPU": "0.75",
        "JUPYTER_DW_DEFAULT_WORKER_MEMORY": "3072Mi",
        "JUPYTER_DW_DEFAULT_HEAD_MEMORY": "3Gi",
        "JUPYTER_DW_MAX_WORKER_CPU": "4",
        "JUPYTER_DW_MAX_WORKERS": "8",
    }
    published = load_settings(environ=env, paths=[]).spec_policy().published_sizes()

    contract = openapi()["components"]["schemas"]["ClusterPolicy"]["properties"]["sizes"]
    assert set(published) == {size.field for size in SIZES} == set(contract["required"])
    assert published == {
        "workers": {"default": 1, "max": 8},
        "head_cpu": {"default": "1", "max": None},
        "head_memory": {"default": "3Gi", "max": None},
        "worker_cpu": {"default": "750m", "max": "4"},
        "worker_memory": {"default": "3Gi", "max": None},
        "worker_gpu": {"default": 0, "max": None},
    }


def test_the_size_settings_are_the_size_table_s_rows():
    traits = DWSettings.class_own_traits(config=True)
    sized = {name for name in traits if name.startswith(("default_", "max_"))}
    names = {n for size in SIZES for n in (size.default_name, size.limit_name)}
    # Two settings per row and no sized setting without a row (default_image is no size).
    assert sized - names == {"default_image"} and names <= sized
    for size in SIZES:
        default, limit = traits[size.default_name], traits[size.limit_name]
        kind = Unicode if size.is_quantity else Int
        assert type(default) is kind and type(limit) is kind, size.field
        built_in = size.text(size.default) if size.is_quantity else size.default
        assert default.default_value == built_in, size.field
        assert limit.default_value is None and limit.allow_none, size.field
        # The help says what the table means: the request field a default fills in, and
        # that a limit's None is no limit.
        assert f"``{size.field}``" in default.help, size.field
        assert "None: no limit" in limit.help, size.field
