"""One base for every error: ``DWError``, owned by the core's vocabulary and public as
``jupyter_dw.DWError``; only failures talking to Kubernetes are ``KubeError``s."""

from __future__ import annotations

import inspect

import pytest

import jupyter_dw
from jupyter_dw.core import errors
from jupyter_dw.core.settings import refuse_writes
from jupyter_dw.domain.errors import DWError


def test_the_public_base_is_the_core_s_and_every_error_has_it():
    assert jupyter_dw.DWError is errors.DWError is DWError
    classes = [c for c in vars(errors).values() if inspect.isclass(c) and issubclass(c, Exception)]
    assert len(classes) > 20
    assert all(issubclass(c, DWError) for c in classes), classes


def test_a_bad_request_a_ray_failure_and_a_bad_settings_file_are_not_kubernetes_errors():
    not_kube = [
        errors.InvalidRequest,
        errors.InvalidSpec,
        errors.InvalidScale,
        errors.InvalidFilter,
        errors.SettingsUnreadable,
        errors.WrongState,
        errors.RayError,
        errors.RayUnreachable,
        errors.ClusterNotReady,
        errors.JobFailed,
    ]
    assert not [c.__name__ for c in not_kube if issubclass(c, errors.KubeError)]
    with pytest.raises(DWError) as refused:
        refuse_writes(["/etc/jupyter/jupyter_dw_config.py: SyntaxError"])
    assert not isinstance(refused.value, errors.KubeError)
    assert (refused.value.status, refused.value.code) == (500, "settings_unreadable")


def test_kubernetes_refusing_an_object_is_both_a_kubernetes_error_and_a_bad_request():
    refused = errors.KubeRejected(422, "Refused", "spec.x: Invalid", None, {"x": "bad"})
    assert isinstance(refused, errors.KubeError) and isinstance(refused, errors.InvalidRequest)
    assert (refused.status, refused.code, refused.api_status) == (400, "rejected", 422)
    assert refused.to_json() == {
        "error": "Refused",
        "reason": "spec.x: Invalid",
        "hint": None,
        "code": "rejected",
        "errors": {"x": "bad"},
    }


def test_a_refused_action_names_the_state_it_met() -> None:
    refused = errors.WrongState("Not stopped", "it is ready", None, "ready", "not_stopped")
    assert (refused.status, refused.to_json()["code"]) == (409, "not_stopped")
    assert refused.to_json()["state"] == "ready"
