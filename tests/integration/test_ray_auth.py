"""Ray's token authentication on the real control plane (Kueue, KubeRay, KWOK pods), from a
workbench service account: what is created for each ``ray_auth`` mode, what KubeRay does with
it, the Ray versions refused up front, KubeRay's silent refusal shown as ``stalled``, and the
token Secret's owner check.

Pods run on KWOK's fake nodes: their spec is what KubeRay made, nothing runs in them.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from kubernetes import client

from tests.cluster.fixtures import watch_until
from tests.integration.clusters_support import (
    KUEUE,
    call,
    make_queue,
    open_events,
    rayclusters,
    small_cluster,
    state_is,
)
from tests.integration.workbench_rbac import namespace_rules

WORKBENCH_RULES = namespace_rules()

pytestmark = pytest.mark.cluster

RAY = ("ray.io", "v1")


def html_in_a_kernel(result: Any) -> str:
    """What a notebook shows for ``result``: IPython's formatters, registered as ``import
    jupyter_dw`` registers them in a kernel."""
    from IPython.core.interactiveshell import InteractiveShell

    from jupyter_dw.notebook.formatters import register

    shell = InteractiveShell.instance()
    register(shell)
    return shell.display_formatter.format(result)[0]["text/html"]


def raycluster_of(kube: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return client.CustomObjectsApi(kube).get_namespaced_custom_object(
        *RAY, namespace, "rayclusters", name
    )


def pods_of(kube: client.ApiClient, namespace: str, name: str, count: int) -> list[dict]:
    """The cluster's pods once KubeRay made ``count`` of them (raw JSON, as the API has them)."""
    core = client.CoreV1Api(kube)
    selector = f"ray.io/cluster={name}"

    def listing() -> list[dict]:
        response = core.list_namespaced_pod(
            namespace, label_selector=selector, _preload_content=False
        )
        return json.loads(response.data)["items"]

    watch_until(
        core.list_namespaced_pod,
        lambda _: len(listing()) >= count,
        namespace=namespace,
        label_selector=selector,
        what=f"{count} pods of {name}",
    )
    return listing()


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e for e in container.get("env") or []}


def secret_of(kube: client.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    core = client.CoreV1Api(kube)
    try:
        response = core.read_namespaced_secret(name, namespace, _preload_content=False)
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise
    return json.loads(response.data)


def wait_secret(kube: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return watch_until(
        client.CoreV1Api(kube).list_namespaced_secret,
        lambda _: True,
        namespace=namespace,
        field_selector=f"metadata.name={name}",
        what=f"Secret {name}",
    )


def token_in(secret: dict[str, Any]) -> str:
    return base64.b64decode(secret["data"]["auth_token"]).decode()


# --------------------------------------------------------------------------------------------
# token (the default): KubeRay's Secret and injection
# --------------------------------------------------------------------------------------------


async def test_a_created_cluster_has_token_auth_and_its_pods_get_the_token_from_its_secret(
    kube, kueue, namespace, jp_fetch, jp_ws_fetch
):
    make_queue(kueue)
    events, _ = await open_events(jp_ws_fetch)
    code, context = await call(jp_fetch, "GET", "context")
    assert code == 200
    assert context["kuberay"]["auth_options"] is True  # KubeRay 1.6.2's schema has it

    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("authed", 1))
    assert code == 201, created
    assert created["ray_auth"] == {"mode": "token", "warning": None}

    raycluster = raycluster_of(kube, namespace, "authed")
    assert raycluster["spec"]["authOptions"] == {"mode": "token"}
    assert raycluster["spec"]["rayVersion"] == "2.60.0"

    # KubeRay's Secret: named after the cluster, labelled, controlled by this RayCluster.
    secret = wait_secret(kube, namespace, "authed")
    assert secret["metadata"]["labels"]["ray.io/cluster"] == "authed"
    [owner] = secret["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "RayCluster",
        raycluster["metadata"]["uid"],
        True,
    )
    token = token_in(secret)
    assert len(token) >= 32

    # KubeRay's own injection into every Ray container (head and worker), from that Secret.
    ready = await events.cluster_state("authed", state_is("ready"), "ready")
    assert ready is not None and ready["ray_auth"]["mode"] == "token"
    pods = pods_of(kube, namespace, "authed", 2)
    assert sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods) == ["head", "worker"]
    for pod in pods:
        ray_container = pod["spec"]["containers"][0]
        env = env_of(ray_container)
        assert env["RAY_AUTH_MODE"] == {"name": "RAY_AUTH_MODE", "value": "token"}
        assert env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"] == {
            "name": "authed",
            "key": "auth_token",
        }
        assert token not in json.dumps(pod)  # a reference to the Secret, never the value

    # The token is in no answer the workbench got (REST and the events socket).
    _, listing = await call(jp_fetch, "GET", "clusters")
    _, one = await call(jp_fetch, "GET", "clusters", "authed")
    payloads = [context, created, listing, one, *events.seen]
    assert token not in json.dumps(payloads)
    events.close()


