"""jupyter_dw's settings, read the same way by the server extension and by a kernel.
The traits of :class:`DWSettings`, then the ``JupyterDW`` section of the Jupyter config files
and ``JUPYTER_DW_*`` variables, which a kernel can see. No jupyter_server import
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from traitlets import Bool, Enum, Float, Int, List, TraitError, TraitType, Unicode, validate
from traitlets import Union as TraitUnion
from traitlets.config import Config, Configurable
from traitlets.config.loader import PyFileConfigLoader

from ..domain.idle_rule import IdleAction, IdleRule
from ..domain.quantity import format_quantity
from ..domain.ray_auth import RAY_AUTH_MODES
from ..domain.spec_policy import SpecPolicy
from ..domain.url_templates import (
    CLIENT_SCHEMES,
    DEFAULT_TEMPLATE,
    WORKER_TEMPLATE_FIELDS,
    validate_url_template,
)
from ..k8s.auth import DEFAULT_SERVICE_ACCOUNT_DIR
from ..names import DASHBOARD_PORT
from .errors import SettingsUnreadable

log = logging.getLogger(__name__)

SECTION = "JupyterDW"
"""The config section users write (``c.JupyterDW.<setting>``)."""
ENV_PREFIX = "JUPYTER_DW_"
CONFIG_FILE = "jupyter_server_config"

_POLICY = SpecPolicy()  # the domain's defaults, so the traits' defaults cannot drift from them
_POLICY_SETTINGS = tuple(f.name for f in dataclasses.fields(SpecPolicy))
"""The settings a :class:`SpecPolicy` is made of: one each, of the same name. ``elastic_jobs``
is among them but not given from here (its ``auto`` is Kueue's answer, asked elsewhere)."""


class DWSettings(Configurable):
    """Where to find Kubernetes, and the defaults and limits of the clusters users create."""

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
        help="""Seconds to wait for one Kubernetes API call (to connect, then for each read;
        never retried after a timeout): a call the API server does not answer in time is a
        504 ``timeout``. Also the most a request waits for start-up and the first sync of the
        watch caches before answering 503.""",
    )

    access_refresh_interval = Float(
        60.0,
        config=True,
        help="""Seconds between two re-checks of what this identity may do (one rules review:
        Kubernetes has no watch of one's own permissions). A Role granted after start-up is
        picked up within this time without a restart (a 403 triggers a re-check at once), and
        the watches it allows start then. Kueue or KubeRay installed after start-up is seen
        within this time too: while either is missing, each re-check also asks discovery.""",
    )

    discovery_refresh_interval = Float(
        0.0,
        config=True,
        help="""Seconds between two re-checks of which APIs the cluster serves (discovery)
        and whether Kueue's controller answers, made whatever else happens; 0 (the default):
        only when something says they may have changed. Those signals: a watched resource
        answering 404 (uninstalled), a watch the API server ends early (it ends a resource's
        watches when its CRD changes, as an upgrade in place does, and when it shuts down), a
        watch back after failures, Kueue answering again after it did not, and a request for
        a kind discovery said is not served (asked again first, at most once per
        ``access_refresh_interval``); Kueue's controller is probed at each permission re-check
        while a Workload of the namespace waits for it or runs, unless a call it serves has
        answered since. What no signal tells, and this setting does: an optional API
        installed later (Kubeflow Trainer, KubeRay's RayJob CRD) that nothing here has used
        yet, and Kueue's controller stopping while no Workload of the namespace depends on
        it. Each of these re-checks costs 3 requests (discovery's 2 and the probe): equal to
        ``access_refresh_interval``, it gives the earlier cadence (4 requests a re-check).""",
    )

    ray_dashboard_proxy = Bool(
        True,
        config=True,
        help="""Serve the Ray dashboard of the namespace's RayClusters through the Jupyter
        server at ``{base_url}dw/ray/<name>/``. Proxied pages are sandboxed (an opaque origin:
        they can never use the Jupyter user's cookies or API) and their own requests are
        authorized by a short-lived capability in the URL; see the documentation, "Security
        model and the proxy's isolation". False: every ``dw/ray/`` route answers 404 with code
        ``dashboard_proxy_disabled``, and clusters' ``dashboard_url`` is null (in the REST
        API, the events, the widgets and the Python API): reach a dashboard another way, e.g.
        ``kubectl port-forward svc/<name>-head-svc 8265``. Kernels read it too, so set it
        where they can see it (a config file or ``JUPYTER_DW_RAY_DASHBOARD_PROXY``).""",
    )

    kernels_through_server = Bool(
        True,
        config=True,
        help="""Kernels of a Jupyter server that runs jupyter_dw read through it: its watches,
        its answers and its change feed, one connection to Kubernetes for the whole workbench
        however many kernels run. The server writes its loopback address and a random secret,
        which opens jupyter_dw's API only, to a file in its runtime directory readable by this
        user alone; kernels find it by an environment variable they inherit. A kernel without
        such a server (VS Code, a server without the extension, another jupyter_dw version)
        opens its own connection, as does one whose server stops answering. ``dw.context()``
        says which. False: the server publishes nothing and kernels always connect on their
        own (``JUPYTER_DW_KERNELS_THROUGH_SERVER=false`` in one kernel's environment does the
        same for that kernel).""",
    )

    watch_idle_timeout = Float(
        180.0,
        config=True,
        help="""Seconds a watch of the API server may stay silent (no event and no bookmark)
        before its connection is taken for dead and re-opened from the last version seen.
        The API server sends a bookmark about once a minute, so a few minutes never cuts a
        healthy watch; a connection dropped without a close (a NAT or proxy forgetting it) is
        noticed within this time instead of the watch's 6-11 minute renewal.""",
    )

    usage_interval = Float(
        15.0,
        config=True,
        help="""Seconds between two reads of what the clusters use: one metrics API call
        (``metrics.k8s.io/v1beta1`` PodMetrics) for the whole namespace, and three calls to
        each shown cluster's Ray head (its logical load, jobs and live actors). Reads happen
        only while someone looks (an events socket, a widget) or asks (a REST read, at most
        once per interval). metrics-server samples every 15 s by default, so less gains
        nothing. 0 turns usage off (clusters' ``usage`` is null).""",
    )

    idle_cpu_fraction = Float(
        0.05,
        config=True,
        help="""Where a cluster's Ray cannot be asked, the cluster counts as idle while every
        pod the metrics API reports uses less than this fraction of its CPU request (Ray's
        own word decides otherwise: nothing in use, no job running or pending, no live
        actor).""",
    )

    idle_cluster_timeout = Float(
        0.0,
        config=True,
        help="""Seconds a Ray cluster this workbench's owner made may stay idle before the idle
        rule acts on it (``idle_cluster_action``). Idle: Ray reports nothing in use, no job
        running or pending and no live actor (a connected Ray Client counts as busy); where
        Ray cannot be asked, every pod below ``idle_cpu_fraction`` of its CPU request. Any
        activity resets the clock. Another user's cluster in the same namespace is never
        touched. 0 (the default) turns the rule off. Needs ``usage_interval`` > 0.""",
    )

    idle_cluster_action = Enum(
        ["stop", "delete"],
        "stop",
        config=True,
        help="""What the idle rule does: ``stop`` deactivates the cluster's Kueue Workload
        (the quota is freed, the RayCluster kept: resume brings it back at the same size),
        ``delete`` deletes the RayCluster.""",
    )

    idle_cluster_only_when_others_wait = Bool(
        True,
        config=True,
        help="""Act only while a Workload waits in the cluster's ClusterQueue or anywhere in
        its cohort tree: quota nobody waits for costs nothing to keep.""",
    )

    idle_cluster_warning = Float(
        600.0,
        config=True,
        help="""Seconds before the idle rule acts that the user is warned (on the sidebar
        card, in the ``ClusterStatus`` widget and as a JupyterLab notification).""",
    )

    on_server_stop = Enum(
        ["keep", "stop", "delete"],
        "keep",
        config=True,
        help="""What happens to the Ray clusters this workbench's owner made when the Jupyter
        server stops (OpenShift AI stops idle workbenches): ``keep`` them, ``stop`` them
        (quota freed, clusters kept) or ``delete`` them. Applied while the server stops,
        within a time budget, and reported in the log.""",
    )

    @validate("idle_cluster_timeout", "idle_cluster_warning")
    def _validate_idle_seconds(self, proposal: Any) -> float:
        value = float(proposal["value"])
        name = proposal["trait"].name
        if value < 0 or value != value or value == float("inf"):
            raise TraitError(
                f"JupyterDW.{name} must be 0 or a positive number of seconds, got {value}"
            )
        return value

    def idle_rule(self) -> IdleRule:
        """The idle rule as configured; a rule that cannot work raises ``TraitError`` naming
        the setting, so it never starts half-configured (fail closed)."""
        rule = IdleRule(
            timeout=self.idle_cluster_timeout,
            action=cast(IdleAction, self.idle_cluster_action),
            only_when_others_wait=self.idle_cluster_only_when_others_wait,
            warning=self.idle_cluster_warning,
        )
        if rule.on and self.usage_interval <= 0:
            raise TraitError(
                "JupyterDW.idle_cluster_timeout needs usage (JupyterDW.usage_interval > 0): "
                "the rule cannot see idle clusters without it"
            )
        if rule.on and rule.timeout < self.usage_interval:
            raise TraitError(
                f"JupyterDW.idle_cluster_timeout ({rule.timeout:g} s) must be at least "
                f"JupyterDW.usage_interval ({self.usage_interval:g} s)"
            )
        return rule

    @validate("usage_interval")
    def _validate_usage_interval(self, proposal: Any) -> float:
        value = float(proposal["value"])
        if value < 0 or value != value:
            raise TraitError(f"JupyterDW.usage_interval must be 0 (off) or positive, got {value}")
        return value

    @validate("idle_cpu_fraction")
    def _validate_idle_cpu_fraction(self, proposal: Any) -> float:
        value = float(proposal["value"])
        if not 0 <= value <= 1:
            raise TraitError(f"JupyterDW.idle_cpu_fraction must be between 0 and 1, got {value}")
        return value

    @validate("request_timeout", "access_refresh_interval", "watch_idle_timeout")
    def _validate_positive_seconds(self, proposal: Any) -> float:
        value = float(proposal["value"])
        if value <= 0:
            name = proposal["trait"].name
            raise TraitError(f"JupyterDW.{name} must be positive, got {value}")
        return value

    @validate("discovery_refresh_interval")
    def _validate_seconds_or_off(self, proposal: Any) -> float:
        value = float(proposal["value"])
        if value < 0:
            name = proposal["trait"].name
            raise TraitError(f"JupyterDW.{name} must be 0 (off) or positive, got {value}")
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

    # Sizes: ``default_<field>`` and ``max_<field>`` for each row of the domain's table of
    # cluster sizes (``SIZES``): quantities are strings (``"2Gi"``), counts integers; a limit's
    # None means no limit. tests/unit/test_settings.py holds them to the table.

    default_workers = Int(
        1,
        config=True,
        help="Number of workers when a request gives neither ``workers`` nor bounds.",
    )
    max_workers = Int(
        None,
        allow_none=True,
        config=True,
        help="""Most workers one cluster may ask for (``workers``, ``min_workers``,
        ``max_workers``). None: no limit beyond the queue's quota.""",
    )
    default_head_cpu = Unicode(
        "1",
        config=True,
        help="""CPUs of the head when a request gives no ``head_cpu`` (a Kubernetes
        quantity: ``"1"``, ``"500m"``).""",
    )
    max_head_cpu = Unicode(
        None,
        allow_none=True,
        config=True,
        help="Most CPUs the head may ask for (a quantity). None: no limit.",
    )
    default_head_memory = Unicode(
        "2Gi",
        config=True,
        help="""Memory of the head when a request gives no ``head_memory`` (a Kubernetes
        quantity: ``"2Gi"``).""",
    )
    max_head_memory = Unicode(
        None,
        allow_none=True,
        config=True,
        help='Most memory the head may ask for (a quantity: ``"64Gi"``). None: no limit.',
    )
    default_worker_cpu = Unicode(
        "1",
        config=True,
        help="CPUs per worker when a request gives no ``worker_cpu``.",
    )
    max_worker_cpu = Unicode(
        None,
        allow_none=True,
        config=True,
        help="Most CPUs one worker may ask for (a quantity). None: no limit.",
    )
    default_worker_memory = Unicode(
        "2Gi",
        config=True,
        help="Memory per worker when a request gives no ``worker_memory``.",
    )
    max_worker_memory = Unicode(
        None,
        allow_none=True,
        config=True,
        help="Most memory one worker may ask for (a quantity). None: no limit.",
    )
    default_worker_gpu = Int(
        0,
        config=True,
        help="GPUs (``nvidia.com/gpu``) per worker when a request gives no ``worker_gpu``.",
    )
    max_worker_gpu = Int(
        None,
        allow_none=True,
        config=True,
        help="Most GPUs one worker may ask for. None: no limit.",
    )

    allowed_images = List(
        Unicode(),
        default_value=[],
        config=True,
        help="""Images clusters may use: prefixes (``"quay.io/team/"``) or ``fnmatch``
        patterns (entries with ``*``, ``?`` or ``[``). Empty: any image.""",
    )

    elastic_jobs = TraitUnion(
        [Bool(), Unicode()],
        default_value="auto",
        config=True,
        help="""Whether Kueue admits elastic (autoscaling) clusters, i.e. runs with the
        feature gate ``ElasticJobsViaWorkloadSlices`` (beta and on by default since Kueue
        0.18). ``auto``: ask Kueue itself with a server-side dry-run create of an elastic
        RayCluster (its webhook gates the pods only with the gate on), once per connection
        and at every permission re-check; ``true``/``false``: take this word for it. When
        Kueue refuses them, clusters with ``min_workers`` < ``max_workers`` are refused with
        an explanation naming the feature gate.""",
    )

    @validate("elastic_jobs")
    def _validate_elastic_jobs(self, proposal: Any) -> str:
        value = proposal["value"]
        text = str(value).strip().lower() if not isinstance(value, bool) else str(value).lower()
        if text in ("1", "yes"):
            text = "true"
        if text in ("0", "no"):
            text = "false"
        if text not in ("auto", "true", "false"):
            raise TraitError(f"JupyterDW.elastic_jobs must be auto, true or false, got {value!r}")
        return text

    autoscaler_cpu = Unicode(
        format_quantity(_POLICY.autoscaler_cpu, binary=False),
        config=True,
        help="""CPU of the Ray autoscaler sidecar in an autoscaling cluster's head pod (a
        quantity), set in ``autoscalerOptions.resources`` so that the quota Kueue counts for
        it (0.19 counts it; 0.14 does not, though the head's node must still have it) is
        known, not guessed. KubeRay's own default is 500m.""",
    )

    autoscaler_memory = Unicode(
        format_quantity(_POLICY.autoscaler_memory, binary=True),
        config=True,
        help="""Memory of the Ray autoscaler sidecar (a quantity); KubeRay's default is
        512Mi.""",
    )

    ray_auth = Enum(
        RAY_AUTH_MODES,
        default_value=_POLICY.ray_auth,
        config=True,
        help="""Ray's own authentication on the clusters users create. ``token`` (the
        default): ``spec.authOptions: {mode: token}``; KubeRay makes a random token in a Secret
        named after the cluster and gives it to every Ray container, and Ray (2.52 or newer)
        then refuses its dashboard, Jobs API and client port to anyone without it. The
        dashboard proxy adds the token upstream; it never reaches the browser or the notebook.
        ``k8s``: Ray asks the Kubernetes API server about the caller's own token instead
        (``enableK8sTokenAuth``; Ray 2.55 or newer; callers need the ``ray:write`` verb).
        ``disabled``: no authentication (``RAY_AUTH_MODE=disabled`` in every Ray container):
        anyone who can reach a cluster's pods can submit jobs to it, so every cluster card and
        widget shows a warning. Requests must name a Ray version the mode supports (from a Ray
        image's tag, else the ``ray_version`` field); with a KubeRay whose RayCluster schema has
        no ``authOptions`` (before 1.6), clusters are created without it and show a warning.""",
    )

    config_errors: tuple[str, ...] = ()
    """Configuration files that could not be read (set by :func:`load_settings`): writes are
    refused while there are any."""
    ray_dashboard_url = Unicode(
        DEFAULT_TEMPLATE,
        config=True,
        help="""Where the Ray dashboard and Jobs API of a RayCluster are, as seen from this
        server and from kernels: the target of the ``{base_url}dw/ray/<name>/`` proxy, and what
        ``h.submit_job``, ``dw.JobView``, ``%dw job`` and the sidebar's job list talk to.

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
        DASHBOARD_PORT,
        config=True,
        help="""The ``{port}`` of a ``ray_dashboard_url`` template (8265, the Ray default).
        Unused without a template: the port then comes from the RayCluster's status.""",
    )

    ray_client_url = Unicode(
        DEFAULT_TEMPLATE,
        config=True,
        help="""Where a RayCluster's Ray Client server is, as seen from a kernel: the
        address ``h.ray_init()`` connects to.

        Empty (the default): the head Service KubeRay reports, by its cluster DNS name, on
        its client port (``status.endpoints.client``, 10001 when absent):
        ``ray://<service>.<namespace>.svc:<port>``. Otherwise a ``ray://`` template with the
        placeholders ``{name}`` (required), ``{namespace}`` and ``{port}`` (10001), as for
        ``ray_dashboard_url``.""",
    )

    multikueue_dashboard_url = Unicode(
        DEFAULT_TEMPLATE,
        config=True,
        help="""Where the Ray dashboard and Jobs API of a RayCluster that MultiKueue sent to a
        worker cluster are, as seen from this server and from kernels (a gateway on each
        worker, say). Such a cluster's pods and head Service are on the worker, not in this
        cluster: without this setting its ``dashboard_url`` is null, with a note saying it
        runs on worker X and is not reachable from this workbench, and its jobs cannot be
        listed or submitted from here.

        A template with the placeholders ``{worker}`` (the worker cluster's name, its
        MultiKueueCluster's; required), ``{name}`` (the RayCluster's name, required),
        ``{namespace}`` and ``{port}`` (``ray_dashboard_port``), as for
        ``ray_dashboard_url``; an http:// or https:// URL. Example:
        ``https://ray.{worker}.example.com/{namespace}/{name}``. The cluster's Ray token lives
        on the worker: a gateway that needs one must supply it.""",
    )

    @validate("multikueue_dashboard_url")
    def _validate_multikueue_dashboard_url(self, proposal: Any) -> str:
        try:
            return validate_url_template(proposal["value"], known=WORKER_TEMPLATE_FIELDS)
        except ValueError as err:
            raise TraitError(f"JupyterDW.multikueue_dashboard_url: {err}") from err

    @validate("ray_dashboard_url")
    def _validate_ray_dashboard_url(self, proposal: Any) -> str:
        try:
            return validate_url_template(proposal["value"])
        except ValueError as err:
            raise TraitError(f"JupyterDW.ray_dashboard_url: {err}") from err

    @validate("ray_client_url")
    def _validate_ray_client_url(self, proposal: Any) -> str:
        try:
            return validate_url_template(proposal["value"], CLIENT_SCHEMES)
        except ValueError as err:
            raise TraitError(f"JupyterDW.ray_client_url: {err}") from err

    @validate("ray_dashboard_port")
    def _validate_ray_dashboard_port(self, proposal: Any) -> int:
        value = int(proposal["value"])
        if not 0 < value < 65536:
            raise TraitError(f"JupyterDW.ray_dashboard_port must be a TCP port, got {value}")
        return value

    def spec_policy(self) -> SpecPolicy:
        """The configured defaults and limits; a bad combination raises ``TraitError``."""
        # The configured values as given (quantities are strings here): SpecPolicy parses
        # each into its typed field (a Decimal, for a quantity) and names any it refuses.
        given: dict[str, Any] = {
            name: getattr(self, name) for name in _POLICY_SETTINGS if name != "elastic_jobs"
        }
        given["allowed_images"] = tuple(self.allowed_images)
        try:
            return SpecPolicy(**given)
        except ValueError as err:
            raise TraitError(f"JupyterDW cluster defaults and limits: {err}") from err

    def session_options(self) -> dict[str, Any]:
        """Keyword arguments of :class:`jupyter_dw.k8s.session.KubeSession`."""
        return {
            "namespace": self.namespace,
            "service_account_dir": self.service_account_dir,
            "kube_context": self.kube_context,
            "request_timeout": self.request_timeout,
            "refresh_interval": self.access_refresh_interval,
            "watch_idle_timeout": self.watch_idle_timeout,
            "discovery_refresh_interval": self.discovery_refresh_interval,
        }


