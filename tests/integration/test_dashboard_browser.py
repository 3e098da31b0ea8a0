"""A hostile Ray dashboard in real headless Chromium: nothing it serves can act as the Jupyter
user, and it still works.

The stand-in dashboard (a tornado app on 127.0.0.1, reached through the proxy as RayCluster
``dash``'s dashboard) serves a page whose script tries every attack the issue lists and writes
what each one got into ``window.report``; the test reads that report, and checks the server's
own state (kernels, files, the RayCluster, service workers) rather than trusting the page. The
same page proves the dashboard's own fetch and WebSocket to its paths work through the proxy.
It runs twice: framed in a Jupyter page (as a JupyterLab tab would show it) and as a tab of its
own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from tornado import web
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port
from tornado.websocket import WebSocketHandler

from tests.integration.browser import Console, chromium, watch
from tests.integration.clusters_support import create_suspended_raycluster
from tests.integration.log_capture import server_log

pytestmark = pytest.mark.cluster

CLUSTER = "dash"
# Enough for the attacks to do harm if a request got through with the user's credentials.
WORKBENCH_RULES = [
    {
        "apiGroups": ["ray.io"],
        "resources": ["rayclusters"],
        "verbs": ["get", "list", "watch", "create", "delete"],
    }
]
TEMPLATE = "http://127.0.0.1:{port}/{namespace}/{name}"
PAGE_TIMEOUT_MS = 60_000
PLANTED = "planted.txt"

# The page: each attack is a function returning what it got; a thrown error is recorded as
# such. Nothing here may reach Jupyter's API with the user's credentials.
ATTACK_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>hostile dashboard</title></head>
<body><h1>Ray dashboard (hostile stand-in)</h1>
<script>
const CLUSTER = %(cluster)s;
const jupyter = location.pathname.split("/dw/ray/")[0] + "/";
const wsBase = (location.protocol === "https:" ? "wss://" : "ws://") + location.host;
const report = {};
window.report = report;

async function attempt(name, fn) {
  try {
    report[name] = {ok: true, value: await fn()};
  } catch (err) {
    report[name] = {ok: false, error: String(err && err.name || err)};
  }
}

async function status(url, init) {
  const response = await fetch(url, init);
  return {status: response.status, type: response.type, body: await response.text()};
}

function socket(url, send) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    const got = [];
    const timer = setTimeout(() => resolve({opened: false, got, timeout: true}), 10000);
    ws.onopen = () => { if (send) ws.send(send); };
    ws.onmessage = (event) => {
      got.push(String(event.data));
      if (!send || got.length === 2) {
        clearTimeout(timer); ws.close(); resolve({opened: true, got});
      }
    };
    ws.onerror = () => { clearTimeout(timer); resolve({opened: false, got}); };
  });
}

async function run() {
  const framed = window.top !== window;
  // --- the dashboard's own requests, through the proxy ---
  await attempt("own_fetch", () => fetch("api/data?x=1").then((r) => r.json()));
  await attempt("own_post", () =>
    fetch("api/data", {method: "POST", headers: {"Content-Type": "application/json"},
                        body: JSON.stringify({job: 1})}).then((r) => r.json()));
  await attempt("own_websocket", () =>
    socket(new URL("ws", location.href).href.replace(/^http/, "ws"), "ping"));
  // --- what belongs to Jupyter's origin ---
  await attempt("cookie", () => document.cookie);
  await attempt("cookie_native", () =>
    Object.getOwnPropertyDescriptor(Document.prototype, "cookie").get.call(document));
  await attempt("local_storage", () => {
    localStorage.setItem("dw-planted", "1");
    return Object.keys(localStorage);
  });
  await attempt("local_storage_native", () =>
    Object.getOwnPropertyDescriptor(window.constructor.prototype, "localStorage") ||
    Object.getOwnPropertyDescriptor(Window.prototype, "localStorage")
      ? "descriptor" : "none");
  await attempt("origin", () => window.origin);
  // --- Jupyter's REST API with the user's credentials ---
  await attempt("list_contents", () => status(jupyter + "api/contents", {credentials: "include"}));
  await attempt("read_lab_page", () => status(jupyter + "lab", {credentials: "include"}));
  await attempt("start_kernel", () => status(jupyter + "api/kernels", {
    method: "POST", credentials: "include", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({name: "python3"})}));
  await attempt("start_kernel_no_cors", () => status(jupyter + "api/kernels", {
    method: "POST", mode: "no-cors", credentials: "include", body: "{}"}));
  await attempt("write_file", () => status(jupyter + "api/contents/" + %(planted)s, {
    method: "PUT", credentials: "include", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({type: "file", format: "text", content: "owned"})}));
  await attempt("new_file_no_cors", () => status(jupyter + "api/contents", {
    method: "POST", mode: "no-cors", credentials: "include", body: '{"type": "file"}'}));
  await attempt("delete_cluster", () => status(jupyter + "dw/api/clusters/" + CLUSTER, {
    method: "DELETE", credentials: "include"}));
  await attempt("create_cluster_no_cors", () => status(jupyter + "dw/api/clusters", {
    method: "POST", mode: "no-cors", credentials: "include",
    body: JSON.stringify({name: "planted", queue: "q", workers: 1})}));
  await attempt("form_post_kernel", () => new Promise((resolve) => {
    const sink = document.createElement("iframe");
    sink.name = "sink";
    sink.onload = () => resolve("submitted");
    document.body.appendChild(sink);
    const form = document.createElement("form");
    form.method = "POST"; form.action = jupyter + "api/kernels"; form.target = "sink";
    form.enctype = "text/plain";
    const field = document.createElement("input");
    field.name = '{"name": "python3", "x": "'; field.value = '"}';
    form.appendChild(field);
    document.body.appendChild(form);
    form.submit();
    setTimeout(() => resolve("no load"), 5000);
  }));
  await attempt("events_socket", () => socket(wsBase + jupyter + "dw/api/events"));
  await attempt("kernels_via_proxy_entry", () =>
    status(jupyter + "dw/ray/" + CLUSTER + "/", {credentials: "include"}));
  await attempt("xhr_with_credentials", () => new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("GET", jupyter + "api/contents");
    xhr.withCredentials = true;
    xhr.onload = () => resolve({status: xhr.status, body: xhr.responseText});
    xhr.onerror = () => reject(new Error("NetworkError"));
    xhr.send();
  }));
  // --- a service worker on Jupyter's origin ---
  await attempt("service_worker", () =>
    navigator.serviceWorker.register("sw.js", {scope: "./"}).then((r) => r.scope));
  await attempt("service_worker_root", () =>
    navigator.serviceWorker.register(jupyter + "dw/ray/" + CLUSTER + "/sw.js",
                                     {scope: jupyter}).then((r) => r.scope));
  // --- leaving through us ---
  await attempt("redirect_evil", () => status("redirect-evil", {redirect: "manual"}));
  await attempt("redirect_escape", () => status("redirect-escape", {redirect: "manual"}));
  await attempt("popup_redirect", () => {
    const popup = window.open("redirect-evil", "_blank");
    return popup ? "opened" : "blocked";
  });
  if (framed) {
    await attempt("navigate_top", () => {
      window.top.location = "https://evil.example/top"; return "set";
    });
    await attempt("navigate_parent", () => {
      window.parent.location.href = "https://evil.example/parent"; return "set";
    });
    await attempt("read_parent", () => window.parent.document.cookie);
  }
  window.done = true;
}
run();
</script></body></html>
"""

