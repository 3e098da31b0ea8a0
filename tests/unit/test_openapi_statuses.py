"""The statuses ``jupyter_dw/openapi.yaml`` lists per operation (the rule in its header), and
the response check that holds the server to them (``tests/openapi_check.py``)."""

from __future__ import annotations

import json

import pytest

from jupyter_dw.k8s.errors import (
    InvalidRequest,
    KubeConflict,
    KubeForbidden,
    KubeNotFound,
    KubeTimeout,
    KubeUnauthorized,
    KubeUnreachable,
)
from tests.openapi_check import check_response, openapi

METHODS = ("get", "post", "put", "patch", "delete")
OPERATIONS = [
    (method, path, operation)
    for path, item in openapi()["paths"].items()
    for method, operation in item.items()
    if method in METHODS
]


@pytest.mark.parametrize(
    "method, path, operation", OPERATIONS, ids=[f"{m.upper()} {p}" for m, p, _ in OPERATIONS]
)
def test_each_operation_lists_its_statuses(method, path, operation):
    statuses = list(operation["responses"])
    assert "default" not in statuses, "a default answer lets any status through"
    assert all(s.isdigit() and len(s) == 3 for s in statuses), statuses  # no 4XX ranges
    assert statuses == sorted(statuses), "in numeric order (clean merges)"
    assert {"403"} <= set(statuses), "jupyter_server's refusals"
    if path != "/events":  # a WebSocket: jupyter_server's origin check answers 403 there
        assert "404" in statuses, "jupyter_server's answer to another origin"
    if path not in ("/version", "/events"):  # answered by the core, from Kubernetes
        assert {"401", "502", "503", "504"} <= set(statuses), statuses


ERRORS = [
    InvalidRequest("bad"),
    KubeUnauthorized("no"),
    KubeForbidden("no", denied="get secrets"),
    KubeNotFound("gone"),
    KubeConflict("taken"),
    KubeUnreachable("down"),
    KubeTimeout("slow"),
]


def test_an_unlisted_status_fails_the_check():
    check_response("GET", "clusters/x", 404, json.dumps(KubeNotFound("gone").to_json()))
    with pytest.raises(AssertionError, match="status not listed"):
        check_response("GET", "clusters/x", 409, json.dumps(KubeConflict("taken").to_json()))
    with pytest.raises(AssertionError, match="status not listed"):
        check_response("GET", "version", 503, json.dumps(KubeUnreachable("down").to_json()))


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_the_core_errors_of_a_write_are_listed_with_their_body(error):
    """What ``POST clusters`` can raise is listed, each with a body its schema accepts."""
    check_response("POST", "clusters", error.status, json.dumps(error.to_json()))
