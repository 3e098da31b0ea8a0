"""Headless Chromium for tests: Debian's ``chromium`` driven by Playwright's async API on the
test's own event loop (the Jupyter server under test runs on that loop too).

No browser is ever downloaded: ``playwright`` is installed with
``PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1`` and launches ``/usr/bin/chromium`` (``DW_CHROMIUM``
overrides). Every host name except the loopback addresses resolves to nothing, so a page that
tries to leave the machine cannot, and the test sees the attempt in the requests it records.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

CHROMIUM = os.environ.get("DW_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",  # root in a container: Chromium's own sandbox cannot start
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
    "--disable-gpu",
    "--disable-dev-shm-usage",
]


@dataclass
class Console:
    """Everything a page said: console errors and uncaught exceptions, and every request."""

    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def unexpected(self, allowed: list[re.Pattern[str]]) -> list[str]:
        """The errors no pattern in ``allowed`` explains."""
        return [e for e in self.errors if not any(p.search(e) for p in allowed)]


def _require_chromium() -> str:
    path = shutil.which(CHROMIUM) or (CHROMIUM if os.access(CHROMIUM, os.X_OK) else None)
    if path is None:
        pytest.fail(
            f"No Chromium at {CHROMIUM}: install Debian's (`apt-get install -y "
            "--no-install-recommends chromium`, or `make system-deps`), or set DW_CHROMIUM."
        )
    return path


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A headless Chromium (a Playwright ``Browser``), closed afterwards."""
    from playwright.async_api import async_playwright

    executable = _require_chromium()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


def watch(context: Any, console: Console) -> None:
    """Record console errors, page errors and requests of every page of ``context``."""

    def on_page(page: Any) -> None:
        page.on(
            "console",
            lambda msg: (
                console.errors.append(f"console: {msg.text}") if msg.type == "error" else None
            ),
        )
        page.on("pageerror", lambda err: console.errors.append(f"pageerror: {err}"))

    context.on("page", on_page)
    context.on("request", lambda request: console.requests.append(request.url))