# --------------------------------------------------------------------------------------------
# disabled: no Secret, RAY_AUTH_MODE=disabled, a warning on the cluster
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dw_config", [{"ray_auth": "disabled"}], indirect=True)
async def test_auth_disabled_makes_no_secret_says_so_to_ray_and_warns(
    kube, kueue, namespace, jp_fetch, jp_ws_fetch
):
    make_queue(kueue)
    events, _ = await open_events(jp_ws_fetch)
    request = small_cluster("open", 1, image="rayproject/ray:2.47.1")  # any version will do
    code, created = await call(jp_fetch, "POST", "clusters", body=request)
    assert code == 201, created
    assert created["ray_auth"]["mode"] == "disabled"
    assert "ray_auth=disabled" in created["ray_auth"]["warning"]

    raycluster = raycluster_of(kube, namespace, "open")
    assert raycluster["spec"]["authOptions"] == {"mode": "disabled"}
    assert raycluster["spec"]["rayVersion"] == "2.47.1"
    ready = await events.cluster_state("open", state_is("ready"), "ready")
    assert ready is not None and ready["ray_auth"] == created["ray_auth"]
    # KubeRay reconciles the Secret before the Services and pods: with pods, it has decided.
    pods = pods_of(kube, namespace, "open", 2)
    for pod in pods:
        env = env_of(pod["spec"]["containers"][0])
        assert env["RAY_AUTH_MODE"] == {"name": "RAY_AUTH_MODE", "value": "disabled"}
        assert "RAY_AUTH_TOKEN" not in env
    assert secret_of(kube, namespace, "open") is None
    events.close()


# --------------------------------------------------------------------------------------------
# k8s: the manifest only (Ray 2.55+ delegating to the API server cannot run on KWOK)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dw_config", [{"ray_auth": "k8s"}], indirect=True)
async def test_k8s_auth_manifest(kube, kueue, namespace, jp_fetch):
    make_queue(kueue)
    code, error = await call(
        jp_fetch, "POST", "clusters", body=small_cluster("k8s", image="rayproject/ray:2.54.0")
    )
    assert code == 400 and "2.55.0" in error["errors"]["image"], error
    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("k8s"))
    assert code == 201, created
    assert created["ray_auth"] == {"mode": "k8s", "warning": None}
    raycluster = raycluster_of(kube, namespace, "k8s")
    assert raycluster["spec"]["authOptions"] == {"mode": "token", "enableK8sTokenAuth": True}
    assert raycluster["spec"]["rayVersion"] == "2.60.0"


