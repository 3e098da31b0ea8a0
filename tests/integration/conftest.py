"""A Jupyter server running as a workbench pod would: on a test ServiceAccount's token, with
exactly the RBAC the test module grants.

A module says what its workbench may do with ``WORKBENCH_RULES`` (namespaced rules) and
``WORKBENCH_CLUSTER_RULES`` (cluster-wide rules, or None), and may override ``dw_config`` for
extra ``JupyterDW`` settings. A test changes any of ``rules``, ``cluster_rules``, ``dw_config``
or ``server_options`` by indirect parametrization.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from tornado.websocket import WebSocketClientConnection

from jupyter_dw.k8s.session import KubeSession
from jupyter_dw.server.handlers import CORE_SETTING
from tests.openapi_check import check_event, check_response


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
    return jp_serverapp.web_app.settings[CORE_SETTING].get().session


@pytest.fixture
def kernel_settings() -> dict[str, str]:
    """``JUPYTER_DW_*`` variables the ``kernel`` sees besides its service account; a module
    overrides this fixture to aim kernels elsewhere (e.g. at a local Ray head)."""
    return {}


@pytest.fixture
def kernel(identity, kernel_settings):
    """The kernel side as a workbench kernel runs it: its own core, from the settings a kernel
    can see (here: ``JUPYTER_DW_*`` variables, no config files), installed as this process's
    runtime for ``import jupyter_dw as dw``; stopped (ephemeral clusters deleted) after."""
    from jupyter_dw.core.settings import load_settings
    from jupyter_dw.notebook.runtime import KernelRuntime, set_runtime

    environ = {
        "JUPYTER_DW_SERVICE_ACCOUNT_DIR": str(identity.service_account_dir),
        **kernel_settings,
    }
    # Its own connection: the server extension a test may run in this process publishes its
    # link in os.environ, which this kernel does not look at (``server_kernel`` does).
    runtime = KernelRuntime(load_settings(environ=environ, paths=[]), environ=environ)
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.stop()


@pytest.fixture
def server_kernel(identity, kernel_settings, jp_serverapp, http_server_client):
    """A kernel of the test's Jupyter server: it reads through the server (its link found as
    a real kernel finds it, from the variable it inherits). Its calls block: an async test
    runs them with ``asyncio.to_thread`` (the server answers on the test's own loop, its HTTP
    server started by ``http_server_client``)."""
    from jupyter_dw.core.settings import load_settings
    from jupyter_dw.names import KERNEL_LINK_ENV
    from jupyter_dw.notebook.runtime import KernelRuntime, set_runtime

    environ = {
        "JUPYTER_DW_SERVICE_ACCOUNT_DIR": str(identity.service_account_dir),
        KERNEL_LINK_ENV: os.environ[KERNEL_LINK_ENV],
        **kernel_settings,
    }
    runtime = KernelRuntime(load_settings(environ=environ, paths=[]), environ=environ)
    previous = set_runtime(runtime)
    yield runtime
    set_runtime(previous)
    runtime.stop()  # after the test: its loop no longer runs the server, whose stop is near


# --------------------------------------------------------------------------------------------
# Every answer of dw/api/ checked against jupyter_dw/openapi.yaml
# --------------------------------------------------------------------------------------------


@pytest.fixture
def jp_fetch(jp_fetch):
    """pytest-jupyter's ``jp_fetch``, validating each ``dw/api/`` answer (errors too) against
    openapi.yaml before the test sees it."""

    async def fetch(*parts: str, **kwargs: Any):
        method = kwargs.get("method", "GET")
        checked = len(parts) > 2 and parts[:2] == ("dw", "api")
        path = "/".join(parts[2:])
        try:
            response = await jp_fetch(*parts, **kwargs)
        except HTTPClientError as err:
            if checked and err.response is not None:
                check_response(method, path, err.code, err.response.body)
            raise
        if checked:
            check_response(method, path, response.code, response.body)
        return response

    return fetch


class _CheckedEvents:
    """A WebSocket client connection whose messages are checked against ``EventMessage``."""

    def __init__(self, ws: WebSocketClientConnection) -> None:
        self._ws = ws

    async def read_message(self, *args: Any, **kwargs: Any) -> Any:
        text = await self._ws.read_message(*args, **kwargs)
        if isinstance(text, str):
            check_event(json.loads(text))
        return text

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ws, name)


@pytest.fixture
def jp_ws_fetch(jp_ws_fetch):
    """pytest-jupyter's ``jp_ws_fetch``; ``dw/api/events`` messages are checked against
    openapi.yaml as they are read."""

    async def connect(*parts: str, **kwargs: Any):
        ws = await jp_ws_fetch(*parts, **kwargs)
        return _CheckedEvents(ws) if parts[:3] == ("dw", "api", "events") else ws

    return connect
