"""The dashboard proxy's rules for what comes back from a dashboard, without a server: which
response headers pass, and where a redirect may point."""

from __future__ import annotations

import pytest

from jupyter_dw.server.dashboard_proxy import response_header_kept, rewrite_location

BASE = "http://127.0.0.1:9000/team-a/dash"
REQUEST = BASE + "/app/page?x=1"
PREFIX = "/user/me/dw/ray/dash/~cap/TOKEN/"


@pytest.mark.parametrize(
    ("location", "public"),
    [
        ("landing?x=1", PREFIX + "app/landing?x=1"),
        ("./landing", PREFIX + "app/landing"),
        ("../top", PREFIX + "top"),
        ("/team-a/dash/", PREFIX),
        ("/team-a/dash/jobs#list", PREFIX + "jobs#list"),
        (BASE + "/logs?f=a%2Fb", PREFIX + "logs?f=a%2Fb"),
        ("?page=2", PREFIX + "app/page?page=2"),
    ],
)
def test_redirects_within_the_dashboard_go_through_the_capability_path(location, public):
    assert rewrite_location(location, REQUEST, BASE, PREFIX) == public


@pytest.mark.parametrize(
    "location",
    [
        "https://evil.example/",
        "//evil.example/x",
        "http://127.0.0.1:9001/team-a/dash/",  # another port
        "https://127.0.0.1:9000/team-a/dash/",  # another scheme
        "http://user@evil.example/team-a/dash/",
        "/team-a/other/",  # another cluster behind a path-based template
        "/team-a/dashboard/",  # a prefix of the name is not the name
        "../../../../api/kernels",
        "/team-a/dash/%2e%2e/%2E%2E/api/kernels",
        "/team-a/dash/..%2f..%2fapi",
        "/team-a/dash/a\\..\\..\\x",
        "/team-a/dash/.\t./x",
        "/team-a/dash/\n/x",
        "javascript:alert(1)",
        "data:text/html,<script>1</script>",
    ],
)
def test_redirects_out_of_the_dashboard_are_refused(location):
    assert rewrite_location(location, REQUEST, BASE, PREFIX) is None


def test_a_dashboard_at_the_root_of_its_host():
    base = "http://dash-head-svc.team-a.svc:8265"
    assert rewrite_location("/#/jobs", base + "/", base, PREFIX) == PREFIX + "#/jobs"
    assert (
        rewrite_location("http://other-head-svc.team-a.svc:8265/", base + "/", base, PREFIX) is None
    )


@pytest.mark.parametrize(
    "name",
    [
        "Content-Type",
        "content-length",
        "Content-Encoding",
        "Cache-Control",
        "ETag",
        "Last-Modified",
        "Location",
        "Content-Security-Policy",
        "Content-Disposition",
        "X-Content-Type-Options",
    ],
)
def test_content_headers_pass(name):
    assert response_header_kept(name)


@pytest.mark.parametrize(
    "name",
    [
        "Set-Cookie",
        "Service-Worker-Allowed",
        "Access-Control-Allow-Origin",
        "Access-Control-Allow-Credentials",
        "Clear-Site-Data",
        "Strict-Transport-Security",
        "Alt-Svc",
        "Refresh",
        "WWW-Authenticate",
        "NEL",
        "Report-To",
        "Reporting-Endpoints",
        "Referrer-Policy",
        "Cross-Origin-Resource-Policy",
        "Link",
        "X-Accel-Redirect",
        "X-Accel-Buffering",
        "X-Sendfile",
        "X-Lighttpd-Send-File",
        "X-Anything-Else",  # an allow-list: an unknown header is not passed on
        "Server",
    ],
)
def test_headers_that_act_on_the_jupyter_origin_are_dropped(name):
    assert not response_header_kept(name)
