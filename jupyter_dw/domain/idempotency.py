"""Idempotency keys: one per user action, sent again on its retries, so that a create retried
after a lost answer makes nothing twice."""

from __future__ import annotations

import re
import uuid
from typing import Any

from .errors import InvalidRequest

IDEMPOTENCY_KEY_FIELD = "idempotency_key"
"""The ``errors`` key of a malformed idempotency key (REST: the ``Idempotency-Key`` header)."""
_IDEMPOTENCY_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def new_idempotency_key() -> str:
    """A fresh key for one user action (a random UUID): made per click, kept for its retries."""
    return str(uuid.uuid4())


def check_idempotency_key(key: Any) -> str | None:
    """``key`` if it can be an idempotency key (1 to 128 characters: letters, digits and
    ``._:-``, as a UUID has), None if it is None or empty, else :class:`InvalidRequest`."""
    if key is None or key == "":
        return None
    if isinstance(key, str) and _IDEMPOTENCY_KEY.fullmatch(key):
        return key
    problem = "must be 1 to 128 letters, digits or '._:-', starting with a letter or digit"
    raise InvalidRequest(
        "Invalid idempotency key",
        problem,
        "Send a fresh UUID per user action and the same one on its retries; nothing was created.",
        {IDEMPOTENCY_KEY_FIELD: problem},
    )