# --------------------------------------------------------------------------------------------
# Ray versions KubeRay would refuse silently: 400 per field, nothing created
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"image": "rayproject/ray:2.51.0"}, "image", "older than 2.52.0"),
        ({"image": "quay.io/team/custom:1"}, "ray_version", "required"),
        ({"image": "quay.io/team/custom:1", "ray_version": "2.50.0"}, "ray_version", "2.52.0"),
        ({"ray_version": "2.59.0"}, "ray_version", "does not match the image's tag"),
        ({"env": {"RAY_AUTH_MODE": "disabled"}}, "env", "ray_auth"),
    ],
)
async def test_a_ray_version_token_auth_cannot_run_is_400_and_creates_nothing(
    kube, kueue, namespace, jp_fetch, extra, field, words
):
    make_queue(kueue)
    for route in (("clusters",), ("clusters", "fit")):
        code, error = await call(jp_fetch, "POST", *route, body=small_cluster("old", **extra))
        assert code == 400, (route, error)
        assert error["code"] == "invalid_spec"
        assert set(error["errors"]) == {field}, error
        assert words in error["errors"][field]
    assert rayclusters(kube, namespace) == []


# --------------------------------------------------------------------------------------------
# KubeRay's silent refusal: stalled, in KubeRay's words
# --------------------------------------------------------------------------------------------


async def test_a_spec_kuberay_refuses_is_stalled_with_its_words_while_kueue_admits_it(
    kube, kueue, namespace, jp_fetch, jp_ws_fetch
):
    """Made by another tool (jupyter_dw would refuse it): token auth on Ray 2.50.0. Kueue
    admits it and holds its quota; KubeRay makes nothing and says why only in an event."""
    queue = make_queue(kueue)
    events, _ = await open_events(jp_ws_fetch)
    container = {
        "name": "ray-head",
        "image": "rayproject/ray:2.50.0",
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
    }
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "refused", "labels": {f"{KUEUE}/queue-name": queue.local_queue}},
        "spec": {
            "rayVersion": "2.50.0",
            "authOptions": {"mode": "token"},
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [container]}},
            },
        },
    }
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        *RAY, namespace, "rayclusters", body
    )
    # Stalled as soon as KubeRay refuses it, and still when Kueue has admitted it.
    stalled = await events.cluster_state(
        "refused",
        lambda state: state is not None and state["state"] == "stalled" and state["admitted"],
        "stalled and admitted",
    )
    assert stalled is not None
    assert stalled["reason"] == "InvalidRayClusterSpec"
    assert "minimum Ray version is 2.52.0, got 2.50.0" in stalled["message"]
    assert stalled["ray_auth"] == {"mode": "token", "warning": None}
    # KubeRay wrote nothing on the RayCluster: only its event can have told the socket. (Which
    # change carried it, the Event or the RayCluster's own, depends on which watch delivers
    # first: an event about a cluster not cached yet waits for the cluster's own message.)
    code, one = await call(jp_fetch, "GET", "clusters", "refused")
    assert code == 200 and (one["state"], one["reason"]) == ("stalled", "InvalidRayClusterSpec")
    assert secret_of(kube, namespace, "refused") is None  # KubeRay made nothing
    assert pods_of_now(kube, namespace, "refused") == []
    events.close()


def pods_of_now(kube: client.ApiClient, namespace: str, name: str) -> list[Any]:
    return (
        client.CoreV1Api(kube)
        .list_namespaced_pod(namespace, label_selector=f"ray.io/cluster={name}")
        .items
    )


# --------------------------------------------------------------------------------------------
# A Secret planted under the cluster's name is never used
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dw_config", [{"ray_dashboard_url": "http://{name}.invalid:{port}"}], indirect=True
)
async def test_a_planted_token_secret_is_refused_by_the_proxy(kube, kueue, namespace, jp_fetch):
    """KubeRay reuses any Secret of the cluster's name: one made before the cluster (by
    someone who then knows the token) must not be used, and nothing is sent upstream."""
    make_queue(kueue)
    planted = base64.b64encode(b"known-to-the-attacker").decode()
    client.CoreV1Api(kube).create_namespaced_secret(
        namespace,
        {"metadata": {"name": "reused"}, "data": {"auth_token": planted}},
    )
    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("reused", 0))
    assert code == 201, created
    # KubeRay took the planted Secret: it made no other and points the pods at it.
    pods = pods_of(kube, namespace, "reused", 1)
    ref = env_of(pods[0]["spec"]["containers"][0])["RAY_AUTH_TOKEN"]["valueFrom"]
    assert ref["secretKeyRef"]["name"] == "reused"

    response_code, body = await proxy_get(jp_fetch, "reused", "api/jobs/")
    assert response_code == 502, body
    assert body["code"] == "ray_token_unavailable"
    assert "not by RayCluster reused" in body["reason"]
    assert "known-to-the-attacker" not in json.dumps(body)


