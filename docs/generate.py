"""Write the documentation's generated reference sections from the code, or check them.

Each generated section of a page sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``
and is made from its one source, never typed:

- ``reference/configuration.md``: every setting, from the traitlets help
  (:mod:`jupyter_dw.server.config_reference`);
- ``reference/permissions.md``: every permission the code checks (``NEEDED_PERMISSIONS``);
- ``reference/magics.md``: ``%dw --help`` and each command's ``--help``, from the magics'
  argument parser (:func:`jupyter_dw.notebook.magics.command_help`);
- ``reference/cli.md``: ``jupyter dw --help`` and each command's, from its argument parser;
- ``reference/lab-settings.md``: the sidebar's settings, from its JSON schema
  (``labextension/schema/plugin.json``);
- ``reference/rest-api.md`` and ``reference/events.md``: every operation and schema, from
  ``jupyter_dw/openapi.yaml`` (:mod:`openapi_pages`).

Usage::

    python docs/generate.py --write   # update the pages in place
    python docs/generate.py --check   # exit 1 when a page differs from the code (make test)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Callable
from contextlib import redirect_stdout, suppress
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS)]

WRITE = "python docs/generate.py --write"


def configuration() -> str:
    from jupyter_dw.server.config_reference import config_reference

    return config_reference(heading="##")


def permissions() -> str:
    from jupyter_dw.server.config_reference import permissions_table

    return permissions_table()


def magics() -> str:
    from jupyter_dw.notebook.magics import _parser, _subcommands, command_help

    parts = [_note("the argument parser of `%dw` (`jupyter_dw/notebook/magics.py`)")]
    parts += ["`%dw --help` (and `%dw help`):", "", _block(command_help()), ""]
    for name in _subcommands(_parser()):
        if name == "help":
            continue
        parts += [f"## `%dw {name}`", "", f"`%dw {name} --help`:", ""]
        parts += [_block(command_help(name)), ""]
    return "\n".join(parts)


def cli() -> str:
    from jupyter_dw import cli as module

    def help_of(argv: list[str]) -> str:
        out = io.StringIO()
        with redirect_stdout(out), suppress(SystemExit):
            module._parser().parse_args([*argv, "--help"])
        return out.getvalue()

    parts = [_note("the argument parser of `jupyter dw` (`jupyter_dw/cli.py`)")]
    parts += ["`jupyter dw --help`:", "", _block(help_of([])), ""]
    for name in ("doctor", "rbac"):
        parts += [f"## `jupyter dw {name}`", "", f"`jupyter dw {name} --help`:", ""]
        parts += [_block(help_of([name])), ""]
    return "\n".join(parts)


def lab_settings() -> str:
    schema = json.loads((ROOT / "labextension" / "schema" / "plugin.json").read_text())
    rows = [
        _note("the sidebar's settings schema (`labextension/schema/plugin.json`)"),
        f"Settings Editor → **{schema['title']}** (plugin `jupyter-dw:plugin`): "
        f"{schema['description']}",
        "",
        "| setting | title | type | default | description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, prop in schema["properties"].items():
        kind = prop["type"]
        if "enum" in prop:
            kind += ": " + " \\| ".join(f"`{v}`" for v in prop["enum"])
        default = json.dumps(prop.get("default"))
        rows.append(
            f"| `{name}` | {prop.get('title', '')} | {kind} | `{default}` "
            f"| {prop.get('description', '')} |"
        )
    shortcuts = schema.get("jupyter.lab.shortcuts", [])
    if shortcuts:
        rows += [
            "",
            "Keyboard shortcuts (Settings → Settings Editor → Keyboard Shortcuts changes them; "
            "`Accel` is Ctrl, or Cmd on macOS):",
            "",
            "| command | keys | where |",
            "| --- | --- | --- |",
        ]
        for shortcut in shortcuts:
            rows.append(
                f"| `{shortcut['command']}` | {' '.join(f'`{k}`' for k in shortcut['keys'])} "
                f"| `{shortcut['selector']}` |"
            )
    return "\n".join(rows) + "\n"


def python_api() -> str:
    import inspect

    import jupyter_dw

    names = [n for n in jupyter_dw.__all__ if not n.startswith("__")]
    public = [getattr(jupyter_dw, n) for n in names]
    groups: dict[str, list[str]] = {"Functions": [], "Classes": [], "Errors": [], "Results": []}
    for name, value in zip(names, public, strict=True):
        if inspect.isclass(value) and value.__name__ != name:  # dw.NotFound = KubeNotFound
            directive = "autoexception" if issubclass(value, BaseException) else "autoclass"
            group = "Errors" if issubclass(value, BaseException) else "Classes"
            groups[group].append(
                f"``dw.{name}`` is:\n\n.. {directive}:: {value.__module__}.{value.__qualname__}"
                "\n   :show-inheritance:"
            )
        elif inspect.isclass(value) and issubclass(value, BaseException):
            groups["Errors"].append(f".. autoexception:: jupyter_dw.{name}\n   :show-inheritance:")
        elif inspect.isclass(value):
            groups["Classes"].append(f".. autoclass:: jupyter_dw.{name}\n   :members:")
        else:
            groups["Functions"].append(f".. autofunction:: jupyter_dw.{name}")
    for cls in _reachable_classes(public):
        path = f"{cls.__module__}.{cls.__qualname__}"
        groups["Results"].append(
            f".. autoclass:: {path}\n   :members:\n   :show-inheritance:"
            if not issubclass(cls, BaseException)
            else f".. autoexception:: {path}\n   :show-inheritance:"
        )
    parts = [
        _note("`jupyter_dw.__all__` and the docstrings (autodoc)"),
        "The classes under *Results* are what the public names return or derive from: you",
        "get them from a call, you do not import them.",
        "",
    ]
    for title, entries in groups.items():
        # autodoc writes reStructuredText: MyST hands it over as such.
        parts += [f"## {title}", "", "```{eval-rst}", "\n\n".join(entries), "```", ""]
    return "\n".join(parts)


def _reachable_classes(public: list[object]) -> list[type]:
    """jupyter_dw's own classes that the public names return (and those return, in turn), and
    the bases of the public errors, that ``jupyter_dw.__all__`` does not name: a user gets
    them from a call, so autodoc documents them and the types a signature shows link there."""
    import inspect
    import typing

    named = {id(v) for v in public}
    seen: dict[int, type] = {}
    todo = list(public)

    def own(t: object) -> list[type]:
        found: list[type] = []
        if inspect.isclass(t) and t.__module__.startswith("jupyter_dw"):
            found.append(t)
        origin = typing.get_origin(t)  # JobList[Any]: JobList
        if inspect.isclass(origin) and origin.__module__.startswith("jupyter_dw"):
            found.append(origin)
        for arg in typing.get_args(t):
            found += own(arg)
        return found

    def returns(member: object) -> object:
        try:
            return typing.get_type_hints(member).get("return")
        except Exception:  # a hint naming what only type checkers import
            return None

    while todo:
        value = todo.pop()
        found: list[type] = []
        if inspect.isclass(value):
            for name, member in vars(value).items():
                if name.startswith("_"):
                    continue
                if isinstance(member, property) and member.fget:
                    found += own(returns(member.fget))
                elif callable(member):
                    found += own(returns(member))
            if issubclass(value, BaseException):
                found += [b for b in value.__mro__[1:] if b.__module__.startswith("jupyter_dw")]
        elif callable(value):
            found += own(returns(value))
        for cls in found:
            if id(cls) not in named and id(cls) not in seen:
                seen[id(cls)] = cls
                todo.append(cls)
    return sorted(seen.values(), key=lambda c: (c.__module__, c.__qualname__))


def rest_api() -> str:
    import openapi_pages as api

    spec = api.load()
    events = set(api.event_names(spec))
    rest = [n for n in spec["components"]["schemas"] if n not in events]
    return "\n".join(
        [
            _note("`jupyter_dw/openapi.yaml`"),
            "## Operations",
            "",
            api.operations(spec),
            "## Schemas",
            "",
            api.schemas(spec, rest),
        ]
    )


def events() -> str:
    import openapi_pages as api

    spec = api.load()
    return _note("`jupyter_dw/openapi.yaml`") + "\n" + api.schemas(spec, api.event_names(spec))


def _note(source: str) -> str:
    return f"<!-- generated from {source} by `{WRITE}`; do not edit -->\n"


def _block(text: str) -> str:
    return f"```text\n{text.rstrip()}\n```"


SECTIONS: dict[str, tuple[str, Callable[[], str]]] = {
    "python-api": ("reference/python-api.md", python_api),
    "config-reference": ("reference/configuration.md", configuration),
    "permissions": ("reference/permissions.md", permissions),
    "magics": ("reference/magics.md", magics),
    "cli": ("reference/cli.md", cli),
    "lab-settings": ("reference/lab-settings.md", lab_settings),
    "rest-api": ("reference/rest-api.md", rest_api),
    "events": ("reference/events.md", events),
}
"""Each generated section: the page it is in and what makes it."""


def replace_between(text: str, name: str, body: str) -> str:
    """``text`` with the lines between ``name``'s markers replaced by ``body``."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start not in text or end not in text:
        raise ValueError(f"no {start} ... {end} markers")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body.rstrip()}\n{end}{tail}"