SERVICE_WORKER = b"self.addEventListener('fetch', () => {});"


class StandInPage(web.RequestHandler):
    """The hostile page, its API (echo JSON), its service worker script and its redirects."""

    SUPPORTED_METHODS = ("GET", "POST")

    def initialize(self, seen: list[str]) -> None:
        self.seen = seen

    def get(self, path: str) -> None:
        self.seen.append(f"{self.request.method} {path}")
        if path == "":
            self.set_header("Content-Type", "text/html; charset=utf-8")
            page = ATTACK_PAGE % {"cluster": json.dumps(CLUSTER), "planted": json.dumps(PLANTED)}
            self.finish(page.encode())
        elif path == "sw.js":
            self.set_header("Content-Type", "text/javascript")
            self.set_header("Service-Worker-Allowed", "/")
            self.finish(SERVICE_WORKER)
        elif path == "redirect-evil":
            self.redirect("https://evil.example/phish")
        elif path == "redirect-escape":
            self.redirect("../../../../../../api/kernels")
        elif path == "favicon.ico":
            self.set_status(204)
        else:
            self.finish({"method": self.request.method, "path": path, "body": None})

    def post(self, path: str) -> None:
        self.seen.append(f"POST {path}")
        self.finish({"method": "POST", "path": path, "body": json.loads(self.request.body)})


