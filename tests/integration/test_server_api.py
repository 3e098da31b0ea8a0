"""The server extension's surface on the real control plane: version, context, configuration,
authentication and authorization by jupyter_server, and errors as ``{"error","reason","hint"}``.
"""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest
from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import JupyterServerAuthWarning, url_path_join
from tornado.httpclient import HTTPClientError

import jupyter_dw.k8s.session as session_module
from jupyter_dw import __version__
from jupyter_dw.server.handlers import AUTH_RESOURCE, CORE_SETTING
from tests.cluster.controlplane import free_port
from tests.cluster.fixtures import WAIT_TIMEOUT

pytestmark = pytest.mark.cluster

KUEUE = "kueue.x-k8s.io"
ROUTES = ("version", "context", "queues")
# A namespace user without any ClusterRole: may read its queues, not ClusterQueues.
WORKBENCH_RULES = [
    {"apiGroups": [KUEUE], "resources": ["localqueues", "workloads"], "verbs": ["list", "watch"]},
    {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["list", "watch", "create"]},
]


async def fetch_json(jp_fetch, route: str, **kwargs) -> tuple[int, dict]:
    """GET ``dw/api/<route>``; errors are returned, not raised."""
    try:
        response = await jp_fetch("dw", "api", route, request_timeout=WAIT_TIMEOUT, **kwargs)
    except HTTPClientError as err:
        assert err.response is not None
        return err.code, json.loads(err.response.body)
    return response.code, json.loads(response.body)


async def test_version(jp_fetch):
    code, body = await fetch_json(jp_fetch, "version")
    assert (code, body) == (200, {"version": __version__})


async def test_context_names_identity_apis_and_permissions(
    jp_fetch, identity, namespace, kueue_api_version
):
    code, context = await fetch_json(jp_fetch, "context")

    assert code == 200
    assert context["namespace"] == namespace
    assert context["namespace_source"] == "service_account"
    assert context["credentials"]["source"] == "service_account"
    assert context["identity"]["username"] == identity.username
    assert context["identity"]["kind"] == "ServiceAccount"
    assert context["identity"]["service_account"] == {"namespace": namespace, "name": "workbench"}
    assert f"system:serviceaccounts:{namespace}" in context["identity"]["groups"]
    assert context["kueue_api"] == kueue_api_version
    assert context["kueue"]["installed"] is True
    assert context["kueue"]["visibility_api_version"] is not None
    # KubeRay 1.6.2's RayCluster schema has spec.authOptions (read from OpenAPI v3, which
    # needs no grant): clusters get Ray's token authentication.
    assert context["kuberay"] == {
        "installed": True,
        "api_version": "v1",
        "auth_options": True,
        "rayjobs": True,
    }
    allowed = {p["permission"]: p["allowed"] for p in context["permissions"]}
    assert allowed["list localqueues.kueue.x-k8s.io"] is True
    assert allowed["watch workloads.kueue.x-k8s.io"] is True
    assert allowed["create rayclusters.ray.io"] is True
    assert allowed["list clusterqueues.kueue.x-k8s.io"] is False
    assert allowed["delete rayclusters.ray.io"] is False
    assert allowed["get rayclusters.ray.io"] is False  # the dashboard proxy's check
    assert allowed["get localqueues.visibility.kueue.x-k8s.io/pendingworkloads"] is False
    assert allowed["get secrets"] is False and allowed["list events"] is False
    assert "clusterqueues" not in context["caches"]  # not readable: no cache, no 403 loop
    # RayClusters are listed and watched too; pods are not readable for this Role.
    assert set(context["caches"]) == {"localqueues", "workloads", "rayclusters"}
    # Nothing configured: the built-in defaults, no limits.
    assert context["cluster_policy"]["sizes"]["worker_cpu"] == {"default": "1", "max": None}


@pytest.mark.parametrize(
    "dw_config",
    [
        {
            "default_worker_cpu": "750m",
            "default_worker_memory": "3Gi",
            "default_head_memory": "3Gi",
            "default_workers": 2,
            "max_workers": 8,
            "max_worker_cpu": "4",
            "max_head_memory": "16Gi",
            "allowed_images": ["quay.io/team/"],
            "default_image": "quay.io/team/ray:2.60.0",
        }
    ],
    indirect=True,
)
async def test_context_publishes_the_configured_cluster_defaults_and_limits(jp_fetch):
    """What the sidebar's form shows as each empty field's value and its limit (issue 34)."""
    code, context = await fetch_json(jp_fetch, "context")

    assert code == 200
    assert context["cluster_policy"] == {
        "default_image": "quay.io/team/ray:2.60.0",
        "sizes": {
            "workers": {"default": 2, "max": 8},
            "head_cpu": {"default": "1", "max": None},
            "head_memory": {"default": "3Gi", "max": "16Gi"},
            "worker_cpu": {"default": "750m", "max": "4"},
            "worker_memory": {"default": "3Gi", "max": None},
            "worker_gpu": {"default": 0, "max": None},
        },
    }


@pytest.mark.parametrize("rules", [[]], indirect=True)
async def test_kubernetes_403_names_the_verb_and_resource(jp_fetch):
    code, body = await fetch_json(jp_fetch, "queues")

    assert code == 403
    assert body["denied"] in {"list localqueues.kueue.x-k8s.io", "watch localqueues.kueue.x-k8s.io"}
    assert "localqueues.kueue.x-k8s.io" in body["error"]
    assert body["reason"] and body["hint"]


