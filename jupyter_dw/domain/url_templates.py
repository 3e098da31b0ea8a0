"""URL templates for a Ray head's addresses: their rules, apart from the addresses they make.
So configuration can check a template without importing the cluster models. Pure
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import string
from urllib.parse import urlsplit

TEMPLATE_FIELDS = frozenset({"name", "namespace", "port"})
WORKER_TEMPLATE_FIELDS = TEMPLATE_FIELDS | {"worker"}
"""A MultiKueue worker's dashboards: ``{worker}`` is the worker cluster's name."""
DEFAULT_TEMPLATE = ""
"""No template: use what KubeRay reports."""
HTTP_SCHEMES = ("http", "https")
CLIENT_SCHEMES = ("ray",)


def validate_url_template(
    template: str,
    schemes: tuple[str, ...] = HTTP_SCHEMES,
    known: frozenset[str] = TEMPLATE_FIELDS,
) -> str:
    """``template`` when it is empty (use what KubeRay reports) or a URL of one of ``schemes``
    built only from the placeholders ``known`` (``{name}``, ``{namespace}`` and ``{port}``;
    with :data:`WORKER_TEMPLATE_FIELDS` also ``{worker}``, which it must then contain); else
    ``ValueError`` saying what is wrong."""
    if template == DEFAULT_TEMPLATE:
        return template
    try:
        parsed = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(template)]
    except ValueError as err:  # unbalanced braces
        raise ValueError(f"{template!r} is not a valid template: {err}") from err
    fields = [f for f, _, _ in parsed if f is not None]
    unknown = sorted({f for f in fields if f not in known})
    if unknown:
        names = ", ".join(f"{{{f}}}" for f in sorted(known))
        raise ValueError(
            f"{template!r} uses unknown placeholder(s) {', '.join(repr(f) for f in unknown)}; "
            f"only {names} are known"
        )
    if any(spec or conv for _, spec, conv in parsed):
        raise ValueError(f"{template!r}: placeholders take no format spec or conversion")
    if "name" not in fields:
        raise ValueError(f"{template!r} must contain {{name}} (the RayCluster's name)")
    if "worker" in known and "worker" not in fields:
        raise ValueError(f"{template!r} must contain {{worker}} (the worker cluster's name)")
    sample = urlsplit(
        template.format(name="example", namespace="default", port=1, worker="worker-1")
    )
    if sample.scheme not in schemes or not sample.hostname:
        wanted = " or ".join(f"{s}://" for s in schemes)
        raise ValueError(f"{template!r} must be a {wanted} URL with a host")
    if sample.query or sample.fragment:
        raise ValueError(f"{template!r} must not have a query string or fragment")
    return template
