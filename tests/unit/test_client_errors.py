"""How API server refusals are told apart: a missing permission (RBAC 403) is ``forbidden``
naming it; admission webhooks, policies and quota (also 403) and schema validation (422) are
``rejected`` (400), since no permission would help. Bodies are the API server's own words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from jupyter_dw.k8s.client import translate_api_exception
from jupyter_dw.k8s.errors import KubeForbidden, KubeRejected


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
