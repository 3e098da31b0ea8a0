"""The documentation's tooling: generated sections (docs/generate.py), the built site's link
check (docs/check_links.py), and the pictures pages show, each made by a browser test."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from jupyter_dw.notebook import magics

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generate = _load("generate")
check_links = _load("check_links")


# -- generated sections --------------------------------------------------------------------


def test_every_generated_section_is_up_to_date() -> None:
    stale = [p for p, (current, wanted) in generate.generated().items() if current != wanted]
    assert not stale, f"out of date: {stale}; run {generate.WRITE}"


def test_check_fails_on_a_stale_page_and_write_fixes_it(tmp_path: Path, capsys) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(DOCS / "reference", docs / "reference")
    page = docs / "reference" / "magics.md"
    page.write_text(page.read_text().replace("Submit a Ray cluster through Kueue.", "Stale."))
    assert generate.main(["--check", "--docs", str(docs)]) == 1
    assert "reference/magics.md: out of date" in capsys.readouterr().out
    assert generate.main(["--write", "--docs", str(docs)]) == 0
    assert generate.main(["--check", "--docs", str(docs)]) == 0
    assert "Submit a Ray cluster through Kueue." in page.read_text()
    page.write_text("# no markers\n")
    assert generate.main(["--check", "--docs", str(docs)]) == 1
    assert "magics:start" in capsys.readouterr().err


def test_the_magics_page_says_what_dw_help_says() -> None:
    page = (DOCS / "reference" / "magics.md").read_text()
    shown: list[str] = []
    assert magics.run("--help", shown.append) is None
    assert magics.run("help", shown.append) is None
    assert shown[0] == shown[1] and shown[0].rstrip() in page
    for command in ("up", "scale", "rayjob", "trainjob", "workloads"):
        one: list[str] = []
        magics.run(f"{command} --help", one.append)
        assert one[0].rstrip() in page, command
        assert f"usage: %dw {command}" in one[0]
    # Each option has its help text, and the kinds' fit/submit options are listed.
    up = magics.command_help("up")
    assert "--worker-cpu C" in up and "CPU per worker" in up
    assert "--mode K8sJobMode|SidecarMode" in magics.command_help("rayjob")
    assert "--runtime R" in magics.command_help("trainjob")


def test_a_bad_magics_line_shows_that_command_s_help() -> None:
    shown: list[str] = []
    magics.run("scale only-a-name", shown.append)
    assert shown[0].startswith("usage: %dw scale ...: the following arguments are required")
    assert "usage: %dw scale [--dry-run] NAME N|auto" in shown[0]
    assert "%dw queues" not in shown[0]  # the command's help, not the overview


def test_help_words_after_the_command_separator_belong_to_the_command() -> None:
    assert magics._help_asked(["job", "c", "--", "python", "-h"]) is None
    assert magics._help_asked(["job", "--help"]) == "job"
    assert magics._help_asked(["--help"]) == ""
    assert magics._help_asked(["help", "up"]) == "up"


# -- the built site's links ----------------------------------------------------------------


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, body in pages.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<html><body>{body}</body></html>")
    return tmp_path


def test_the_link_check_finds_missing_pages_anchors_and_pictures(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "index.html": '<a href="how-to/index.html">how</a> <a href="admin/index.html">a</a>'
            '<a href="https://example.org/">out</a> <a href="#">top</a>',
            "how-to/index.html": '<a href="rayjobs.html#submit">x</a>'
            '<a href="gone.html">gone</a><img src="../img/none.png">',
            "how-to/rayjobs.html": '<h1 id="submit-a-rayjob">x</h1>',
            "admin/index.html": '<a href="permissions.html">p</a>',
            "admin/permissions.html": "<p>rbac</p>",
        },
    )
    problems = check_links.check(site)
    assert problems == [
        "how-to/index.html: rayjobs.html#submit -> no #submit in how-to/rayjobs.html",
        "how-to/index.html: gone.html -> no such file",
        "how-to/index.html: ../img/none.png -> no such file",
    ]


def test_the_link_check_requires_the_newcomer_pages_two_clicks_from_home(tmp_path) -> None:
    site = _site(
        tmp_path,
        {
            "index.html": '<a href="a.html">a</a>',
            "a.html": '<a href="b.html">b</a>',
            "b.html": '<a href="how-to/rayjobs.html">r</a><a href="admin/permissions.html">p</a>',
            "how-to/rayjobs.html": "",
            "admin/permissions.html": "",
        },
    )
    assert [p.split(" (")[0] for p in check_links.check(site)] == [
        "index.html: how-to/rayjobs.html",
        "index.html: admin/permissions.html",
    ]


# -- pictures ------------------------------------------------------------------------------

_PICTURE = re.compile(
    r"!\[[^\]]*\]\(([^)\s]+\.png)\)"  # Markdown
    r"|\{(?:image|figure)\}\s+(\S+\.png)"  # MyST directives
    r'|<img[^>]*\ssrc="([^"]+\.png)"'  # HTML (the README)
)
_MADE = re.compile(r'docs_picture\(\s*\w+,\s*"([^"]+\.png)"\s*\)')


def pictures_shown() -> dict[str, str]:
    """Every picture a docs page or the README shows: file name -> where."""
    shown: dict[str, str] = {}
    for page in [REPO / "README.md", *DOCS.rglob("*.md")]:
        if "_build" in page.parts:
            continue
        for match in _PICTURE.finditer(page.read_text()):
            link = next(g for g in match.groups() if g)
            shown[Path(link).name] = str(page.relative_to(REPO))
    return shown


def pictures_made() -> set[str]:
    """Every picture a browser test writes into docs/img/ (``docs_picture(target, "x.png")``):
    tests/ui's, and those of a test bed of their own (the MultiKueue bed's)."""
    made: set[str] = set()
    beds = (REPO / "tests" / "ui", REPO / "tests" / "integration" / "multikueue")
    for test in (path for bed in beds for path in bed.glob("test_*.py")):
        made |= set(_MADE.findall(test.read_text()))
    return made


def test_every_picture_a_page_shows_is_made_by_a_browser_test() -> None:
    shown, made = pictures_shown(), pictures_made()
    assert {"idle-card.png", "sidebar.png"} <= set(shown), shown  # the scan finds them
    missing = {name: page for name, page in shown.items() if name not in made}
    assert not missing, f"shown but no UI test makes them (docs_picture): {missing}"
    absent = [name for name in shown if not (DOCS / "img" / name).exists()]
    assert not absent, f"run the UI test that makes {absent}"


def test_docs_img_holds_only_pictures_a_test_makes() -> None:
    orphans = {p.name for p in (DOCS / "img").glob("*.png")} - pictures_made()
    assert not orphans, f"docs/img/ pictures no test makes (stale): {sorted(orphans)}"


@pytest.mark.parametrize(
    "text, name",
    [
        ("![a card](../img/idle-card.png){w=230px}", "idle-card.png"),
        ("```{image} img/sidebar.png\n:width: 300px\n```", "sidebar.png"),
        ('<img src="docs/img/sidebar-dark.png" width="400">', "sidebar-dark.png"),
    ],
)
def test_the_picture_scan_reads_every_way_a_page_shows_one(text: str, name: str) -> None:
    match = _PICTURE.search(text)
    assert match and Path(next(g for g in match.groups() if g)).name == name


def test_the_link_check_refuses_scripts_from_another_host(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "index.html": '<script src="https://cdn.example/widgets.js"></script>'
            '<link rel="stylesheet" href="_static/theme.css">'
            '<a href="how-to/rayjobs.html">r</a><a href="admin/permissions.html">p</a>',
            "_static/theme.css": "",
            "how-to/rayjobs.html": "",
            "admin/permissions.html": "",
        },
    )
    assert check_links.check(site) == [
        "index.html: https://cdn.example/widgets.js is loaded from another host"
    ]


def test_the_readme_is_the_front_door() -> None:
    """Short, and every link of it reaches a file of the repository (a docs page)."""
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) < 250
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert {"docs/how-to/rayjobs.md", "docs/admin/permissions.md"} <= set(links)
    missing = [link for link in links if "://" not in link and not (REPO / link).exists()]
    assert not missing, missing
