"""The README's configuration reference, generated from the traitlets help of ``JupyterDW``,
and its permissions table, generated from ``NEEDED_PERMISSIONS``.

Every setting a maintainer can set (:class:`~jupyter_dw.core.settings.DWSettings`' and the
server extension's own) with its type, default, how to set it and its help text, between the
README markers ``<!-- config-reference:start -->`` and ``<!-- config-reference:end -->``; every
permission the code checks between ``<!-- permissions:start -->`` and ``<!-- permissions:end -->``::

    python -m jupyter_dw.server.config_reference            # print the reference
    python -m jupyter_dw.server.config_reference --write    # update README.md in place
    python -m jupyter_dw.server.config_reference --check    # exit 1 if README.md differs

A unit test runs the check, so the README cannot drift from the code.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from traitlets import Bool, Float, Int, List, TraitType, Unicode

from ..core.errors import NEEDED_PERMISSIONS
from ..core.settings import ENV_PREFIX, SECTION, DWSettings
from .app import JupyterDW

START = "<!-- config-reference:start -->"
END = "<!-- config-reference:end -->"
PERMISSIONS_START = "<!-- permissions:start -->"
PERMISSIONS_END = "<!-- permissions:end -->"
README = Path(__file__).resolve().parents[2] / "README.md"
GENERATOR = "python -m jupyter_dw.server.config_reference --write"

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


def config_reference() -> str:
    """The reference as Markdown (without the markers)."""
    lines = [
        f"<!-- generated from the traitlets help text by `{GENERATOR}`; do not edit -->",
        "",
    ]
    for name, trait, from_env in settings():
        kind = _TYPES.get(type(trait), type(trait).__name__)
        if trait.allow_none:
            kind += " or None"
        ways = [f"`c.{SECTION}.{name}`", f"`--{SECTION}.{name}`"]
        if from_env:
            ways.append(f"`{ENV_PREFIX}{name.upper()}`")
        help_text = inspect.cleandoc(trait.help or "").strip()
        lines += [
            f"#### `{name}`",
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


def update(text: str) -> str:
    """``text`` (the README) with both generated parts between their markers replaced."""
    text = _between(text, START, END, config_reference())
    return _between(text, PERMISSIONS_START, PERMISSIONS_END, permissions_table())


def _between(text: str, start: str, end: str, body: str) -> str:
    if start not in text or end not in text:
        raise ValueError(f"the README has no {start} ... {end} markers")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}{end}{tail}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_dw.server.config_reference",
        description="Print the configuration reference, or update/check it in the README.",
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="update the README in place")
    action.add_argument("--check", action="store_true", help="exit 1 if the README differs")
    parser.add_argument("readme", nargs="?", type=Path, default=README, help="README path")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        sys.stdout.write(config_reference())
        return 0
    try:
        current = args.readme.read_text()
        wanted = update(current)
    except (OSError, ValueError) as err:
        print(f"config_reference: {err}", file=sys.stderr)
        return 1
    if args.write:
        args.readme.write_text(wanted)
        return 0
    if current != wanted:
        print(f"{args.readme}: configuration reference out of date; run {GENERATOR}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