def setting_names() -> list[str]:
    """Every configurable setting of :class:`DWSettings`, in declaration order."""
    return list(DWSettings.class_own_traits(config=True))


def environment_config(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{setting: value}`` from ``JUPYTER_DW_<SETTING>`` variables, parsed by trait type.

    Lists are comma-separated (or a JSON array); an empty value means None where allowed.
    A value that does not parse raises :class:`TraitError` naming the variable.
    """
    environ = os.environ if environ is None else environ
    found: dict[str, Any] = {}
    for name, trait in DWSettings.class_own_traits(config=True).items():
        variable = ENV_PREFIX + name.upper()
        if variable in environ:
            found[name] = _parse_env(variable, environ[variable], trait)
    return found


def _parse_env(variable: str, raw: str, trait: TraitType[Any, Any]) -> Any:
    text = raw.strip()
    if text == "" and trait.allow_none:
        return None
    try:
        if isinstance(trait, TraitUnion):  # elastic_jobs: auto, or a boolean word
            word = {"1": "true", "yes": "true", "0": "false", "no": "false"}.get(
                text.lower(), text.lower()
            )
            if word not in ("auto", "true", "false"):
                raise ValueError("expected auto, true or false")
            return word
        if isinstance(trait, Bool):
            if text.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError("expected true or false")
            return text.lower() in ("1", "true", "yes")
        if isinstance(trait, Int):
            return int(text)
        if isinstance(trait, Float):
            return float(text)
        if isinstance(trait, List):
            if text.startswith("["):
                value = json.loads(text)
                if not isinstance(value, list):
                    raise ValueError("expected a JSON array")
                return [str(v) for v in value]
            return [part.strip() for part in text.split(",") if part.strip()]
    except ValueError as err:
        raise TraitError(f"{variable}={raw!r}: {err}") from err
    return raw


def config_files(paths: Iterable[str] | None = None) -> list[Path]:
    """The ``jupyter_server_config`` files a server would read, lowest priority first."""
    if paths is None:
        from jupyter_core.paths import jupyter_config_path

        paths = jupyter_config_path()
    files: list[Path] = []
    for directory in reversed(list(paths)):  # jupyter_config_path() lists the highest first
        base = Path(directory)
        files += sorted((base / f"{CONFIG_FILE}.d").glob("*.json"))
        files += [
            p for p in (base / f"{CONFIG_FILE}.json", base / f"{CONFIG_FILE}.py") if p.is_file()
        ]
    return files


def file_config(
    paths: Iterable[str] | None = None, errors: list[str] | None = None
) -> dict[str, Any]:
    """The ``JupyterDW`` section merged from :func:`config_files` (later files win).

    A file that cannot be read is logged and skipped, and ``<path>: <error>`` is added to
    ``errors``: the notebook still reads queues and clusters, but a caller that writes must
    refuse (the administrator's limits and allowed images may be in that file).
    """
    merged = Config()
    for path in config_files(paths):
        try:
            if path.suffix == ".json":
                loaded = Config(json.loads(path.read_text()))
            else:
                loaded = PyFileConfigLoader(path.name, str(path.parent), log=log).load_config()
        except Exception as err:  # a user's file: anything may be wrong in it
            log.warning("jupyter_dw: cannot read %s: %s", path, err)
            if errors is not None:
                errors.append(f"{path}: {type(err).__name__}: {err}")
            continue
        merged.merge(loaded)
    section = merged.get(SECTION, {})
    return {key: value for key, value in section.items() if key in setting_names()}


def refuse_writes(errors: Iterable[str]) -> None:
    """Raise :class:`SettingsUnreadable` naming each unreadable file, if there are any."""
    found = list(errors)
    if found:
        raise SettingsUnreadable(
            "Refused: a jupyter_dw configuration file cannot be read",
            "; ".join(found),
            "The administrator's limits and allowed images may be in it, so nothing is created "
            "or changed until it is fixed. Reading queues and clusters still works.",
        )


def load_settings(
    environ: Mapping[str, str] | None = None, paths: Iterable[str] | None = None
) -> DWSettings:
    """The settings a kernel uses: config files, then ``JUPYTER_DW_*`` variables.

    Raises :class:`TraitError` (naming the setting) for a value that is not valid.
    """
    errors: list[str] = []
    values = {**file_config(paths, errors), **environment_config(environ)}
    settings = DWSettings(config=Config({"DWSettings": values}))
    settings.spec_policy()  # a bad combination fails here, with its reason
    settings.config_errors = tuple(errors)
    return settings
