"""The shape of a REST scale, stop or resume request is checked in the core, before anything
is read or changed (the handlers only decode the JSON)."""

from __future__ import annotations

import pytest

from jupyter_dw.core.errors import InvalidRequest
from jupyter_dw.core.scaling import ScaleRequest, scale_request
from jupyter_dw.core.stopping import check_no_fields


def test_a_scale_request_is_workers_and_dry_run() -> None:
    assert scale_request({"workers": 3}) == ScaleRequest(3, False)
    assert scale_request({"workers": None, "dry_run": True}) == ScaleRequest(None, True)


@pytest.mark.parametrize(
    "body, field",
    [
        (None, "workers"),
        ([3], "workers"),
        ({}, "workers"),
        ({"workers": "3"}, "workers"),  # JSON has numbers: a string is the client's mistake
        ({"workers": 3, "size": 1}, "request"),
        ({"workers": 3, "dry_run": "yes"}, "request"),
    ],
)
def test_a_malformed_scale_request_names_its_field(body: object, field: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        scale_request(body)
    assert (refused.value.status, refused.value.code) == (400, "invalid_request")
    assert field in refused.value.errors


@pytest.mark.parametrize("body", [None, {}])
def test_a_stop_takes_no_fields(body: object) -> None:
    check_no_fields(body, "stop")


@pytest.mark.parametrize("body", [{"reason": "x"}, [1], "x"])
def test_a_stop_with_fields_is_refused(body: object) -> None:
    with pytest.raises(InvalidRequest, match="Invalid stop request") as refused:
        check_no_fields(body, "stop")
    assert "request" in refused.value.errors
