"""KubeApi's failure line without an API server: an unreachable address is one WARNING line
with the cause; tokens never reach the log (the current one, any bearer header, any JWT)."""

from __future__ import annotations

import logging
import socket

import pytest
from kubernetes import client

from jupyter_dw.k8s.auth import Credentials
from jupyter_dw.k8s.client import REDACTED, FailedCall, KubeApi
from jupyter_dw.k8s.errors import KubeUnreachable

TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLXBhcnQ"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block ends


def api_at(port: int) -> KubeApi:
    configuration = client.Configuration()
    configuration.host = f"https://127.0.0.1:{port}"
    configuration.api_key = {"authorization": f"Bearer {TOKEN}"}
    configuration.retries = 0
    return KubeApi(Credentials(configuration, "kubeconfig", None, "test"), timeout=5)


def test_unreachable_is_one_warning_line_with_the_cause(caplog):
    seen: list[FailedCall] = []
    api = api_at(closed_port())
    api.on_failure = seen.append
    with (
        caplog.at_level(logging.DEBUG, logger="jupyter_dw.k8s.client"),
        pytest.raises(KubeUnreachable),
    ):
        api.get("/apis/ray.io/v1/namespaces/team-a/rayclusters")
    [record] = [r for r in caplog.records if r.name == "jupyter_dw.k8s.client"]
    assert record.levelno == logging.WARNING
    line = record.getMessage()
    assert line.startswith(
        "Kubernetes call failed: GET /apis/ray.io/v1/namespaces/team-a/rayclusters → no answer ("
    )
    assert "refused" in line.lower()
    assert TOKEN not in caplog.text
    [failure] = seen
    assert (failure.status, failure.group) == (0, "ray.io")


@pytest.mark.parametrize(
    "text",
    [
        f"the token is {TOKEN}",
        f"Authorization: Bearer {TOKEN}",
        "authorization: bearer sha256~opaque-openshift-token",
        "another service account's eyJraWQiOiJ4In0.eyJzdWIiOiJ5In0.c2ln",
    ],
)
def test_redact_removes_tokens(text):
    redacted = api_at(1).redact(text)
    assert REDACTED in redacted
    for secret in (TOKEN, "sha256~opaque-openshift-token", "eyJraWQiOiJ4In0"):
        assert secret not in redacted


def test_redact_keeps_ordinary_messages():
    text = 'rayclusters.ray.io "demo" is forbidden: User "alice" cannot create resource'
    assert api_at(1).redact(text) == text


@pytest.mark.parametrize(
    ("path", "group"),
    [
        ("/api/v1/namespaces/a/pods", ""),
        ("/apis/kueue.x-k8s.io/v1beta2/clusterqueues", "kueue.x-k8s.io"),
        ("/apis", None),
        ("/version", None),
    ],
)
def test_the_group_of_a_failed_call(path, group):
    assert FailedCall("GET", path, 403, "Forbidden", "").group == group