def generated(docs: Path = DOCS) -> dict[Path, tuple[str, str]]:
    """Every page with a generated section: ``(current text, wanted text)``."""
    os.environ["COLUMNS"] = "80"  # argparse wraps at the terminal's width: not on a page
    os.environ["NO_COLOR"] = "1"
    pages: dict[Path, tuple[str, str]] = {}
    for name, (page, make) in SECTIONS.items():
        path = docs / page
        current = pages[path][0] if path in pages else path.read_text()
        wanted = pages[path][1] if path in pages else current
        try:
            wanted = replace_between(wanted, name, make())
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
        pages[path] = (current, wanted)
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python docs/generate.py", description=__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="update the pages in place")
    action.add_argument("--check", action="store_true", help="exit 1 if a page is stale")
    parser.add_argument("--docs", type=Path, default=DOCS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        pages = generated(args.docs)
    except (OSError, ValueError) as err:
        print(f"generate: {err}", file=sys.stderr)
        return 1
    stale = [path for path, (current, wanted) in pages.items() if current != wanted]
    if args.write:
        for path in stale:
            path.write_text(pages[path][1])
        print(f"generate: {len(stale)} page(s) updated", file=sys.stderr)
        return 0
    for path in stale:
        print(f"{path.relative_to(args.docs.parent)}: out of date; run {WRITE}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
