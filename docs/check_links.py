"""Check the built documentation site offline: every internal link and picture resolves.

``python docs/check_links.py [docs/_build/html]`` reads every HTML page of the build and
checks each relative ``href``/``src`` (links, pictures, scripts, style sheets): the file must
exist and, for ``page.html#anchor``, the page must have an element with that ``id``. External
links (``https://...``) are not fetched: nothing here uses the network. It also checks that a
newcomer reaches each page of :data:`TWO_CLICKS` in at most two clicks from the home page, and
that no page loads a script or style sheet from another host (a CDN).
Exit status 1 with one line per broken link, else 0.
"""

from __future__ import annotations

import sys
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

TWO_CLICKS = {
    "how-to/rayjobs.html": "submit a RayJob",
    "admin/permissions.html": "which RBAC the workbench needs",
}
"""Pages the home page must reach in at most two clicks, and why a newcomer comes."""

_LINK_ATTRS = {"a": "href", "link": "href", "img": "src", "script": "src", "iframe": "src"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.assets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for key in ("id", "name"):
            if values.get(key):
                self.ids.add(str(values[key]))
        attr = _LINK_ATTRS.get(tag)
        if attr and values.get(attr):
            self.links.append(str(values[attr]))
            if tag == "script" or (tag == "link" and values.get("rel") == "stylesheet"):
                self.assets.append(str(values[attr]))


def _read(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _internal(link: str) -> bool:
    parts = urlsplit(link)
    return not (parts.scheme or parts.netloc or link == "#")


def check(site: Path) -> list[str]:
    """One line per broken internal link or unreachable page; empty when all is well."""
    pages = {
        p.relative_to(site).as_posix(): _read(p)
        for p in sorted(site.rglob("*.html"))
        if not p.relative_to(site).parts[0].startswith("_")  # the theme's templates
    }
    problems: list[str] = []
    graph: dict[str, set[str]] = {name: set() for name in pages}
    for name, page in pages.items():
        here = (site / name).parent
        for link in page.links:
            if not _internal(link):
                continue
            parts = urlsplit(link)
            target = (here / unquote(parts.path)).resolve() if parts.path else site / name
            if not target.is_relative_to(site.resolve()) and parts.path:
                problems.append(f"{name}: {link} leaves the site")
                continue
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{name}: {link} -> no such file")
                continue
            relative = target.resolve().relative_to(site.resolve()).as_posix()
            fragment = unquote(parts.fragment)
            if fragment and relative in pages and fragment not in pages[relative].ids:
                problems.append(f"{name}: {link} -> no #{parts.fragment} in {relative}")
            if relative in pages:
                graph[name].add(relative)
    problems += _remote_scripts(pages)
    problems += _two_clicks(graph)
    return problems


def _remote_scripts(pages: dict[str, _Page]) -> list[str]:
    """The site works offline: no script or style sheet from another host (a CDN)."""
    return [
        f"{name}: {link} is loaded from another host"
        for name, page in pages.items()
        for link in page.assets
        if not _internal(link) and link != "#"
    ]


def _two_clicks(graph: dict[str, set[str]]) -> list[str]:
    depth = {"index.html": 0}
    todo = deque(["index.html"])
    while todo:
        name = todo.popleft()
        if depth[name] == 2:
            continue
        for target in graph.get(name, ()):
            if target not in depth:
                depth[target] = depth[name] + 1
                todo.append(target)
    return [
        f"index.html: {page} ({why}) is not reachable in two clicks"
        for page, why in TWO_CLICKS.items()
        if page not in depth
    ]


def main(argv: list[str]) -> int:
    site = Path(argv[0] if argv else Path(__file__).parent / "_build" / "html")
    if not (site / "index.html").exists():
        print(f"{site}: no index.html; build the site first (make docs)", file=sys.stderr)
        return 1
    problems = check(site)
    for line in problems:
        print(line)
    count = len(list(site.rglob("*.html")))
    print(f"{site}: {count} pages, {len(problems)} broken internal link(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
