"""The jupyter_server extension: configuration, routes, and the shared KubeSession's life.

Configure it as ``JupyterDW`` (``c.JupyterDW.namespace = "team-a"`` in a config file, or
``--JupyterDW.namespace=team-a`` on the command line).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jupyter_server.extension.application import ExtensionApp
from traitlets import Float, TraitError, Unicode, validate

from .handlers import EXECUTOR_SETTING, SESSION_SETTING, route_table
from .k8s.auth import DEFAULT_SERVICE_ACCOUNT_DIR
from .k8s.session import KubeSession

# Blocking Kubernetes calls and waits for cache sync run here, never on the IO loop.
EXECUTOR_WORKERS = 8


class JupyterDW(ExtensionApp):
    """Kueue queues, quota and Ray clusters for this workbench (server extension)."""

    name = "jupyter_dw"
    description = __doc__

    namespace = Unicode(
        None,
        allow_none=True,
        config=True,
        help="""Kubernetes namespace whose LocalQueues, Workloads and Ray clusters are shown.

        Default: the namespace of the pod's service account (the ``namespace`` file in
        ``service_account_dir``); outside a pod, the namespace of the kubeconfig context
        (``default`` when the context sets none), as kubectl does.""",
    )

    service_account_dir = Unicode(
        DEFAULT_SERVICE_ACCOUNT_DIR,
        config=True,
        help="""Directory holding the pod's service-account ``token``, ``ca.crt`` and
        ``namespace`` files. Used when it holds a token and KUBERNETES_SERVICE_HOST/PORT are
        set (inside a pod); otherwise the kubeconfig is used. The token is re-read when the
        kubelet rotates it.""",
    )

    kube_context = Unicode(
        None,
        allow_none=True,
        config=True,
        help="""kubeconfig context to use outside a pod (default: the current context).
        The kubeconfig is read from KUBECONFIG, else ~/.kube/config.""",
    )

    request_timeout = Float(
        30.0,
        config=True,
        help="""Seconds to wait for one Kubernetes API call, and the most a request waits for
        start-up and the first sync of the watch caches before answering 503.""",
    )

    @validate("request_timeout")
    def _validate_request_timeout(self, proposal: Any) -> float:
        value = float(proposal["value"])
        if value <= 0:
            raise TraitError(f"JupyterDW.request_timeout must be positive, got {value}")
        return value

    @validate("namespace", "kube_context")
    def _validate_optional_name(self, proposal: Any) -> str | None:
        # An empty string from a config file means "not set", not a namespace named "".
        return proposal["value"] or None

    def initialize_settings(self) -> None:
        """Create the session and start it in the background: start-up never waits on
        Kubernetes; requests that come before it is ready wait or answer 503."""
        self.kube_session = KubeSession(
            namespace=self.namespace,
            service_account_dir=self.service_account_dir,
            kube_context=self.kube_context,
            request_timeout=self.request_timeout,
        )
        self.executor = ThreadPoolExecutor(EXECUTOR_WORKERS, thread_name_prefix="jupyter-dw")
        self.settings.update({SESSION_SETTING: self.kube_session, EXECUTOR_SETTING: self.executor})
        self.kube_session.start_background()

    def initialize_handlers(self) -> None:
        """Register ``{base_url}dw/api/...``."""
        self.handlers.extend(route_table())

    async def stop_extension(self) -> None:
        """Stop the watches and the worker threads on server shutdown."""
        # Joining the watch threads blocks briefly: keep it off the IO loop too.
        await asyncio.get_running_loop().run_in_executor(None, self.kube_session.stop)
        self.executor.shutdown(wait=False, cancel_futures=True)
