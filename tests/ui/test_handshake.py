"""The sidebar without its server extension (installed in another environment, or disabled):
it says so and how to check, instead of showing empty lists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.ui.lab import LabServer


@pytest.fixture
def lab(artifacts: Path, tmp_path: Path) -> Iterator[LabServer]:
    """JupyterLab with the jupyter_dw server extension disabled (no cluster needed)."""
    (tmp_path / "serviceaccount").mkdir()
    server = LabServer(
        service_account_dir=tmp_path / "serviceaccount",
        pod_environ={},
        workdir=tmp_path / "lab",
        log_path=artifacts / "jupyter-server.log",
        server_extension=False,
    )
    server.workdir.mkdir()
    server.start()
    yield server
    server.stop()


def test_missing_server_extension_is_explained(
    page: Page, lab: LabServer, expected_console_errors: list[str]
) -> None:
    # The handshake's GET dw/api/version answers 404: the browser logs the failed load.
    expected_console_errors.append(r"Failed to load resource: .*404 \(Not Found\)")
    assert lab.request("GET", "dw/api/version")[0] == 404
    page.goto(lab.lab_url())
    page.get_by_role("tab", name="Distributed Workloads").click(timeout=60_000)
    sidebar = page.locator("#jp-dw-sidebar")
    alert = sidebar.get_by_role("alert")
    expect(alert).to_contain_text("The jupyter_dw server extension is not running")
    expect(alert).to_contain_text("jupyter server extension list")
    expect(sidebar.get_by_role("heading", name="Queues")).to_have_count(0)
    expect(sidebar.locator("[data-connection]")).to_have_count(0)  # no socket either
