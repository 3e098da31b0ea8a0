"""Validate what the server answers against ``jupyter_dw/openapi.yaml``.

``check_response(method, path, status, body)`` finds the operation of a ``dw/api/`` path and the
schema of that status (a status the operation does not list fails: openapi.yaml has no
``default`` answers) and validates the JSON body with
``jsonschema`` (OpenAPI 3.1 schemas are JSON Schema 2020-12); ``check_event(message)`` does the
same for one ``events`` socket message (``EventMessage``). Both raise ``AssertionError`` with
the schema's complaint, so a test fails as soon as the server and the description disagree.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

import jupyter_dw

OPENAPI_PATH = Path(jupyter_dw.__file__).parent / "openapi.yaml"
_URI = "urn:jupyter-dw:openapi"


@functools.cache
def openapi() -> dict[str, Any]:
    """The parsed description."""
    return yaml.safe_load(OPENAPI_PATH.read_text())


@functools.cache
def _registry() -> Registry:
    return Registry().with_resource(
        _URI, Resource.from_contents(openapi(), default_specification=DRAFT202012)
    )


@functools.cache
def _routes() -> list[tuple[re.Pattern[str], str]]:
    """``(regex, template)`` for each path; literal paths first (``clusters/fit`` before
    ``clusters/{name}``)."""
    templates = sorted(openapi()["paths"], key=lambda t: ("{" in t, t))
    return [
        (re.compile("^" + re.sub(r"\\\{[^/]+\\\}", "[^/]+", re.escape(t)) + "$"), t)
        for t in templates
    ]


def _pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def _validate(pointer: str, instance: Any, what: str) -> None:
    validator = jsonschema.Draft202012Validator(
        {"$ref": f"{_URI}#/{pointer}"}, registry=_registry()
    )
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        details = "\n".join(
            f"  at {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}"
            for e in errors[:5]
        )
        shown = json.dumps(instance)[:1500]
        raise AssertionError(f"{what} does not match openapi.yaml:\n{details}\nbody: {shown}")


def api_route(path: str, method: str = "get") -> str | None:
    """The openapi path template for a request path below ``dw/api`` with an operation for
    ``method`` (``/clusters/x`` → ``/clusters/{name}``; ``GET clusters/fit`` is the cluster
    named ``fit``), None when none matches."""
    path = "/" + path.strip("/")
    for pattern, template in _routes():
        if pattern.match(path) and method.lower() in openapi()["paths"][template]:
            return template
    return None


def check_response(method: str, path: str, status: int, body: bytes | str) -> None:
    """Validate one REST answer. ``path`` is below ``dw/api`` (``clusters/fit``)."""
    template = api_route(path, method)
    what = f"{method} dw/api/{path.strip('/')} → {status}"
    assert template is not None, f"{what}: no such path and method in openapi.yaml"
    operation = openapi()["paths"][template].get(method.lower())
    assert operation is not None, f"{what}: method not described in openapi.yaml"
    responses = operation["responses"]
    key = str(status)
    # No `default`: each operation lists every status it answers (the rule atop openapi.yaml).
    assert "default" not in responses, f"{template}: a `default` answer hides unlisted statuses"
    assert key in responses, f"{what}: status not listed for the operation in openapi.yaml"
    try:
        instance = json.loads(body or b"null")
    except ValueError as err:
        raise AssertionError(f"{what}: the body is not JSON: {body[:200]!r}") from err
    pointer = _pointer("paths", template, method.lower(), "responses", key)
    response = operation["responses"][key]
    if "$ref" in response:
        pointer = response["$ref"].removeprefix("#/")
    _validate(f"{pointer}/content/{_pointer('application/json')}/schema", instance, what)


def check_event(message: Any) -> None:
    """Validate one ``events`` socket message (already decoded)."""
    kind = message.get("type") if isinstance(message, dict) else None
    _validate("components/schemas/EventMessage", message, f"events message {kind!r}")
