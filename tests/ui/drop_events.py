"""A test-only server extension: ``POST {base_url}dw-test/drop-events`` closes every open
``dw/api/events`` socket from the server side (close code 1012, "service restart"), as a
restarting or overloaded server would. Loaded only by the UI tests' Jupyter server."""

from __future__ import annotations

import weakref
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from jupyter_dw.server.events import EventsHandler

_OPEN: weakref.WeakSet[EventsHandler] = weakref.WeakSet()


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "tests.ui.drop_events"}]


class DropEventsHandler(APIHandler):
    @web.authenticated
    def post(self) -> None:
        sockets = [ws for ws in _OPEN if ws.ws_connection is not None]
        for ws in sockets:
            ws.close(1012, "dropped by the test")
        self.finish({"closed": len(sockets)})


def _load_jupyter_server_extension(serverapp: Any) -> None:
    original_open = EventsHandler.open

    def open_and_track(self: EventsHandler, *args: Any, **kwargs: Any) -> None:
        _OPEN.add(self)
        original_open(self, *args, **kwargs)

    EventsHandler.open = open_and_track  # type: ignore[method-assign]
    base_url = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(
        ".*$", [(url_path_join(base_url, "dw-test", "drop-events"), DropEventsHandler)]
    )
