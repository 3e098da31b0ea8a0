"""One clear log line per failed Kubernetes call, from a real API server and a real Kueue:
method, path, status and the API server's or Kueue's own message, and never the token, even
when the API server's message repeats it."""

from __future__ import annotations

import logging

import pytest

from jupyter_dw.k8s.auth import load_credentials
from jupyter_dw.k8s.client import REDACTED, FailedCall, KubeApi
from jupyter_dw.k8s.errors import KubeError, KubeForbidden

pytestmark = pytest.mark.cluster

LOGGER = "jupyter_dw.k8s.client"
VISIBILITY_READER = [
    {
        "apiGroups": ["visibility.kueue.x-k8s.io"],
        "resources": ["localqueues/pendingworkloads"],
        "verbs": ["get"],
    }
]


@pytest.fixture
def reader(workbench):
    return workbench(rules=VISIBILITY_READER)


def failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def test_a_403_is_one_line_with_the_api_servers_words_and_no_token(
    reader, namespace, kueue_api_version, caplog
):
    seen: list[FailedCall] = []
    api = KubeApi(
        load_credentials(reader.service_account_dir, environ=reader.environ),
        on_failure=seen.append,
    )
    path = f"/apis/kueue.x-k8s.io/{kueue_api_version}/namespaces/{namespace}/localqueues"
    with caplog.at_level(logging.INFO, logger=LOGGER), pytest.raises(KubeForbidden):
        api.get(path)

    [record] = failures(caplog)
    assert record.levelno == logging.WARNING
    line = record.getMessage()
    assert line.startswith(f"Kubernetes call failed: GET {path} → 403 Forbidden: ")
    assert f'User "{reader.username}" cannot list resource "localqueues"' in line
    assert reader.token not in caplog.text
    [failure] = seen
    assert (failure.status, failure.group, failure.object_name) == (403, "kueue.x-k8s.io", None)


def test_a_token_in_the_api_servers_message_is_removed(reader, namespace, caplog):
    api = KubeApi(load_credentials(reader.service_account_dir, environ=reader.environ))
    # The API server repeats the object name in its message: here, the token itself.
    with caplog.at_level(logging.INFO, logger=LOGGER), pytest.raises(KubeError) as failed:
        api.get(f"/api/v1/namespaces/{namespace}/pods/{reader.token}")

    [record] = failures(caplog)
    assert reader.token in str(failed.value)  # the API server did echo it
    assert reader.token not in caplog.text
    for part in reader.token.split("."):
        assert part not in caplog.text
    assert REDACTED in record.getMessage()
    assert "403 Forbidden" in record.getMessage()


def test_kueues_own_message_is_logged(reader, namespace, kueue_api_version, caplog):
    # The visibility API is served by the Kueue process (an aggregated API): its answer.
    api = KubeApi(load_credentials(reader.service_account_dir, environ=reader.environ))
    path = (
        f"/apis/visibility.kueue.x-k8s.io/{kueue_api_version}/namespaces/{namespace}"
        "/localqueues/no-such-queue/pendingworkloads"
    )
    with caplog.at_level(logging.INFO, logger=LOGGER), pytest.raises(KubeError) as failed:
        api.get(path)

    [record] = failures(caplog)
    line = record.getMessage()
    assert line.startswith(f"Kubernetes call failed: GET {path} → ")
    assert failed.value.reason and failed.value.reason in line  # Kueue's message, verbatim
    assert "no-such-queue" in line
    assert reader.token not in caplog.text
