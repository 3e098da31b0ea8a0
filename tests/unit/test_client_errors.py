"""How API server refusals are told apart: a missing permission (RBAC 403) is ``forbidden``
naming it; admission webhooks, policies and quota (also 403) and schema validation (422) are
``rejected`` (400), since no permission would help; a webhook that cannot be called (Kueue
down) is 503 naming it, the API server's timeout 504. Bodies are the API server's own words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from jupyter_dw.k8s.client import translate_api_exception
from jupyter_dw.k8s.errors import (
    KubeApiError,
    KubeBusy,
    KubeForbidden,
    KubeRejected,
    KubeTimeout,
    WebhookUnavailable,
)


def api_exception(status: int, body: dict[str, Any]) -> client.ApiException:
    err = client.ApiException(status=status, reason="x")
    err.body = json.dumps(body)
    return err


def status(code: int, message: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "Status", "status": "Failure", "message": message, "code": code, **extra}


RBAC = (
    'rayclusters.ray.io is forbidden: User "system:serviceaccount:ns:wb" cannot create '
    'resource "rayclusters" in API group "ray.io" in the namespace "ns"'
)


def test_rbac_denial_is_forbidden_naming_the_permission():
    err = translate_api_exception(api_exception(403, status(403, RBAC, reason="Forbidden")))
    assert isinstance(err, KubeForbidden)
    assert (err.status, err.denied) == (403, "create rayclusters.ray.io")


@pytest.mark.parametrize(
    "message",
    [
        'admission webhook "vraycluster.kb.io" denied the request: spec.workerGroupSpecs[0]'
        '.groupName: Forbidden: "head" is reserved for the head group',
        "rayclusters.ray.io \"x\" is forbidden: ValidatingAdmissionPolicy 'no-big' with binding "
        "'no-big' denied request: too big",
        'rayclusters.ray.io "x" is forbidden: exceeded quota: no-ray, requested: '
        "count/rayclusters.ray.io=1, used: count/rayclusters.ray.io=0, limited: "
        "count/rayclusters.ray.io=0",
    ],
    ids=["webhook", "policy", "quota"],
)
def test_admission_denials_are_rejections(message):
    err = translate_api_exception(api_exception(403, status(403, message, reason="Forbidden")))
    assert isinstance(err, KubeRejected)
    assert (err.status, err.api_status, err.code) == (400, 403, "rejected")
    assert err.reason == message


def test_schema_validation_is_a_rejection_with_fields():
    body = status(
        422,
        'RayCluster.ray.io "UPPER" is invalid: metadata.name: Invalid value: "UPPER"',
        reason="Invalid",
        details={
            "causes": [
                {"reason": "FieldValueInvalid", "message": "bad name", "field": "metadata.name"},
                {"reason": "FieldValueInvalid", "message": "too long", "field": "metadata.name"},
                {"reason": "FieldValueRequired", "message": "required"},
            ]
        },
    )
    err = translate_api_exception(api_exception(422, body))
    assert isinstance(err, KubeRejected)
    assert (err.status, err.api_status) == (400, 422)
    assert err.errors == {"metadata.name": "bad name; too long", "request": "required"}
    assert err.to_json()["errors"] == err.errors


# The API server's words when a webhook with failurePolicy Fail cannot be called.
KUEUE_DOWN = (
    'Internal error occurred: failed calling webhook "mraycluster.kb.io": failed to call '
    'webhook: Post "https://127.0.0.1:20123/mutate-ray-io-v1-raycluster?timeout=10s": dial '
    "tcp 127.0.0.1:20123: connect: connection refused"
)
# In a real cluster Kueue's webhook is a Service; KubeRay's validating webhook has the same
# name as Kueue's, so the host tells them apart.
KUEUE_SERVICE_DOWN = (
    'Internal error occurred: failed calling webhook "vraycluster.kb.io": failed to call '
    'webhook: Post "https://kueue-webhook-service.kueue-system.svc:443/validate-ray-io-v1-'
    'raycluster?timeout=10s": no endpoints available for service "kueue-webhook-service"'
)
KUBERAY_DOWN = (
    'Internal error occurred: failed calling webhook "vraycluster.kb.io": failed to call '
    'webhook: Post "https://kuberay-webhook-service.ray-system.svc:443/validate-ray-io-v1-'
    'raycluster?timeout=10s": context deadline exceeded'
)


@pytest.mark.parametrize(
    ("message", "webhook", "code"),
    [
        (KUEUE_DOWN, "mraycluster.kb.io", "kueue_webhook_unavailable"),
        (KUEUE_SERVICE_DOWN, "vraycluster.kb.io", "kueue_webhook_unavailable"),
        (KUBERAY_DOWN, "vraycluster.kb.io", "webhook_unavailable"),
    ],
    ids=["kueue-by-name", "kueue-by-host", "kuberay"],
)
def test_a_webhook_that_cannot_be_called_is_503_naming_it(message, webhook, code):
    body = status(500, message, reason="InternalError")
    err = translate_api_exception(api_exception(500, body), "/apis/ray.io/v1/x")
    assert isinstance(err, WebhookUnavailable)
    assert (err.status, err.code, err.webhook) == (503, code, webhook)
    assert webhook in err.error and "nothing was" in err.error
    assert err.reason == message
    assert err.to_json()["webhook"] == webhook


def test_a_webhook_denial_is_not_a_webhook_outage():
    message = 'admission webhook "vraycluster.kb.io" denied the request: bad'
    err = translate_api_exception(api_exception(403, status(403, message, reason="Forbidden")))
    assert isinstance(err, KubeRejected)


def test_the_api_servers_own_timeout_is_504():
    body = status(504, "Timeout: request did not complete within 60s", reason="Timeout")
    err = translate_api_exception(api_exception(504, body), "/api/v1/pods")
    assert isinstance(err, KubeTimeout)
    assert (err.status, err.code) == (504, "timeout")


def test_too_many_requests_is_a_busy_api_server_with_its_advice():
    # API Priority and Fairness rejects with 429 and retryAfterSeconds (and Retry-After).
    body = status(
        429, "Too many requests, please try again later.", details={"retryAfterSeconds": 2}
    )
    err = translate_api_exception(api_exception(429, body), "/apis/ray.io/v1/x")
    assert isinstance(err, KubeBusy)
    assert (err.status, err.code, err.retry_after) == (503, "busy", 2)
    assert err.hint is not None and "in 2 s" in err.hint
    bare = api_exception(429, status(429, "Too many requests"))
    bare.headers = {"Retry-After": "5"}
    assert translate_api_exception(bare).retry_after == 5  # type: ignore[attr-defined]
    assert translate_api_exception(api_exception(429, {})).retry_after is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("api_status", "ours"), [(404, 404), (409, 409), (410, 502), (413, 502), (500, 502)]
)
def test_an_answer_outside_the_api_is_a_bad_gateway(api_status, ours):
    """Our clients get only statuses openapi.yaml lists; the API server's is kept for us."""
    err = translate_api_exception(api_exception(api_status, status(api_status, "no")))
    assert isinstance(err, KubeApiError)
    assert (err.status, err.api_status) == (ours, api_status)