async def proxy_get(jp_fetch, name: str, path: str) -> tuple[int, dict[str, Any]]:
    from tornado.httpclient import HTTPClientError

    try:
        response = await jp_fetch("dw", "ray", name, path, method="GET")
    except HTTPClientError as err:
        assert err.response is not None
        return err.code, json.loads(err.response.body)
    return response.code, json.loads(response.body)


@pytest.mark.parametrize(
    "rules",
    [[r for r in namespace_rules() if r["resources"] != ["secrets"]]],
    indirect=True,
)
@pytest.mark.parametrize(
    "dw_config", [{"ray_dashboard_url": "http://{name}.invalid:{port}"}], indirect=True
)
async def test_without_get_secrets_the_proxy_names_the_permission(kube, kueue, namespace, jp_fetch):
    make_queue(kueue)
    code, created = await call(jp_fetch, "POST", "clusters", body=small_cluster("nosecret", 0))
    assert code == 201, created
    wait_secret(kube, namespace, "nosecret")
    code, body = await proxy_get(jp_fetch, "nosecret", "api/jobs/")
    assert code == 403, body
    assert body.get("denied") == "get secrets"


# --------------------------------------------------------------------------------------------
# In the notebook: the warning on the status widget and the HTML, never the token
# --------------------------------------------------------------------------------------------


@pytest.fixture
def kernel_with(identity):
    """A kernel runtime with extra ``JUPYTER_DW_*`` settings (as the ``kernel`` fixture makes
    one), installed for ``import jupyter_dw as dw``; stopped afterwards."""
    from jupyter_dw.core.settings import load_settings
    from jupyter_dw.notebook.runtime import KernelRuntime, set_runtime

    made: list[tuple[Any, Any]] = []

    def make(**settings: str) -> Any:
        environ = {"JUPYTER_DW_SERVICE_ACCOUNT_DIR": str(identity.service_account_dir)}
        environ.update({f"JUPYTER_DW_{k.upper()}": v for k, v in settings.items()})
        runtime = KernelRuntime(load_settings(environ=environ, paths=[]))
        made.append((runtime, set_runtime(runtime)))
        return runtime

    yield make
    for runtime, previous in reversed(made):
        set_runtime(previous)
        runtime.stop()


@pytest.mark.parametrize(
    ("mode", "warned"), [("disabled", True), ("token", False)], ids=["disabled", "token"]
)
async def test_the_status_widget_warns_of_an_open_cluster_and_never_holds_the_token(
    kernel_with, kube, kueue, namespace, mode, warned
):
    import asyncio

    import jupyter_dw as dw
    from tests.integration.test_notebook_widgets import until

    kernel_with(ray_auth=mode)
    make_queue(kueue)
    handle = await asyncio.to_thread(dw.submit, **small_cluster("nb", 0))
    widget = dw.ClusterStatus("nb")
    auth = await until(widget, "ray_auth", lambda a: bool(a), "the cluster's auth")
    assert auth["mode"] == mode
    await until(widget, "state", lambda s: s == "ready", "ready")  # KubeRay has reconciled
    html = html_in_a_kernel(handle.status())
    if warned:
        assert "ray_auth=disabled" in auth["warning"]
        assert "jp-dw-auth-warning" in html and "ray_auth=disabled" in html
        assert secret_of(kube, namespace, "nb") is None
    else:
        assert auth["warning"] is None and "jp-dw-auth-warning" not in html
        token = token_in(wait_secret(kube, namespace, "nb"))
        state = json.dumps(widget.get_state(), default=str)
        assert token not in state and token not in html
    widget.close()
