"""The jupyter_server extension: configuration, routes, and the shared core's life.

Configure it as ``JupyterDW`` (``c.JupyterDW.namespace = "team-a"`` in a config file,
``JUPYTER_DW_NAMESPACE=team-a`` in the environment, or ``--JupyterDW.namespace=team-a`` on
the command line, which wins). The settings kernels share are :class:`DWSettings`'; the
dashboard proxy's are here.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jupyter_server.extension.application import ExtensionApp
from jupyter_server.utils import url_path_join
from traitlets import Int, TraitError, Unicode, validate

from ..core.services import DWCore
from ..core.settings import SECTION, DWSettings, environment_config
from .dashboard_proxy import (
    DASHBOARD_SETTING,
    DEFAULT_DASHBOARD_PORT,
    DEFAULT_DASHBOARD_URL,
    PROXY_PREFIX,
    DashboardProxy,
    dashboard_routes,
    validate_url_template,
)
from .handlers import CORE_SETTING, EXECUTOR_SETTING, route_table

# Blocking Kubernetes calls and waits for cache sync run here, never on the IO loop.
EXECUTOR_WORKERS = 8


class JupyterDW(ExtensionApp, DWSettings):
    """Kueue queues, quota and Ray clusters for this workbench (server extension)."""

    name = "jupyter_dw"
    description = __doc__

    ray_dashboard_url = Unicode(
        DEFAULT_DASHBOARD_URL,
        config=True,
        help="""Where the Ray dashboard of a RayCluster is, as seen from this server: the
        target of the ``{base_url}dw/ray/<name>/`` proxy.

        Empty (the default): what KubeRay reports for the cluster, its head Service
        (``status.head.serviceName``) on its dashboard port (``status.endpoints.dashboard``,
        8265 when absent), as ``http://<service>.<namespace>.svc:<port>``.

        Otherwise a template with the placeholders ``{name}`` (the RayCluster's name,
        required), ``{namespace}`` (the session's namespace) and ``{port}``
        (``ray_dashboard_port``); no other placeholders, format specs, query string or
        fragment. It must give an http:// or https:// URL; the proxied path and query are
        appended to it. Examples: a custom cluster domain,
        ``http://{name}-head-svc.{namespace}.svc.example.internal:{port}``; dashboards behind
        a gateway that routes by path, ``https://ray-gw.example.com/{namespace}/{name}``.
        Requests never go anywhere else: the browser only picks ``<name>``, which must name
        a RayCluster of the namespace.""",
    )

    ray_dashboard_port = Int(
        DEFAULT_DASHBOARD_PORT,
        config=True,
        help="""The ``{port}`` of a ``ray_dashboard_url`` template (8265, the Ray default).
        Unused without a template: the port then comes from the RayCluster's status.""",
    )

    @validate("ray_dashboard_url")
    def _validate_ray_dashboard_url(self, proposal: Any) -> str:
        try:
            return validate_url_template(proposal["value"])
        except ValueError as err:
            raise TraitError(f"JupyterDW.ray_dashboard_url: {err}") from err

    @validate("ray_dashboard_port")
    def _validate_ray_dashboard_port(self, proposal: Any) -> int:
        value = int(proposal["value"])
        if not 0 < value < 65536:
            raise TraitError(f"JupyterDW.ray_dashboard_port must be a TCP port, got {value}")
        return value

    def initialize_settings(self) -> None:
        """Create the session and start it in the background: start-up never waits on
        Kubernetes; requests that come before it is ready wait or answer 503."""
        self._apply_environment()
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
