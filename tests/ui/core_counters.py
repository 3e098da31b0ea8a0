"""A test-only server extension: ``GET {base_url}dw-test/counters`` answers the extension
core's own counters (how many visibility-API calls its position board made), so a benchmark or
test running the server as a subprocess can read them. Loaded only by the test bed's Jupyter
server (tests/ui/lab.py)."""

from __future__ import annotations

from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from jupyter_dw.server.handlers import CORE_SETTING


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "tests.ui.core_counters"}]


class CountersHandler(APIHandler):
    @web.authenticated
    def get(self) -> None:
        core = self.settings[CORE_SETTING].made  # the page has used it: made
        board = getattr(core, "positions", None)
        self.finish({"visibility_calls": board.calls if board is not None else None})


def _load_jupyter_server_extension(serverapp: Any) -> None:
    base_url = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(
        ".*$", [(url_path_join(base_url, "dw-test", "counters"), CountersHandler)]
    )
