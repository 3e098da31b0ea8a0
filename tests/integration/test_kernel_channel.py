"""The kernel channel on a real server: a kernel of the server is known by the secret the
server published, and that secret opens jupyter_dw's routes and nothing else; the browser's
credentials do not open the channel; only the listed calls answer."""

from __future__ import annotations

import json
import os

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_dw.names import KERNEL_LINK_ENV
from jupyter_dw.notebook.server_link import read_link
from tests.cluster.fixtures import WAIT_TIMEOUT
from tests.integration.clusters_support import make_queue
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

pytestmark = pytest.mark.cluster

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES


async def kernel_headers(jp_fetch) -> dict[str, str]:
    await jp_fetch("dw", "api", "version")  # the server listens: its link is published
    info = read_link(os.environ[KERNEL_LINK_ENV])
    assert info is not None, "the server published no kernel link"
    return {"Authorization": f"DW-Kernel {info.secret}"}


def call(service: str, method: str, *args, **kwargs) -> str:
    return json.dumps({"service": service, "method": method, "args": list(args), "kwargs": kwargs})


async def test_a_kernel_call_answers_what_the_rest_route_answers(jp_fetch, kueue):
    queue = make_queue(kueue)
    headers = await kernel_headers(jp_fetch)
    through = await jp_fetch(
        "dw", "api", "kernel", "call", method="POST", headers=headers,
        body=call("queues", "list"), request_timeout=WAIT_TIMEOUT,
    )  # fmt: skip
    rest = await jp_fetch("dw", "api", "queues", request_timeout=WAIT_TIMEOUT)
    result = json.loads(through.body)["result"]
    assert [q["name"] for q in result["queues"]] == [queue.local_queue]
    assert result == json.loads(rest.body)


async def test_the_secret_opens_the_rest_routes_and_the_events_socket(jp_fetch, jp_ws_fetch):
    headers = await kernel_headers(jp_fetch)
    context = await jp_fetch("dw", "api", "context", headers=headers, request_timeout=WAIT_TIMEOUT)
    assert json.loads(context.body)["identity"]["username"].startswith("system:serviceaccount:")
    socket = await jp_ws_fetch("dw", "api", "events", headers=headers)
    first = json.loads(await socket.read_message())
    assert first["type"] == "snapshot"
    socket.close()


async def test_the_secret_opens_nothing_else_of_jupyter(jp_fetch):
    headers = await kernel_headers(jp_fetch)
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("api", "contents", headers=headers)
    assert caught.value.code == 403


async def test_the_browsers_credentials_do_not_open_the_kernel_channel(jp_fetch):
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("dw", "api", "kernel", "call", method="POST", body=call("queues", "list"))
    assert caught.value.code == 403
    assert json.loads(caught.value.response.body)["code"] == "kernel_only"


async def test_a_wrong_secret_is_refused_by_jupyter_server(jp_fetch):
    await kernel_headers(jp_fetch)
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch(
            "dw", "api", "kernel", "call", method="POST", body=call("queues", "list"),
            headers={"Authorization": "DW-Kernel not-the-secret"},
        )  # fmt: skip
    assert caught.value.code == 403
    assert "code" not in json.loads(caught.value.response.body)  # jupyter_server's answer


@pytest.mark.parametrize(
    "body",
    [call("clusters", "raycluster", "x"), call("session", "stop"), call("settings", "x")],
    ids=["raw-object", "session-stop", "no-such-service"],
)
async def test_only_the_listed_calls_answer(jp_fetch, body):
    headers = await kernel_headers(jp_fetch)
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("dw", "api", "kernel", "call", method="POST", headers=headers, body=body)
    assert caught.value.code == 400
    assert json.loads(caught.value.response.body)["code"] == "unknown_call"


async def test_a_malformed_call_is_a_clear_400(jp_fetch):
    headers = await kernel_headers(jp_fetch)
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch(
            "dw", "api", "kernel", "call", method="POST", headers=headers,
            body=json.dumps({"service": "queues", "method": "list", "args": {}}),
        )  # fmt: skip
    assert caught.value.code == 400
    assert json.loads(caught.value.response.body)["code"] == "invalid_request"


async def test_the_link_file_goes_when_the_server_stops(jp_serverapp, jp_fetch):
    await kernel_headers(jp_fetch)
    path = os.environ[KERNEL_LINK_ENV]
    extension = jp_serverapp.extension_manager.extension_apps["jupyter_dw"]
    (app,) = extension
    await app.stop_extension()
    assert not os.path.exists(path)
    assert KERNEL_LINK_ENV not in os.environ
