"""The jupyter_server extension: configuration, routes, and the shared core's life.

Configure it as ``JupyterDW`` (``c.JupyterDW.namespace = "team-a"`` in a config file,
``JUPYTER_DW_NAMESPACE=team-a`` in the environment, or ``--JupyterDW.namespace=team-a`` on
the command line, which wins). Every setting is :class:`DWSettings`': kernels read them too.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from jupyter_server.extension.application import ExtensionApp
from jupyter_server.utils import url_path_join

from ..core.services import DWCore
from ..core.settings import SECTION, DWSettings, environment_config
from .dashboard_proxy import DASHBOARD_SETTING, PROXY_PREFIX, DashboardProxy, dashboard_routes
from .handlers import CORE_SETTING, EXECUTOR_SETTING, route_table

# Blocking Kubernetes calls and waits for cache sync run here, never on the IO loop.
EXECUTOR_WORKERS = 8


class JupyterDW(ExtensionApp, DWSettings):
    """Kueue queues, quota and Ray clusters for this workbench (server extension)."""

    name = "jupyter_dw"
    description = __doc__

    def initialize_settings(self) -> None:
        """Create the session and start it in the background: start-up never waits on
        Kubernetes; requests that come before it is ready wait or answer 503."""
        self._apply_environment()
        assert self.serverapp is not None  # jupyter_server sets it before initialize_settings
        self.core = DWCore.from_settings(self, url_path_join(self.serverapp.base_url, PROXY_PREFIX))
        self.kube_session = self.core.session
        self.executor = ThreadPoolExecutor(EXECUTOR_WORKERS, thread_name_prefix="jupyter-dw")
        self.dashboard_proxy = (
            DashboardProxy(self.ray_dashboard_url, self.ray_dashboard_port)
            if self.ray_dashboard_proxy
            else None
        )
        self.settings.update(
            {
                CORE_SETTING: self.core,
                EXECUTOR_SETTING: self.executor,
                DASHBOARD_SETTING: self.dashboard_proxy,
            }
        )
        self.kube_session.start_background()

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
        """Stop the watches and the worker threads on server shutdown."""
        # Joining the watch threads blocks briefly: keep it off the IO loop too.
        await asyncio.get_running_loop().run_in_executor(None, self.kube_session.stop)
        self.executor.shutdown(wait=False, cancel_futures=True)
