"""Idempotency keys as every surface sends them with a create: a UUID passes, anything that
could not be an annotation value of ours (or is not text) is refused before any call."""

from __future__ import annotations

import uuid

import pytest

from jupyter_dw.domain.idempotency import IDEMPOTENCY_KEY_FIELD, check_idempotency_key
from jupyter_dw.k8s.errors import InvalidRequest


@pytest.mark.parametrize("key", [str(uuid.uuid4()), uuid.uuid4().hex, "a", "run-1.try:2_x"])
def test_keys_a_surface_sends_are_accepted(key):
    assert check_idempotency_key(key) == key


@pytest.mark.parametrize("key", [None, ""])
def test_no_key_means_none(key):
    assert check_idempotency_key(key) is None


@pytest.mark.parametrize("key", ["has space", "-leading", "x" * 129, "ключ", 42, ["a"]])
def test_malformed_keys_are_refused_naming_the_field(key):
    with pytest.raises(InvalidRequest) as caught:
        check_idempotency_key(key)
    assert caught.value.status == 400
    assert set(caught.value.errors) == {IDEMPOTENCY_KEY_FIELD}
    assert "nothing was created" in (caught.value.hint or "")
