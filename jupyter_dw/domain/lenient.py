"""Lenient readers of API objects: a controller writes status at any moment and may leave any
part out, so every read has a default and nothing here raises on a malformed object. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeGuard


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def text(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def integer(value: Any) -> int | None:
    """``value`` as an int (an int, or a string of digits; never a bool), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def conditions(obj: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """``status.conditions`` by type (the last one wins if a type repeats)."""
    raw = mapping(mapping(obj).get("status")).get("conditions")
    if not isinstance(raw, list):
        return {}
    return {c["type"]: c for c in raw if isinstance(c, Mapping) and isinstance(c.get("type"), str)}


def is_true(condition: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    return condition is not None and condition.get("status") == "True"


def words(condition: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """A condition's ``(reason, message)``."""
    if condition is None:
        return None, None
    return text(condition.get("reason")), text(condition.get("message"))


def timestamp(value: Any) -> datetime | None:
    """An RFC 3339 time as Kubernetes writes it (``2026-11-26T22:14:47Z``), else None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