class StandInSocket(WebSocketHandler):
    """Greets and echoes; accepts the sandboxed page's ``null`` origin, as Ray's does."""

    def check_origin(self, origin: str) -> bool:
        return True

    def open(self, *args: str) -> None:
        self.write_message("hello from the dashboard")

    def on_message(self, message: str | bytes) -> None:
        self.write_message(f"echo: {message}")


@pytest.fixture
def stand_in(jp_asyncio_loop) -> Iterator[tuple[int, list[str]]]:
    """``(port, requests seen)`` of the hostile stand-in dashboard on 127.0.0.1."""
    sock, port = bind_unused_port()
    seen: list[str] = []
    app = web.Application(
        [
            (r"/[^/]+/[^/]+/ws", StandInSocket),
            (r"/[^/]+/[^/]+/(.*)", StandInPage, {"seen": seen}),
        ]
    )
    server = HTTPServer(app)

    async def start() -> None:
        server.add_sockets([sock])

    jp_asyncio_loop.run_until_complete(start())
    yield port, seen
    server.stop()


@pytest.fixture
def dw_config(stand_in) -> dict[str, Any]:
    return {"ray_dashboard_url": TEMPLATE, "ray_dashboard_port": stand_in[0]}


@pytest.fixture
def raycluster(kube: client.ApiClient, namespace: str) -> str:
    create_suspended_raycluster(kube, namespace, CLUSTER)
    return CLUSTER


# Errors Chromium logs for the attacks themselves (blocked by the browser, refused by the
# server); anything else on the console fails the test.
EXPECTED_ERRORS = [
    re.compile(p)
    for p in (
        r"has been blocked by CORS policy",
        r"Failed to load resource: the server responded with a status of (403|404|405|502)",
        r"Failed to load resource: net::ERR_FAILED",
        r"Unsafe attempt to initiate navigation",
        r"WebSocket connection to '.*dw/api/events' failed",
        r"Blocked a frame with origin \"null\" from accessing a cross-origin frame",
        r"sandboxed and lacks the 'allow-same-origin' flag",
        r"The document is sandboxed",
        r"ServiceWorker",
        r"Blocked opening .* in a new window because the request was made in a sandboxed frame",
        # The form's answer, a Jupyter page, refuses to be framed by the sandboxed page.
        r"violates the following Content Security Policy directive: \"frame-ancestors 'self'\"",
    )
]


def kernel_ids(jp_serverapp) -> list[str]:
    return list(jp_serverapp.kernel_manager.list_kernel_ids())


async def open_as_user(browser: Any, base: str, token: str, console: Console) -> tuple[Any, Any]:
    """A browser context logged in to Jupyter (login cookie and ``_xsrf``, as after opening
    JupyterLab with the token), and a page of Jupyter's origin."""
    context = await browser.new_context()
    watch(context, console)
    page = await context.new_page()
    await page.goto(f"{base}api/status?token={token}")
    await page.goto(f"{base}login")  # sets _xsrf, as every Jupyter page does
    cookies = {c["name"]: c["value"] for c in await context.cookies()}
    assert "_xsrf" in cookies and any(k.startswith("username-") for k in cookies), cookies
    return context, page


async def run_attacks(frame: Any) -> dict[str, Any]:
    await frame.wait_for_function("window.done === true", timeout=PAGE_TIMEOUT_MS)
    return await frame.evaluate("window.report")


def assert_dashboard_worked(report: dict[str, Any]) -> None:
    assert report["own_fetch"] == {
        "ok": True,
        "value": {"method": "GET", "path": "api/data", "body": None},
    }, report["own_fetch"]
    assert report["own_post"]["value"]["body"] == {"job": 1}, report["own_post"]
    assert report["own_websocket"] == {
        "ok": True,
        "value": {"opened": True, "got": ["hello from the dashboard", "echo: ping"]},
    }, report["own_websocket"]


