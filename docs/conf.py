"""Sphinx configuration of the jupyter_dw documentation (``make docs``).

Built offline: no intersphinx, no CDN script. ``make test`` builds it with ``-n -W
--keep-going`` (every cross-reference resolves, no warning), checks the generated pages
(``docs/generate.py --check``) and the built site's internal links (``docs/check_links.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jupyter_dw import __version__  # noqa: E402

project = "jupyter_dw"
author = "the jupyter_dw authors"
copyright = "the jupyter_dw authors, Apache-2.0"
version = release = __version__

extensions = [
    "myst_nb",  # MyST Markdown pages and notebooks (rendered with their stored outputs)
    "sphinx.ext.autodoc",
    "sphinx_copybutton",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
# README-style relative links between pages (how-to/x.md#anchor) resolve as references.
myst_enable_extensions = ["colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 4
# The quickstart is run by tests/integration/test_quickstart_notebook.py against the local
# control plane, which stores the run with its outputs; the build never executes it.
nb_execution_mode = "off"
# No widget JavaScript from a CDN: the stored run keeps each widget's text instead.
nb_ipywidgets_js: dict[str, dict[str, str]] = {}
nitpicky = True
# No intersphinx (nothing is fetched at build time): the standard library's and the
# dependencies' classes are named in signatures but have no page here.
nitpick_ignore_regex = [
    ("py:class", r"(collections\.abc|typing|asyncio|decimal|ipywidgets|traitlets|anywidget)\..*"),
    # Docstrings of the documented classes name internal modules, classes and helpers (where a
    # behaviour lives, for readers of the source); the public names and every class the
    # public API returns are documented (reference/python-api.md), so those resolve.
    (
        "py:(class|mod|data|func|meth|attr|obj)",
        r"jupyter_dw\.(core|k8s|domain|ray_head|server)\..*",
    ),
    ("py:(class|func|meth|obj)", r"_?[A-Za-z]\w*"),  # a name without its module
]

html_theme = "pydata_sphinx_theme"
html_title = f"jupyter_dw {version}"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": []}

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"


def _typevar_as_text(app, env, node, contnode):  # type: ignore[no-untyped-def]
    """A type variable (``Handle = TypeVar(...)``) in a signature has no page: shown as text,
    while any other reference that does not resolve still fails the build."""
    import importlib
    import typing

    target = node.get("reftarget", "")
    module, _, name = target.rpartition(".")
    if node.get("refdomain") != "py" or not module.startswith("jupyter_dw"):
        return None
    try:
        value = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return contnode if isinstance(value, typing.TypeVar) else None


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("missing-reference", _typevar_as_text)
