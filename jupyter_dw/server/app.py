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
from .handlers import CORE_SETTING, EXECUTOR_SETTING, KERNEL_LINK_SETTING, route_table
from .kernel_link import KernelLink, kernel_url

if TYPE_CHECKING:
    from ..core.services import DWCore

# Blocking Kubernetes calls and waits for cache sync run here, never on the IO loop.
EXECUTOR_WORKERS = 8
ON_SERVER_STOP_BUDGET = 20.0
"""Seconds ``on_server_stop`` may take while the server stops (a pod's default grace period
is 30 s: the rest is the server's own shutdown)."""


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
        self.kernel_link = (
            KernelLink(self.serverapp.runtime_dir, self.serverapp.port)
            if self.kernels_through_server and not self.serverapp.sock
            else None
        )
        self.settings.update(
            {
                KERNEL_LINK_SETTING: self.kernel_link,
                CORE_SETTING: self.core_loader,
                EXECUTOR_SETTING: self.executor,
                DASHBOARD_SETTING: self.dashboard_proxy,
                SOCKETS_SETTING: self.event_sockets,
            }
        )
        IOLoop.current().add_callback(self.core_loader.start)
        # Now, so a kernel started at once finds it; again once the server listens (a port
        # taken makes jupyter_server try the next ones: the port is final then).
        self._publish_kernel_link()
        IOLoop.current().add_callback(self._publish_kernel_link)

    def _publish_kernel_link(self) -> None:
        """Tell kernels where this server is."""
        app = self.serverapp
        if self.kernel_link is None or app is None:
            return
        from .._version import __version__

        url = kernel_url(app.ip, app.port, app.base_url, bool(app.certfile))
        try:
            self.kernel_link.publish(url, __version__)
        except OSError as err:  # kernels then connect on their own, as without a server
            self.log.warning("jupyter_dw: kernels will not read through this server: %s", err)

    def _make_core(self) -> DWCore:
        """The core, its session started in the background (on the loader's thread)."""
        # Imported here: the services and their Kubernetes and Kueue models are most of
        # jupyter_dw, kept off the server's start (see :mod:`.core_loader`).
        from ..core.services import DWCore

        assert self.serverapp is not None
        from ..core.idle_rule import IdleRuleRunner

        core = DWCore.from_settings(self, url_path_join(self.serverapp.base_url, PROXY_PREFIX))
        core.session.start_background()
        if core.clusters.idle_rule.on and core.clusters.usage is not None:
            self.idle_runner = IdleRuleRunner(core.clusters, self.usage_interval).start()
            self.log.info(
                "jupyter_dw: idle rule on: %s a cluster of this workbench's owner after %g s "
                "idle%s",
                self.idle_cluster_action,
                self.idle_cluster_timeout,
                " while a workload waits" if self.idle_cluster_only_when_others_wait else "",
            )
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

    async def _apply_on_server_stop(self) -> None:
        """``on_server_stop``: stop or delete the owner's clusters, within
        :data:`ON_SERVER_STOP_BUDGET` seconds, each outcome in the log."""
        from ..core.idle_rule import on_server_stop

        core = self.core_loader.made
        if core is None:
            self.log.warning(
                "jupyter_dw on_server_stop=%s: not connected, nothing done", self.on_server_stop
            )
            return
        loop = asyncio.get_running_loop()
        try:
            done = await asyncio.wait_for(
                loop.run_in_executor(None, on_server_stop, core.clusters, self.on_server_stop),
                ON_SERVER_STOP_BUDGET,
            )
        except asyncio.TimeoutError:
            self.log.error(
                "jupyter_dw on_server_stop=%s: not finished within %g s",
                self.on_server_stop,
                ON_SERVER_STOP_BUDGET,
            )
            return
        for name, outcome in done:
            self.log.info("jupyter_dw on_server_stop=%s: %s %s", self.on_server_stop, name, outcome)
        if not done:
            self.log.info(
                "jupyter_dw on_server_stop=%s: no cluster of this workbench's owner",
                self.on_server_stop,
            )

    async def stop_extension(self) -> None:
        """Close the events sockets, then stop the watches and the worker threads on server
        shutdown."""
        if self.kernel_link is not None:
            self.kernel_link.withdraw()
        for socket in list(self.event_sockets):
            socket.going_away()
        runner = getattr(self, "idle_runner", None)
        if runner is not None:
            await asyncio.get_running_loop().run_in_executor(None, runner.stop)
        if self.on_server_stop != "keep":
            await self._apply_on_server_stop()
        # Joining the watch threads blocks briefly: keep it off the IO loop too.
        await asyncio.get_running_loop().run_in_executor(None, self.core_loader.stop)
        self.executor.shutdown(wait=False, cancel_futures=True)
