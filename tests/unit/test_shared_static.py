"""The browser code the sidebar and the widgets share is written once, in
``labextension/src/shared/``; the build copies it into the package's ``static/shared/``, which
the widgets' ESM joins. A copy that differs from its source is a stale build."""

from __future__ import annotations

from pathlib import Path

from jupyter_dw.notebook.widgets import STATIC

SOURCE = Path(__file__).parents[2] / "labextension" / "src" / "shared"
COPIES = STATIC / "shared"


def test_the_widgets_copies_are_the_shared_sources() -> None:
    sources = {p.name: p.read_bytes() for p in SOURCE.glob("*.js")}
    copies = {p.name: p.read_bytes() for p in COPIES.glob("*.js")}
    assert {"tones.js", "resources.js", "usage_bar.js", "workers_bar.js"} <= set(sources)
    stale = sorted(
        name for name in sources.keys() | copies.keys() if copies.get(name) != sources.get(name)
    )
    assert not stale, (
        f"static/shared/ differs from labextension/src/shared/: {stale}; run make frontend"
    )


def test_no_browser_code_is_kept_in_both_places() -> None:
    """The package's own static files are the widgets' views only: nothing there is also a
    shared source (it would be a second copy to edit)."""
    own = {p.name for p in STATIC.glob("*.js")}
    assert own and not own & {p.name for p in SOURCE.glob("*.js")}


def test_the_sidebar_reaches_into_no_file_of_the_python_package() -> None:
    """The sidebar and its tests import browser code from their own tree, never by a path
    into the wheel's files (``../../jupyter_dw/...``)."""
    labextension = SOURCE.parents[1]
    files = [*labextension.glob("src/**/*.ts*"), *labextension.glob("test/**/*.ts")]
    imports = [
        f"{path.name}: {line}"
        for path in files
        for line in path.read_text().splitlines()
        if " from '" in line
    ]
    assert len(imports) > 50
    assert not [line for line in imports if "jupyter_dw/" in line]
