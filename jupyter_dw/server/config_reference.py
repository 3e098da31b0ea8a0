"""The configuration reference and the permissions table, generated for the docs.
From ``JupyterDW``'s traitlets help and ``NEEDED_PERMISSIONS``; ``docs/generate.py`` writes them
into the reference pages.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from traitlets import Bool, Float, Int, List, TraitType, Unicode

from ..core.errors import NEEDED_PERMISSIONS
from ..core.settings import ENV_PREFIX, SECTION, DWSettings
from .app import JupyterDW

GENERATOR = "python docs/generate.py --write"

_TYPES: dict[type[TraitType[Any, Any]], str] = {
    Unicode: "string",
    Int: "integer",
    Float: "number",
    Bool: "boolean",
    List: "list of strings",
}


def settings() -> list[tuple[str, TraitType[Any, Any], bool]]:
    """``(name, trait, from_environment)`` for every setting: DWSettings' (which kernels and
    ``JUPYTER_DW_*`` variables share) first, then the server extension's own."""
    shared = DWSettings.class_own_traits(config=True)
    own = JupyterDW.class_own_traits(config=True)
    return [(n, t, True) for n, t in shared.items()] + [(n, t, False) for n, t in own.items()]


def config_reference(heading: str = "###") -> str:
    """The reference as Markdown, one ``heading`` per setting, in alphabetical order."""
    lines = [
        f"<!-- generated from the traitlets help text by `{GENERATOR}`; do not edit -->",
        "",
    ]
    for name, trait, from_env in sorted(settings(), key=lambda s: s[0]):
        kind = _TYPES.get(type(trait), type(trait).__name__)
        if trait.allow_none:
            kind += " or None"
        ways = [f"`c.{SECTION}.{name}`", f"`--{SECTION}.{name}`"]
        if from_env:
            ways.append(f"`{ENV_PREFIX}{name.upper()}`")
        help_text = inspect.cleandoc(trait.help or "").strip()
        lines += [
            f"{heading} `{name}`",
            "",
            f"{kind}, default `{_default(trait)}`; set with {', '.join(ways)}"
            + ("" if from_env else " (server only)"),
            "",
            help_text,
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def _default(trait: TraitType[Any, Any]) -> str:
    value = trait.default()  # a List keeps its default behind a sentinel until asked
    return repr(value) if isinstance(value, str | list) else str(value)


def permissions_table() -> str:
    """Every permission the code checks, as a Markdown table (verbs of one resource with
    one purpose on one row)."""
    rows: dict[tuple[str, str, bool, bool, str], list[str]] = {}
    for p in NEEDED_PERMISSIONS:
        key = (p.rbac_resource, p.group, p.namespaced, p.required, p.purpose)
        rows.setdefault(key, []).append(p.verb)
    lines = [
        f"<!-- generated from NEEDED_PERMISSIONS by `{GENERATOR}`; do not edit -->",
        "",
        "| verbs | resource | scope | needed | unlocks |",
        "| --- | --- | --- | --- | --- |",
    ]
    for (resource, group, namespaced, required, purpose), verbs in rows.items():
        lines.append(
            f"| {', '.join(verbs)} | `{resource}` ({group or 'core'}) "
            f"| {'namespace' if namespaced else 'cluster'} "
            f"| {'required' if required else 'optional'} | {purpose} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(config_reference())
