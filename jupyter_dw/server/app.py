"""The jupyter_server extension: configuration, routes, and the shared core's life.

Configure it as ``JupyterDW`` (``c.JupyterDW.namespace = "team-a"`` in a config file,
``JUPYTER_DW_NAMESPACE=team-a`` in the environment, or ``--JupyterDW.namespace=team-a`` on
the command line, which wins). Every setting is :class:`DWSettings`': kernels read them too.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from jupyter_server.extension.application import ExtensionApp
from jupyter_server.utils import url_path_join
from tornado.ioloop import IOLoop

from ..core.settings import SECTION, DWSettings, environment_config
from .core_loader import CoreLoader
from .dashboard_proxy import DASHBOARD_SETTING, PROXY_PREFIX, DashboardProxy, dashboard_routes
from .events import SOCKETS_SETTING, EventsHandler
from .handlers import CORE_SETTING, EXECUTOR_SETTING, route_table

if TYPE_CHECKING:
    from ..core.services import DWCore

# Blocking Kubernetes calls and waits for cache sync run here, never on the IO loop.
EXECUTOR_WORKERS = 8


class JupyterDW(ExtensionApp, DWSettings):
    """Kueue queues, quota and Ray clusters for this workbench (server extension)."""

    name = "jupyter_dw"
    description = __doc__

    def initialize_settings(self) -> None:
        """Configure, and make the core once the IO loop runs (see :mod:`.core_loader`):
        start-up waits neither on Kubernetes nor on importing the core; requests that come
        before it is ready wait for it, or answer 503 while the session is not ready."""
        self._apply_environment()
        assert self.serverapp is not None  # jupyter_server sets it before initialize_settings
        self.core_loader = CoreLoader(self._make_core)
        self.executor = ThreadPoolExecutor(EXECUTOR_WORKERS, thread_name_prefix="jupyter-dw")
        self.event_sockets: set[EventsHandler] = set()
        self.dashboard_proxy = (
            DashboardProxy(self.ray_dashboard_url, self.ray_dashboard_port)
            if self.ray_dashboard_proxy
            else None
        )
        self.settings.update(
            {
                CORE_SETTING: self.core_loader,
                EXECUTOR_SETTING: self.executor,
                DASHBOARD_SETTING: self.dashboard_proxy,
                SOCKETS_SETTING: self.event_sockets,
            }
        )
        IOLoop.current().add_callback(self.core_loader.start)

    def _make_core(self) -> DWCore:
        """The core, its session started in the background (on the loader's thread)."""
        # Imported here: the services and their Kubernetes and Kueue models are most of
        # jupyter_dw, kept off the server's start (see :mod:`.core_loader`).
        from ..core.services import DWCore

        assert self.serverapp is not None
        core = DWCore.from_settings(self, url_path_join(self.serverapp.base_url, PROXY_PREFIX))
        core.session.start_background()
        return core

    def _apply_environment(self) -> None:
        """``JUPYTER_DW_*`` variables, unless the same setting is on the command line."""
        cli = getattr(self.serverapp, "cli_config", {}).get(SECTION, {})
        for name, value in environment_config().items():
            if name not in cli:
                setattr(self, name, value)

    def initialize_handlers(self) -> None:
        """Register ``{base_url}dw/api/...`` and the Ray dashboard proxy ``dw/ray/...``."""
        self.handlers.extend(route_table())
        self.handlers.extend(dashboard_routes(self.dashboard_proxy))

    async def stop_extension(self) -> None:
        """Close the events sockets, then stop the watches and the worker threads on server
        shutdown."""
        for socket in list(self.event_sockets):
            socket.going_away()
        # Joining the watch threads blocks briefly: keep it off the IO loop too.
        await asyncio.get_running_loop().run_in_executor(None, self.core_loader.stop)
        self.executor.shutdown(wait=False, cancel_futures=True)
