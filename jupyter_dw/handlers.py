"""REST handlers under ``{base_url}dw/api/``: thin wrappers around :class:`KubeSession`.

Each handler authenticates (``@web.authenticated``) and authorizes (``@authorized`` on the
``jupyter_dw`` resource) through jupyter_server, runs the blocking session call on the
extension's thread pool, and maps :class:`KubeError` to JSON with the error's HTTP status.

Routes:

- ``GET version`` → ``{"version": "0.1.0"}``.
- ``GET context`` → ``{"namespace", "namespace_source", "api_server", "credentials",
  "identity": {"username", "groups", "kind", "service_account"}, "kueue_api",
  "kueue": {"installed", "api_version", "served_versions", "cohorts", ...},
  "kuberay": {"installed", "api_version"}, "permissions": [{"permission", "verb", "group",
  "resource", "subresource", "scope", "purpose", "allowed", "reason"}], "caches"}``.
- ``GET queues`` → ``{"namespace", "kueue_api", "quota_visible", "cohorts_visible",
  "queues": [{"name", "cluster_queue", "default", "default_convention", "active", "pending",
  "reserving", "admitted", "quota_visible", "hint", "resources": [{"flavor", "resource",
  "nominal", "borrowing_limit", "lending_limit", "reserved", "used", "borrowed", "headroom",
  "max_obtainable", "queue_reserved", "queue_used"}]}]}``. Quantities are Kubernetes quantity
  strings. ``null`` means: for ``borrowing_limit``, unlimited borrowing; for
  ``lending_limit``, all unused nominal quota may be lent; with ``quota_visible`` false,
  unknown (``nominal``, limits, ``borrowed``, ``headroom``, ``max_obtainable`` are hidden and
  ``reserved``/``used`` are this LocalQueue's own numbers).

Errors: ``{"error", "reason", "hint", "code"}`` (403s also ``"denied"``:
``"<verb> <resource>.<group>"``). 403 Kubernetes denied a needed permission; 401 the
credentials were rejected; 503 Kueue/KubeRay not installed (``code`` ``kueue_not_installed``
/ ``kuberay_not_installed``), API server unreachable (``unreachable``), no credentials
(``no_credentials``) or still starting (``not_ready``); 502 another API server failure.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import Executor
from http.client import responses
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import url_path_join
from tornado import web

from ._version import __version__
from .k8s.errors import KubeError
from .k8s.session import KubeSession

AUTH_RESOURCE = "jupyter_dw"
"""The resource name a jupyter_server Authorizer sees for every jupyter_dw endpoint."""
API_PREFIX = "dw/api"
SESSION_SETTING = "jupyter_dw_session"
EXECUTOR_SETTING = "jupyter_dw_executor"


class DWHandler(ExtensionHandlerMixin, APIHandler):
    """Base class: JSON errors in the ``{"error", "reason", "hint"}`` shape."""

    auth_resource = AUTH_RESOURCE

    @property
    def session(self) -> KubeSession:
        """The extension's shared session."""
        return self.settings[SESSION_SETTING]  # type: ignore[no-any-return]

    async def call(self, func: Callable[[], dict[str, Any]]) -> None:
        """Run blocking ``func`` off the IO loop and write its JSON, or the KubeError."""
        executor: Executor | None = self.settings.get(EXECUTOR_SETTING)
        try:
            result = await asyncio.get_running_loop().run_in_executor(executor, func)
        except KubeError as err:
            self.set_status(err.status)
            self.finish(err.to_json())
            return
        self.finish(result)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Errors raised outside :meth:`call` (auth, unexpected bugs) in the same shape."""
        self.set_header("Content-Type", "application/json")
        reason = responses.get(status_code, "Unknown HTTP Error")
        error = reason
        exc_info = kwargs.get("exc_info")
        if exc_info and isinstance(exc_info[1], web.HTTPError):
            error = exc_info[1].log_message or reason
        elif exc_info:
            error = "Unhandled error in jupyter_dw (see the server log)"
        self.finish(json.dumps({"error": error, "reason": reason, "hint": None}))


class VersionHandler(DWHandler):
    """``GET version``: the package version, for the frontend's handshake."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """``{"version": "<package version>"}``."""
        self.finish({"version": __version__})


class ContextHandler(DWHandler):
    """``GET context``: namespace, identity, installed APIs and permissions."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """See :meth:`KubeSession.context`."""
        await self.call(self.session.context)


class QueuesHandler(DWHandler):
    """``GET queues``: the namespace's LocalQueues with quota and headroom."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """See :meth:`KubeSession.queues`."""
        await self.call(self.session.queues)


def route_table(prefix: str = API_PREFIX) -> list[tuple[str, type[DWHandler]]]:
    """``(pattern, handler)`` pairs; ExtensionApp prepends ``base_url``."""
    return [
        (url_path_join(prefix, "version"), VersionHandler),
        (url_path_join(prefix, "context"), ContextHandler),
        (url_path_join(prefix, "queues"), QueuesHandler),
    ]