def assert_nothing_reached_jupyter(report: dict[str, Any], secrets: list[str]) -> None:
    text = json.dumps(report)
    for secret in secrets:
        assert secret not in text, "a Jupyter secret reached the page"
    assert report["origin"]["value"] == "null"  # an opaque origin
    assert report["cookie"]["value"] == ""  # the shim's empty cookie jar
    assert not report["cookie_native"]["ok"]  # the real one throws SecurityError
    for name in (
        "list_contents",
        "read_lab_page",
        "start_kernel",
        "write_file",
        "delete_cluster",
        "xhr_with_credentials",
        "kernels_via_proxy_entry",
    ):
        # Readable answers would mean CORS let the page in; only refusals may come back.
        result = report[name]
        assert not result["ok"] or result["value"]["status"] in (403, 404, 405), (name, result)
    for name in ("start_kernel_no_cors", "new_file_no_cors", "create_cluster_no_cors"):
        result = report[name]
        assert not result["ok"] or result["value"]["type"] == "opaque", (name, result)
    assert report["events_socket"]["value"]["opened"] is False, report["events_socket"]
    for name in ("service_worker", "service_worker_root"):
        assert not report[name]["ok"], (name, report[name])
    for name in ("redirect_evil", "redirect_escape"):
        result = report[name]["value"]
        assert (result["type"], result["status"]) == ("cors", 502), (name, result)
        assert "dashboard_redirect_refused" in result["body"]


def files(jp_serverapp) -> list[str]:
    return sorted(str(p) for p in Path(jp_serverapp.root_dir).rglob("*"))


async def assert_server_untouched(
    jp_serverapp, kube, namespace: str, kernels: list[str], before: list[str]
) -> None:
    assert kernel_ids(jp_serverapp) == kernels, "a kernel was started"
    assert files(jp_serverapp) == before, "a file was written"
    custom = client.CustomObjectsApi(kube)
    listing = custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")
    assert [c["metadata"]["name"] for c in listing["items"]] == [CLUSTER], "clusters changed"


async def assert_no_service_worker(context: Any, jupyter_page: Any) -> None:
    assert context.service_workers == []
    registrations = await jupyter_page.evaluate(
        "navigator.serviceWorker.getRegistrations().then((r) => r.length)"
    )
    assert registrations == 0
    planted = await jupyter_page.evaluate("localStorage.getItem('dw-planted')")
    assert planted is None, "the page wrote to Jupyter's localStorage"


@pytest.mark.parametrize("mode", ["framed", "tab"])
async def test_a_hostile_dashboard_cannot_act_as_the_user(
    mode,
    raycluster,
    stand_in,
    identity,
    jp_serverapp,
    jp_base_url,
    http_server_client,
    kube,
    namespace,
):
    _, seen = stand_in
    base = f"http://127.0.0.1:{http_server_client.get_http_port()}{jp_base_url}"
    token = jp_serverapp.identity_provider.token
    kernels = kernel_ids(jp_serverapp)
    before = files(jp_serverapp)
    console = Console()

    with server_log(jp_serverapp.log) as log:
        async with chromium() as browser:
            context, jupyter_page = await open_as_user(browser, base, token, console)
            secrets = [c["value"] for c in await context.cookies()] + [token]
            if mode == "framed":
                # A Jupyter page framing the dashboard, as a JupyterLab tab would.
                await jupyter_page.evaluate(
                    """(src) => { const f = document.createElement('iframe');
                       f.src = src; f.id = 'dashboard'; document.body.appendChild(f); }""",
                    f"{base}dw/ray/{CLUSTER}/",
                )
                handle = await jupyter_page.wait_for_selector("#dashboard")
                frame = await handle.content_frame()
                await frame.wait_for_load_state()
                top_url = jupyter_page.url
                report = await run_attacks(frame)
                assert jupyter_page.url == top_url, "the dashboard navigated Jupyter's page"
                assert not report["read_parent"]["ok"]
            else:
                page = await context.new_page()
                await page.goto(f"{base}dw/ray/{CLUSTER}/")
                report = await run_attacks(page)
                frame = page
            assert "/~cap/" in frame.url  # the page runs on its capability path
            capability = frame.url.split("/~cap/")[1].split("/")[0]
            assert_dashboard_worked(report)
            assert_nothing_reached_jupyter(report, secrets)
            await assert_no_service_worker(context, jupyter_page)
            await context.close()

    await assert_server_untouched(jp_serverapp, kube, namespace, kernels, before)
    assert not [u for u in console.requests if "evil.example" in u], console.requests
    # The dashboard saw its own page and API calls.
    assert "GET " in seen[0] and "POST api/data" in seen
    assert console.unexpected(EXPECTED_ERRORS) == [], console.errors
    # The browser sent no Referer (it would hold the capability), and nothing secret was
    # logged: the requests' capability is masked, tokens are scrubbed.
    text = "\n".join(log)
    assert "[capability]" in text and "referer=None" in text
    for secret in (token, identity.token, capability, *secrets):
        assert secret not in text, "a secret is in the server log"