@pytest.fixture
def closed_port(identity, monkeypatch):
    """Point the pod environment at a port where no API server listens."""
    port = str(free_port())
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    return port


async def test_unreachable_api_server_is_503_with_the_cause(closed_port, jp_fetch):
    code, body = await fetch_json(jp_fetch, "context")

    assert code == 503
    assert body["code"] == "unreachable"
    assert closed_port in body["error"]
    assert "refused" in body["reason"].lower()
    assert body["hint"]
    # The version handshake does not need Kubernetes.
    assert (await fetch_json(jp_fetch, "version"))[0] == 200


@pytest.fixture
def without_kueue(monkeypatch):
    """Make discovery report Kueue as absent (simulated: the shared cluster keeps Kueue
    installed). Everything else, including the rest of discovery, is the real cluster."""
    real = session_module.discover

    def discover(api):
        found = real(api)
        return dataclasses.replace(
            found, kueue_served=(), kueue_version=None, kueue_resources=frozenset()
        )

    monkeypatch.setattr(session_module, "discover", discover)


async def test_missing_kueue_says_kueue_is_not_installed(without_kueue, jp_fetch):
    code, body = await fetch_json(jp_fetch, "queues")
    assert code == 503
    assert body["error"] == "Kueue is not installed"
    assert body["code"] == "kueue_not_installed"
    assert "kueue.x-k8s.io" in body["reason"]

    code, context = await fetch_json(jp_fetch, "context")
    assert code == 200
    assert context["kueue"]["installed"] is False
    assert context["kuberay"]["installed"] is True


@pytest.mark.parametrize("route", ROUTES)
async def test_unauthenticated_requests_are_refused(jp_fetch, route):
    for headers in ({"Authorization": "token wrong-token"}, {"Authorization": ""}):
        with pytest.raises(HTTPClientError) as refused:
            await jp_fetch("dw", "api", route, headers=headers)
        assert refused.value.code in (401, 403)
        assert b"version" not in refused.value.response.body
        assert b"namespace" not in refused.value.response.body


class UndecoratedHandler(APIHandler):
    """A control: a handler that forgets @web.authenticated (jupyter_server must warn)."""

    async def get(self) -> None:
        self.finish({})


STRICT_SERVER = {
    "allow_unauthenticated_access": False,
    # pytest-jupyter adds jupyter_server_terminals, whose websocket handler draws the warning.
    "jpserver_extensions": {"jupyter_dw": True, "jupyter_server_terminals": False},
}


@pytest.mark.parametrize("server_options", [STRICT_SERVER], indirect=True)
async def test_no_auth_warning_with_unauthenticated_access_disallowed(
    recwarn, caplog, jp_serverapp, jp_fetch
):
    # recwarn and caplog were set up before the server, so they saw it start.
    assert jp_serverapp.allow_unauthenticated_access is False
    assert "jupyter_dw" in jp_serverapp.extension_manager.extension_apps
    assert [str(w.message) for w in recwarn if w.category is JupyterServerAuthWarning] == []
    logged = [
        r.getMessage()
        for phase in ("setup", "call")
        for r in caplog.get_records(phase)
        if r.levelno >= logging.WARNING
    ]
    assert not [m for m in logged if "dw/api" in m or "jupyter_dw" in m], logged

    # Control: this server does warn about an extension handler without authentication.
    jp_serverapp.web_app.add_handlers(
        ".*$", [(url_path_join(jp_serverapp.base_url, "dw-control"), UndecoratedHandler)]
    )
    auth = [str(w.message) for w in recwarn if w.category is JupyterServerAuthWarning]
    assert len(auth) == 1 and "UndecoratedHandler" in auth[0]

    # Our handlers work with a token and refuse without one.
    assert await fetch_json(jp_fetch, "version") == (200, {"version": __version__})
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("dw", "api", "queues", headers={"Authorization": ""})
    assert refused.value.code == 403


@pytest.fixture
def jp_argv(request: pytest.FixtureRequest) -> list[str]:
    """Server command line; parametrize indirectly to add ``--JupyterDW...`` options."""
    return list(getattr(request, "param", []))


@pytest.mark.parametrize(
    ("dw_config", "jp_argv"),
    [
        pytest.param({"namespace": "team-configured"}, [], id="config"),
        pytest.param({}, ["--JupyterDW.namespace=team-configured"], id="argv"),
    ],
    indirect=True,
)
async def test_namespace_is_configurable(jp_fetch, jp_serverapp):
    code, context = await fetch_json(jp_fetch, "context")

    assert code == 200
    assert context["namespace"] == "team-configured"
    assert context["namespace_source"] == "config"
    assert jp_serverapp.web_app.settings[CORE_SETTING].get().session.namespace == "team-configured"


class DenyJupyterDW(Authorizer):
    """Allows everything except the ``jupyter_dw`` resource (checks ``@authorized`` is used)."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != AUTH_RESOURCE


@pytest.mark.parametrize("server_options", [{"authorizer_class": DenyJupyterDW}], indirect=True)
@pytest.mark.parametrize("route", ROUTES)
async def test_every_route_is_authorized_by_jupyter_server(jp_fetch, route):
    code, body = await fetch_json(jp_fetch, route)
    assert code == 403
    assert AUTH_RESOURCE in body["error"]
    assert (await jp_fetch("api", "status")).code == 200  # the same user, another resource
