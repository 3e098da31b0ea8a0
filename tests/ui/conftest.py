"""UI tests: headless Chromium (Debian's, driven by Playwright; no browser download) against a
JupyterLab server running as a workbench service account on the local control plane.

Any console error or uncaught exception in the page fails the test. Screenshots and the
server log (token redacted) go to ``tests/ui/artifacts/`` (git-ignored); the pictures the
documentation shows are taken with ``docs_picture`` and also written to ``docs/img/``, so a
picture in the docs is always what the test last saw (``tests/unit/test_docs.py``
fails on a page showing a picture no test makes).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.lab import CHROMIUM, LabServer, StandInDashboard, workbench_lab

ARTIFACTS = Path(__file__).parent / "artifacts"
DOCS_IMG = Path(__file__).parents[2] / "docs" / "img"


@pytest.fixture
def artifacts(request: pytest.FixtureRequest) -> Path:
    path = ARTIFACTS / request.node.name
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def docs_picture(artifacts: Path) -> Callable[[Any, str], None]:
    """``docs_picture(page_or_locator, "name.png")``: a screenshot into the test's artifacts
    and into ``docs/img/``, where the documentation's pages show it."""

    def take(target: Any, name: str) -> None:
        path = artifacts / name
        target.screenshot(path=str(path))
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMG / name)

    return take


@pytest.fixture
def jp_server_cleanup() -> Iterator[None]:
    """pytest-jupyter's autouse cleanup of its in-process server, which these tests do not
    use (JupyterLab runs as a subprocess): nothing to clean, and Playwright owns the loop."""
    yield


@pytest.fixture
def jp_asyncio_loop() -> Iterator[None]:
    """No pytest-jupyter event loop here: Playwright's sync API runs its own."""
    yield


@pytest.fixture
def dashboard() -> Iterator[StandInDashboard]:
    stand_in = StandInDashboard()
    yield stand_in
    stand_in.stop()


@pytest.fixture
def lab(
    workbench, dashboard: StandInDashboard, artifacts: Path, tmp_path: Path
) -> Iterator[LabServer]:
    """JupyterLab as a data scientist's workbench."""
    yield from workbench_lab(workbench, dashboard, artifacts, tmp_path)


@pytest.fixture
def browser() -> Iterator[Any]:
    """Headless Chromium for one test: Playwright's sync API runs an event loop while it
    lives, which must be gone before tests that use pytest-jupyter's loop."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install chromium` (make system-deps)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        yield browser
        browser.close()


@pytest.fixture
def expected_console_errors() -> list[str]:
    """Regular expressions of console errors a test expects (e.g. a 404 it provokes)."""
    return []


@pytest.fixture
def page(
    browser, lab: LabServer, artifacts: Path, expected_console_errors: list[str]
) -> Iterator[Any]:
    """A fresh page (closed before the server stops); console errors and page errors are
    collected and fail the test, unless the test expects them."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda message: (
            problems.append(f"console.{message.type}: {message.text}")
            if message.type == "error"
            else None
        ),
    )
    page.on("pageerror", lambda error: problems.append(f"page error: {error}\n{error.stack}"))
    page.set_default_timeout(30_000)
    yield page
    try:
        page.screenshot(path=str(artifacts / "last.png"))
    finally:
        context.close()
    unexpected = [p for p in problems if not any(re.search(e, p) for e in expected_console_errors)]
    assert not unexpected, "JavaScript errors in the page:\n" + "\n".join(unexpected)
