"""The REST API and events reference, rendered as Markdown from ``jupyter_dw/openapi.yaml``.

One section per operation (its summary, description, parameters, request body and every
status it answers) and one per schema (its description and fields), each schema with an
anchor the others link to. ``docs/generate.py`` writes them into ``reference/rest-api.md``
and ``reference/events.md``; nothing is fetched (no Redoc bundle from a CDN).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

OPENAPI = Path(__file__).resolve().parents[1] / "jupyter_dw" / "openapi.yaml"
METHODS = ("get", "post", "put", "patch", "delete")


def load(path: Path = OPENAPI) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def _anchor(name: str) -> str:
    return f"schema-{name.lower()}"


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def type_of(schema: dict[str, Any] | None) -> str:
    """A short type in Markdown: ``string``, ``[Cluster](#schema-cluster)``, ``list of ...``."""
    if not schema:
        return "any"
    if "$ref" in schema:
        name = _ref_name(schema["$ref"])
        return f"[{name}]({_anchor(name)})"
    for key, word in (("oneOf", " or "), ("anyOf", " or ")):
        if key in schema:
            return word.join(type_of(s) for s in schema[key])
    if "allOf" in schema:
        return " and ".join(type_of(s) for s in schema["allOf"])
    if "const" in schema:
        return f"`{schema['const']!r}`".replace("'", '"')
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" if v is not None else "null" for v in schema["enum"])
    kind = schema.get("type", "any")
    kinds = kind if isinstance(kind, list) else [kind]
    words = []
    for k in kinds:
        if k == "array":
            words.append(f"list of {type_of(schema.get('items'))}")
        elif k == "object" and isinstance(schema.get("additionalProperties"), dict):
            if not schema.get("properties"):
                words.append(f"map of {type_of(schema['additionalProperties'])}")
            else:
                words.append("object")
        else:
            words.append(str(k))
    return " or ".join(words)


def operations(spec: dict[str, Any]) -> str:
    lines: list[str] = []
    for path, item in spec["paths"].items():
        shared = item.get("parameters", [])
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            lines += [f"### `{method.upper()} {path}`", "", _cell(op.get("summary")), ""]
            if op.get("description"):
                lines += [op["description"].rstrip(), ""]
            params = [*shared, *op.get("parameters", [])]
            if params:
                lines += ["| parameter | in | type | |", "| --- | --- | --- | --- |"]
                for p in params:
                    required = " (required)" if p.get("required") else ""
                    lines.append(
                        f"| `{p['name']}` | {p['in']}{required} "
                        f"| {type_of(p.get('schema'))} "
                        f"| {_cell(p.get('description'))} |"
                    )
                lines.append("")
            body = op.get("requestBody")
            if body:
                schema = body.get("content", {}).get("application/json", {}).get("schema")
                lines += [
                    f"Request body: {type_of(schema)}. {_cell(body.get('description'))}",
                    "",
                ]
            lines += ["| status | answer | body |", "| --- | --- | --- |"]
            for status, answer in op["responses"].items():
                if "$ref" in answer:
                    answer = spec["components"]["responses"][_ref_name(answer["$ref"])]
                schema = answer.get("content", {}).get("application/json", {}).get("schema")
                body_type = type_of(schema) if schema else ""
                lines.append(f"| {status} | {_cell(answer.get('description'))} | {body_type} |")
            lines.append("")
    return "\n".join(lines)


def schemas(spec: dict[str, Any], names: list[str] | None = None) -> str:
    """Every schema (or those named) with its fields."""
    lines: list[str] = []
    all_schemas = spec["components"]["schemas"]
    for name in names or list(all_schemas):
        schema = all_schemas[name]
        lines += [f"({_anchor(name)})=", f"### `{name}`", ""]
        if schema.get("description"):
            lines += [schema["description"].rstrip(), ""]
        props = schema.get("properties")
        if not props:
            lines += [f"Type: {type_of(schema)}.", ""]
            continue
        required = set(schema.get("required", []))
        lines += ["| field | type | |", "| --- | --- | --- |"]
        for field, sub in props.items():
            mark = "" if field in required else " (optional)"
            lines.append(f"| `{field}`{mark} | {type_of(sub)} | {_cell(sub.get('description'))} |")
        lines.append("")
    return "\n".join(lines)


def event_names(spec: dict[str, Any]) -> list[str]:
    """The schemas of the events socket's messages (``EventMessage``'s ``oneOf``) and what
    the browser sends."""
    message = spec["components"]["schemas"]["EventMessage"]
    names = [_ref_name(s["$ref"]) for s in message.get("oneOf", []) if "$ref" in s]
    # What a reader sends on the socket: a request whose `type` names the message.
    sent = [
        name
        for name, schema in spec["components"]["schemas"].items()
        if name.endswith("Request") and "const" in schema.get("properties", {}).get("type", {})
    ]
    return ["EventMessage", *names, *sent]
