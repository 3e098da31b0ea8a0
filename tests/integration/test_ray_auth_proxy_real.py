"""A real Ray head with token authentication behind the dashboard proxy.

RayCluster ``localhost`` is created with ``authOptions.mode: token``; KubeRay (the test bed's,
v1.6.2) makes its Secret with a random token, and a Ray head (``ray[default]`` 2.60.0 on
127.0.0.1, :mod:`tests.cluster.ray_head`: ``RAY_AUTH_MODE=token``, that token, a private
``HOME``) stands in for the cluster's head (the proxy's template is ``http://{name}:{port}``).
Ray itself refuses its Jobs API without the token (401) and with a wrong one (403); through
the proxy it works, the token never reaches the client (Ray's ``/api/authenticate`` answers
with a ``Set-Cookie`` holding it: dropped), and it is in no log line and no REST payload.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from tests.cluster.fixtures import watch_until
from tests.cluster.ray_head import ray_head, status_of
from tests.integration.browser import Console, chromium
from tests.integration.clusters_support import call
from tests.integration.log_capture import server_log
from tests.integration.test_ray_dashboard_real import FAILED_RESOURCE, open_cluster_view
from tests.integration.workbench_rbac import namespace_rules

pytestmark = pytest.mark.cluster

CLUSTER = "localhost"  # a valid RayCluster name, and a host name that is 127.0.0.1
WORKBENCH_RULES = namespace_rules()


@pytest.fixture
def token(kube: client.ApiClient, namespace: str) -> str:
    """RayCluster ``localhost`` with token auth (suspended, no queue: nothing runs), and the
    token KubeRay made for it."""
    container = {"name": "ray-head", "image": "rayproject/ray:2.60.0"}
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": CLUSTER},
        "spec": {
            "suspend": True,
            "rayVersion": "2.60.0",
            "authOptions": {"mode": "token"},
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [container]}},
            },
        },
    }
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", body
    )
    secret = watch_until(
        client.CoreV1Api(kube).list_namespaced_secret,
        lambda _: True,
        namespace=namespace,
        field_selector=f"metadata.name={CLUSTER}",
        what="KubeRay's token Secret",
    )
    return base64.b64decode(secret["data"]["auth_token"]).decode()


@pytest.fixture
def ray_port(token: str) -> Iterator[int]:
    with ray_head(token) as port:
        yield port


@pytest.fixture
def dw_config(ray_port: int) -> dict[str, Any]:
    return {"ray_dashboard_url": "http://{name}:{port}", "ray_dashboard_port": ray_port}


async def test_ray_refuses_without_the_token_and_the_proxy_adds_it(
    token, ray_port, jp_fetch, jp_base_url, http_server_client
):
    ray = f"http://127.0.0.1:{ray_port}"
    # Ray's own answers: auth is really on (public paths stay public).
    assert status_of(f"{ray}/api/jobs/") == 401
    assert status_of(f"{ray}/api/jobs/", {"Authorization": "Bearer wrong"}) == 403
    assert status_of(f"{ray}/api/jobs/", {"Authorization": f"Bearer {token}"}) == 200
    assert status_of(f"{ray}/api/authentication_mode") == 200

    with server_log() as log:
        # The entry route: Jupyter's login, then a redirect to the capability path.
        with pytest.raises(HTTPClientError) as redirect:
            await jp_fetch("dw", "ray", CLUSTER, "api/jobs/", follow_redirects=False)
        assert redirect.value.code == 302
        location = redirect.value.response.headers["Location"]
        assert "/~cap/" in location and token not in location
        server = f"http://127.0.0.1:{http_server_client.get_http_port()}"
        page = AsyncHTTPClient()  # as the sandboxed page: no Jupyter token, no cookie

        jobs = await page.fetch(server + location)
        assert jobs.code == 200
        assert json.loads(jobs.body) == []  # Ray's Jobs API answered: no job yet
        assert token not in str(jobs.headers) and token.encode() not in jobs.body

        # The page's own token header is never forwarded: the proxy's is what Ray checks.
        spoofed = await page.fetch(
            server + location, headers={"X-Ray-Authorization": "Bearer wrong"}
        )
        assert spoofed.code == 200

        # Ray's /api/authenticate sets a cookie holding the token: it never gets through.
        authenticate = location.replace("api/jobs/", "api/authenticate")
        answer = await page.fetch(server + authenticate, method="POST", body=b"")
        assert answer.code == 200, answer.body
        assert json.loads(answer.body)["status"] == "authenticated"
        assert answer.headers.get_list("Set-Cookie") == []
        assert token not in str(answer.headers) and token.encode() not in answer.body

        payloads = [
            await call(jp_fetch, "GET", "context"),
            await call(jp_fetch, "GET", "clusters"),
            await call(jp_fetch, "GET", "clusters", CLUSTER),
        ]
    # Control: Ray does send the cookie to a client that holds the token.
    direct = await AsyncHTTPClient().fetch(
        f"{ray}/api/authenticate",
        method="POST",
        body=b"",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert any(token in cookie for cookie in direct.headers.get_list("Set-Cookie"))

    assert [code for code, _ in payloads] == [200, 200, 200], payloads
    [cluster] = payloads[1][1]["clusters"]
    assert cluster["ray_auth"] == {"mode": "token", "warning": None}
    assert token not in json.dumps(payloads)
    assert any("api/jobs" in line for line in log), "the proxied requests were logged"
    assert not [line for line in log if token in line]


async def test_the_dashboard_works_in_chromium_with_auth_on_and_the_page_never_holds_the_token(
    token, ray_port, jp_serverapp, jp_base_url, http_server_client
):
    base = f"http://127.0.0.1:{http_server_client.get_http_port()}{jp_base_url}"
    jupyter_token = jp_serverapp.identity_provider.token
    console = Console()
    answers: list[tuple[int, str]] = []

    async with chromium() as browser:
        # The node table is filled from Ray API calls that need the token.
        context, page = await open_cluster_view(browser, base, jupyter_token, console, answers)
        seen_by_page = await page.evaluate(
            "() => [document.documentElement.outerHTML, document.cookie,"
            " JSON.stringify(Object.assign({}, localStorage)), location.href].join('\\n')"
        )
        cookies = await context.cookies()
        await context.close()

    assert token not in seen_by_page
    assert not [c for c in cookies if token in c["value"]]
    proxied = [(status, url) for status, url in answers if "/~cap/" in url]
    assert any("/api/" in url for _, url in proxied), answers
    # No request was refused for want of the token (Ray's 401/403).
    assert not [(s, u) for s, u in proxied if s in (401, 403)], proxied
    assert [e for e in console.errors if not FAILED_RESOURCE.match(e)] == []
