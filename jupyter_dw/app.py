"""The jupyter_server extension: configuration, routes, and the shared KubeSession's life.

Configure it as ``JupyterDW`` (``c.JupyterDW.namespace = "team-a"`` in a config file, or
``--JupyterDW.namespace=team-a`` on the command line).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jupyter_server.extension.application import ExtensionApp
from jupyter_server.utils import url_path_join
from traitlets import Bool, Float, Int, List, TraitError, Unicode, validate

from .clusters import ClusterService
from .dashboard_proxy import (
    DEFAULT_DASHBOARD_PORT,
    DEFAULT_DASHBOARD_URL,
    PROXY_PREFIX,
    dashboard_routes,
    validate_url_template,
)
from .domain.cluster_spec import SpecPolicy
from .domain.quantity import format_quantity
from .handlers import CLUSTERS_SETTING, EXECUTOR_SETTING, SESSION_SETTING, route_table
from .k8s.auth import DEFAULT_SERVICE_ACCOUNT_DIR
from .k8s.session import KubeSession

# Blocking Kubernetes calls and waits for cache sync run here, never on the IO loop.
EXECUTOR_WORKERS = 8

_POLICY = SpecPolicy()  # the domain's defaults, so the traits' defaults cannot drift from them


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

    ray_dashboard_url = Unicode(
        DEFAULT_DASHBOARD_URL,
        config=True,
        help="""Where the Ray dashboard of a RayCluster is, as seen from this server: the
        target of the ``{base_url}dw/ray/<name>/`` proxy.

        A template with the placeholders ``{name}`` (the RayCluster's name, required),
        ``{namespace}`` (the session's namespace) and ``{port}`` (``ray_dashboard_port``);
        no other placeholders, format specs, query string or fragment. It must give an
        http:// or https:// URL; the proxied path and query are appended to it. The default
        is KubeRay's head Service by its cluster DNS name. Other examples: a custom cluster
        domain, ``http://{name}-head-svc.{namespace}.svc.example.internal:{port}``; dashboards
        behind a gateway that routes by path, ``https://ray-gw.example.com/{namespace}/{name}``.
        Requests never go anywhere else: the browser only picks ``<name>``, which must name
        a RayCluster of the namespace.""",
    )

    ray_dashboard_port = Int(
        DEFAULT_DASHBOARD_PORT,
        config=True,
        help="""The ``{port}`` of ``ray_dashboard_url``: the ``dashboard`` port of KubeRay's
        head Service (8265, the Ray default). Change it when the RayClusters' head groups
        set ``dashboard-port`` in ``rayStartParams``.""",
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

    # -- cluster defaults and limits (a SpecPolicy) ------------------------------------------

    default_image = Unicode(
        _POLICY.default_image,
        config=True,
        help="""Container image of a Ray cluster's head and workers when a request names none.
        With ``allowed_images`` set, it must be one of them.""",
    )

    default_workers = Int(
        _POLICY.default_workers,
        config=True,
        help="""Number of workers when a request gives neither ``workers`` nor bounds.""",
    )

    default_head_cpu = Unicode(
        format_quantity(_POLICY.default_head_cpu, binary=False),
        config=True,
        help="""CPUs of the head when a request gives no ``head_cpu`` (a Kubernetes quantity:
        ``"1"``, ``"500m"``).""",
    )

    default_head_memory = Unicode(
        format_quantity(_POLICY.default_head_memory, binary=True),
        config=True,
        help="""Memory of the head when a request gives no ``head_memory`` (a Kubernetes
        quantity: ``"2Gi"``).""",
    )

    default_worker_cpu = Unicode(
        format_quantity(_POLICY.default_worker_cpu, binary=False),
        config=True,
        help="""CPUs per worker when a request gives no ``worker_cpu``.""",
    )

    default_worker_memory = Unicode(
        format_quantity(_POLICY.default_worker_memory, binary=True),
        config=True,
        help="""Memory per worker when a request gives no ``worker_memory``.""",
    )

    default_worker_gpu = Int(
        _POLICY.default_worker_gpu,
        config=True,
        help="""GPUs (``nvidia.com/gpu``) per worker when a request gives no ``worker_gpu``.""",
    )

    max_workers = Int(
        None,
        allow_none=True,
        config=True,
        help="""Most workers one cluster may ask for (``workers``, ``min_workers``,
        ``max_workers``). None: no limit beyond the queue's quota.""",
    )

    max_head_cpu = Unicode(
        None,
        allow_none=True,
        config=True,
        help="""Most CPUs the head may ask for (a quantity). None: no limit.""",
    )

    max_head_memory = Unicode(
        None,
        allow_none=True,
        config=True,
        help="""Most memory the head may ask for (a quantity: ``"64Gi"``). None: no limit.""",
    )

    max_worker_cpu = Unicode(
        None,
        allow_none=True,
        config=True,
        help="""Most CPUs one worker may ask for (a quantity). None: no limit.""",
    )

    max_worker_memory = Unicode(
        None,
        allow_none=True,
        config=True,
        help="""Most memory one worker may ask for (a quantity). None: no limit.""",
    )

    max_worker_gpu = Int(
        None,
        allow_none=True,
        config=True,
        help="""Most GPUs one worker may ask for. None: no limit.""",
    )

    allowed_images = List(
        Unicode(),
        default_value=[],
        config=True,
        help="""Images clusters may use: prefixes (``"quay.io/team/"``) or ``fnmatch``
        patterns (entries with ``*``, ``?`` or ``[``). Empty: any image.""",
    )

    elastic_jobs = Bool(
        False,
        config=True,
        help="""Whether Kueue runs with elastic jobs (feature gate
        ``ElasticJobsViaWorkloadSlices``): only then may clusters autoscale
        (``min_workers`` < ``max_workers``). Otherwise such requests are refused with an
        explanation, as Kueue would reject them.""",
    )

    def spec_policy(self) -> SpecPolicy:
        """The configured defaults and limits; a bad combination raises ``TraitError``."""
        try:
            return SpecPolicy(
                default_image=self.default_image,
                default_head_cpu=self.default_head_cpu,
                default_head_memory=self.default_head_memory,
                default_worker_cpu=self.default_worker_cpu,
                default_worker_memory=self.default_worker_memory,
                default_worker_gpu=self.default_worker_gpu,
                default_workers=self.default_workers,
                max_workers=self.max_workers,
                max_head_cpu=self.max_head_cpu,
                max_head_memory=self.max_head_memory,
                max_worker_cpu=self.max_worker_cpu,
                max_worker_memory=self.max_worker_memory,
                max_worker_gpu=self.max_worker_gpu,
                allowed_images=tuple(self.allowed_images),
                elastic_jobs=self.elastic_jobs,
            )
        except ValueError as err:
            raise TraitError(f"JupyterDW cluster defaults and limits: {err}") from err

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
        self.clusters = ClusterService(
            self.kube_session,
            self.spec_policy(),
            url_path_join(self.serverapp.base_url, PROXY_PREFIX),
        )
        self.settings.update(
            {
                SESSION_SETTING: self.kube_session,
                EXECUTOR_SETTING: self.executor,
                CLUSTERS_SETTING: self.clusters,
            }
        )
        self.kube_session.start_background()

    def initialize_handlers(self) -> None:
        """Register ``{base_url}dw/api/...`` and the Ray dashboard proxy ``dw/ray/...``."""
        self.handlers.extend(route_table())
        self.handlers.extend(dashboard_routes(self.ray_dashboard_url, self.ray_dashboard_port))

    async def stop_extension(self) -> None:
        """Stop the watches and the worker threads on server shutdown."""
        # Joining the watch threads blocks briefly: keep it off the IO loop too.
        await asyncio.get_running_loop().run_in_executor(None, self.kube_session.stop)
        self.executor.shutdown(wait=False, cancel_futures=True)
