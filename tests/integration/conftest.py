"""A Jupyter server running as a workbench pod would: on a test ServiceAccount's token, with
exactly the RBAC the test module grants.

A module says what its workbench may do with ``WORKBENCH_RULES`` (namespaced rules) and
``WORKBENCH_CLUSTER_RULES`` (cluster-wide rules, or None), and may override ``dw_config`` for
extra ``JupyterDW`` settings. A test changes any of ``rules``, ``cluster_rules``, ``dw_config``
or ``server_options`` by indirect parametrization.
"""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_dw.k8s.session import KubeSession
from jupyter_dw.server.handlers import CORE_SETTING


@pytest.fixture
def rules(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    """The workbench's namespaced RBAC (default: the module's ``WORKBENCH_RULES``)."""
    return getattr(request, "param", request.module.WORKBENCH_RULES)


@pytest.fixture
def cluster_rules(request: pytest.FixtureRequest) -> list[dict[str, Any]] | None:
    """The workbench's cluster-wide RBAC (default: the module's ``WORKBENCH_CLUSTER_RULES``)."""
    return getattr(request, "param", getattr(request.module, "WORKBENCH_CLUSTER_RULES", None))


@pytest.fixture
def dw_config(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Extra ``JupyterDW`` config."""
    return dict(getattr(request, "param", {}))


@pytest.fixture
def server_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Extra ``ServerApp`` config."""
    return dict(getattr(request, "param", {}))


@pytest.fixture
def identity(workbench, rules, cluster_rules, monkeypatch):
    """The workbench service account, its pod environment set before the server starts."""
    wb = workbench(rules=rules, cluster_rules=cluster_rules)
    for key, value in wb.environ.items():
        monkeypatch.setenv(key, value)
    return wb


@pytest.fixture
def jp_server_config(identity, dw_config, server_options):
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_dw": True}, **server_options},
        "JupyterDW": {"service_account_dir": str(identity.service_account_dir), **dw_config},
    }


@pytest.fixture
def session(jp_serverapp) -> KubeSession:
    """The server extension's KubeSession (to look at its caches, never to answer)."""
    return jp_serverapp.web_app.settings[CORE_SETTING].session


@pytest.fixture
def kernel(identity):
    """The kernel side as a workbench kernel runs it: its own core, from the settings a kernel
    can see (here: ``JUPYTER_DW_*`` variables, no config files), installed as this process's
    runtime for ``import jupyter_dw as dw``; stopped (ephemeral clusters deleted) after."""
    from jupyter_dw.core.settings import load_settings
    from jupyter_dw.notebook.runtime import KernelRuntime, set_runtime

    environ = {"JUPYTER_DW_SERVICE_ACCOUNT_DIR": str(identity.service_account_dir)}
    runtime = KernelRuntime(load_settings(environ=environ, paths=[]))
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.stop()
