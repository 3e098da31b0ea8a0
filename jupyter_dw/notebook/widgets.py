"""Live notebook widgets: :class:`ClusterBuilder`, :class:`ClusterStatus`, :class:`QueueBoard`.
ipywidgets for the form, anywidget for the live views, fed on the kernel's loop
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import anywidget
import ipywidgets as w
from traitlets import Bool, Dict, Instance, Int, List, TraitType, Unicode

from ..core.cluster_results import ClusterInfo, FitResult
from ..core.errors import DWError, InvalidRequest
from ..core.feed_messages import (
    ClusterChanged,
    HealthChanged,
    Message,
    PositionsChanged,
    QueuesChanged,
    WorkloadChanged,
)
from ..core.holdings import holdings
from ..core.rows_feed import RowsChanged
from ..domain.freshness import FRESH
from ..domain.idempotency import new_idempotency_key
from ..domain.spec_policy import SIZE_OF, SIZES, SpecPolicy
from ..domain.workload_rows import QueueRows, QueueShown
from .display import fit_html
from .runtime import KernelRuntime, runtime

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"


SHARED = ("dom.js", "shared/tones.js", "shared/clock.js", "shared/resources.js")
"""What every widget's ESM starts with: ``el``, the colours (one table with the sidebar and
the notebook's HTML), the clock and the quantity and resource names the sidebar uses too.
``shared/`` is the build's copy of the code the sidebar shares (labextension/src/shared/)."""
_SIBLING_IMPORT = re.compile(r'^import \{[^}]*\} from "\./([a-z_]+\.js)";\n', re.MULTILINE)


def esm(*files: str) -> str:
    """A widget's ESM: :data:`SHARED`, then ``files`` (paths under ``static/``), joined into
    one module. A file may import a file of its own folder (as the sidebar's bundler needs):
    the import is dropped here, since the module holds that file; one it does not hold is an
    error."""
    names = (*SHARED, *files)
    parts = []
    for name in names:
        text = (STATIC / name).read_text()
        folder = PurePosixPath(name).parent
        for imported in _SIBLING_IMPORT.findall(text):
            if str(folder / imported) not in names[: names.index(name)]:
                raise ValueError(f"{name} imports {imported}, which esm() does not put before it")
        parts.append(_SIBLING_IMPORT.sub("", text))
    return "\n".join(parts)


def optional_dict() -> TraitType[dict[str, Any] | None, dict[str, Any] | None]:
    """A dict trait that may be None (``Dict(None, allow_none=True)``), typed as such."""
    # traitlets types Dict as never None: it has no overload for allow_none=True.
    return Dict(None, allow_none=True)  # type: ignore[return-value]


DEBOUNCE_SECONDS = 0.3
"""The builder re-judges the spec this long after the last change (not per keystroke)."""
NO_PRIORITY = "(none: Kueue's default)"
"""The builder's Priority choice that names no WorkloadPriorityClass."""


class _Live:
    """A widget that follows the kernel's change feed until it is closed."""

    _unsubscribe: Any = None

    def _follow(self, on_change: Any, rows: bool = False) -> KernelRuntime:
        """Subscribe ``on_change`` (on the kernel's loop); returns the runtime."""
        rt = runtime()
        self._unsubscribe = rt.subscribe(on_change, rows=rows)
        return rt

    def close(self) -> None:
        """Stop following the cluster and close the widget."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        super().close()  # type: ignore[misc]


class ClusterStatus(_Live, anywidget.AnyWidget):
    """One Ray cluster, live: state badge, Kueue's reason and queue position, workers bar,
    timeline, dashboard link, Stop (an admitted cluster, kept) or Resume (a stopped one) and
    Delete (with confirmation). Synced traits carry the REST
    field names. ``close()`` stops following it."""

    # The bar's words and numbers are the sidebar's (workers_bar.js, one source), then the view.
    _esm = esm(
        "shared/workers_bar.js", "shared/usage_bar.js", "shared/timeline_bar.js", "status.js"
    )

    name = Unicode().tag(sync=True)
    namespace = Unicode(None, allow_none=True).tag(sync=True)
    queue = Unicode(None, allow_none=True).tag(sync=True)
    cluster_queue = Unicode(None, allow_none=True).tag(sync=True)
    state = Unicode(None, allow_none=True).tag(sync=True)
    reason = Unicode(None, allow_none=True).tag(sync=True)
    message = Unicode(None, allow_none=True).tag(sync=True)
    summary = Unicode(None, allow_none=True).tag(sync=True)
    """Kueue's waiting ``message`` in one short line (the view shows the message on expand)."""
    position_in_local_queue = Int(None, allow_none=True).tag(sync=True)
    admitted = Bool(False).tag(sync=True)
    stopped = optional_dict().tag(sync=True)
    """While ``stopped``: REST's ``{"by", "at", "reason"}``, who stopped it and why."""
    preempted_by = optional_dict().tag(sync=True)
    admission_checks = List(Dict()).tag(sync=True)
    workers_ready = Int(0).tag(sync=True)
    workers_desired = Int(0).tag(sync=True)
    workers_admitted = Int(None, allow_none=True).tag(sync=True)
    min_workers = Int(0).tag(sync=True)
    max_workers = Int(0).tag(sync=True)
    elastic = Bool(False).tag(sync=True)
    pinned_workers = Int(None, allow_none=True).tag(sync=True)
    scale = optional_dict().tag(sync=True)
    """A change of size in flight (REST's ``scale``), None when none."""
    scale_result = optional_dict().tag(sync=True)
    """The answer to the view's last ``{"action": "scale"}``: REST's ``ScaleResult`` without
    the cluster (``fit``, ``dry_run``, ``changed``, ``message``), or ``{"error": ...}``."""
    milestones = List(Dict()).tag(sync=True)
    timeline = optional_dict().tag(sync=True)
    """REST's ``timeline``: the spans the view draws as one bar."""
    dashboard_url = Unicode(None, allow_none=True).tag(sync=True)
    dashboard_note = Unicode(None, allow_none=True).tag(sync=True)
    """Why ``dashboard_url`` is None with the proxy on: it runs on a MultiKueue worker whose
    dashboards this workbench cannot reach."""
    placement = optional_dict().tag(sync=True)
    """REST's ``placement``: the MultiKueue worker cluster it runs on (or those it was offered
    to); None without MultiKueue."""
    dashboard = optional_dict().tag(sync=True)
    """REST's ``dashboard``: ``{"service", "port"}`` of the head, for a port-forward."""
    deleted = Bool(False).tag(sync=True)
    error = optional_dict().tag(sync=True)
    freshness = Dict(FRESH.to_json()).tag(sync=True)
    """``{"state", "reason", "since"}``: not ``live`` while the state shown may be old."""
    ray_auth = optional_dict().tag(sync=True)
    """``{"mode", "warning"}``: how Ray authenticates on the cluster (a warning when open)."""
    usage = optional_dict().tag(sync=True)
    """REST's ``usage``: what its pods use against what they hold, Ray's load, whether it is
    idle and since when (``idle_since``); None when usage is turned off."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.on_msg(self._on_frontend_message)
        try:
            # Subscribed before reading, so no change in between is missed.
            rt = self._follow(self._on_change)
            self.show(rt.core.clusters.get(name))
        except DWError as err:
            self.error = err.to_json()

    def show(self, info: ClusterInfo) -> None:
        """Set every trait from ``info`` at once: each synced trait that REST's cluster record
        has too (the traits carry REST's names, so the widget shows what the API says)."""
        record = info.to_json()
        synced = set(self.trait_names(sync=True))
        with self.hold_sync():
            self.deleted = False  # a cluster of this name exists (again)
            for field, value in record.items():
                if field in synced:
                    setattr(self, field, value)

    def _on_change(self, message: Message) -> None:
        """On the kernel's loop: a change of this cluster."""
        if not isinstance(message, ClusterChanged) or message.name != self.name:
            return
        if message.cluster is None:
            with self.hold_sync():
                self.deleted = True
                self.state = "deleted"
                self.reason = self.message = self.summary = None
                self.position_in_local_queue = None
                self.admitted = False
                self.stopped = None
                self.preempted_by = None
                self.admission_checks = []
                self.scale = None
                self.placement = None
            return
        self.show(message.cluster)

    def _on_frontend_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("action") == "delete":
            self.delete()
        elif content.get("action") == "stop":
            self.stop()
        elif content.get("action") == "resume":
            self.resume()
        elif content.get("action") == "scale":
            request = content.get("request")
            self.scale_to(
                content.get("workers"),
                dry_run=content.get("dry_run") is True,
                request=request if isinstance(request, int) else None,
            )

    def scale_to(
        self, workers: int | None, *, dry_run: bool = False, request: int | None = None
    ) -> None:
        """Scale the cluster (the view's stepper calls this); the answer goes to
        ``scale_result`` (with the view's ``request`` id, so it matches answers to asks) and
        the new size arrives through the watches."""
        try:
            result = runtime().core.clusters.scale(self.name, workers, dry_run)
        except DWError as err:
            self.scale_result = {"error": err.to_json(), "request": request}
            return
        self.scale_result = {
            "fit": result.fit.to_json() if result.fit else None,
            "dry_run": result.dry_run,
            "changed": result.changed,
            "message": result.message,
            "request": request,
        }
        self.show(result.cluster)

    def stop(self) -> None:
        """Stop the cluster, keeping it (the view's Stop button calls this); a refusal (409,
        403 naming the permission) goes to ``error``, nothing changed."""
        self._act(runtime().core.clusters.stop)

    def resume(self) -> None:
        """Queue the stopped cluster again (the view's Resume button calls this); its
        position and Kueue's reason then arrive through the watches."""
        self._act(runtime().core.clusters.resume)

    def _act(self, action: Callable[[str], ClusterInfo]) -> None:
        """Run ``action`` on this cluster: the cluster it answers is shown, a refusal goes to
        ``error``."""
        try:
            info = action(self.name)
        except DWError as err:
            self.error = err.to_json()
            return
        self.error = None
        self.show(info)

    def delete(self) -> None:
        """Delete the cluster (the view's confirmed Delete button calls this)."""
        try:
            rt = runtime()
            rt.core.clusters.delete(self.name)
            rt.forget_at_shutdown(self.name)
            self.error = None
        except DWError as err:
            self.error = err.to_json()


class QueueBoard(_Live, anywidget.AnyWidget):
    """Every LocalQueue of the namespace with per-resource headroom bars and the Workloads in
    it (whatever job owns them: Ray clusters, batch Jobs, ...), each with its state, position
    while waiting and Kueue's reason, live. A long queue shows its first
    :data:`~jupyter_dw.domain.workload_rows.WORKLOADS_SHOWN` and every one of yours until
    "Show all" (``expanded``): a change syncs the rows shown, not the namespace's thousands.

    Reading through its Jupyter server, the kernel holds only those rows: the server chooses
    them (:mod:`jupyter_dw.core.rows_feed`) and sends each queue's when they change; on its
    own connection the board chooses them from every Workload (:class:`QueueRows`)."""

    _esm = esm("shared/usage_bar.js", "queues.js")

    queues = List(Dict()).tag(sync=True)
    workloads = List(Dict()).tag(sync=True)
    """The rows shown, ``GET workloads``' records in its order (by queue, holding ones, then
    Kueue's): of each queue the first ones and yours, or all when it is ``expanded``."""
    workload_counts = Dict().tag(sync=True)
    """How many Workloads each LocalQueue holds, shown or not."""
    expanded = List(Unicode()).tag(sync=True)
    """The LocalQueues whose every Workload is shown (the view's "Show all" sets it)."""
    workloads_error = optional_dict().tag(sync=True)
    holdings = Dict().tag(sync=True)
    """What my clusters hold and use per LocalQueue (REST's ``QueueHolding`` by queue name),
    summed in core (:mod:`jupyter_dw.core.holdings`); each cluster change brings its queue's."""
    error = optional_dict().tag(sync=True)
    freshness = Dict(FRESH.to_json()).tag(sync=True)
    """The watches' overall ``{"state", "reason", "since"}``: not ``live`` while the queues
    shown may be old."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows: QueueRows | None = None
        """The rows chosen here (a kernel on its own connection)."""
        self._told: dict[str, QueueShown] | None = None
        """The rows the server chose (a kernel reading through it), by queue."""
        try:
            rt = self._follow(self._on_change, rows=True)
            self.queues = rt.core.queues.list().to_json()["queues"]
            self.freshness = rt.core.session.watch_health().freshness.to_json()
        except DWError as err:
            self.error = err.to_json()
            return
        try:
            mine = holdings(rt.core.clusters.entries(), rt.core.session.identity.username)
            self.holdings = {queue: h.to_json() for queue, h in mine.items()}
        except DWError as err:  # no RayCluster to read: no line, the queues still show
            log.info("jupyter_dw: holdings not shown: %s", err)
        self._runtime = rt
        if rt.connection is not None and rt.connection.mode == "server":
            self._show_told(rt)
        else:
            self._choose_rows(rt)
        self.observe(self._on_expanded, names="expanded")

    def _show_told(self, rt: KernelRuntime) -> None:
        told, error = rt.told_rows()
        if told is None:
            self.workloads_error = (error or DWError("The Workloads were not sent")).to_json()
            return
        self._told = dict(told)
        rt.expand_rows(self, self.expanded)
        self._show_workloads()

    def _choose_rows(self, rt: KernelRuntime) -> None:
        try:
            rt.core.workloads.follow_owners()
            rows = QueueRows(rt.core.workloads.made_by_me)
            rows.expand(self.expanded)
            rows.reset(rt.core.workloads.list())
            self._rows = rows
            self._show_workloads()
        except DWError as err:
            self.workloads_error = err.to_json()

    def _show_workloads(self) -> None:
        if self._rows is not None:
            self.workloads = [info.to_json() for info in self._rows.rows()]
            self.workload_counts = self._rows.counts()
        elif self._told is not None:
            told = [self._told[queue] for queue in sorted(self._told)]
            expanded = set(self.expanded)
            self.workloads = [
                info.to_json() for shown in told for info in shown.visible(shown.queue in expanded)
            ]
            self.workload_counts = {shown.queue: shown.count for shown in told}

    def _on_expanded(self, change: dict[str, Any]) -> None:
        if self._rows is not None:
            self._rows.expand(change["new"])
        elif self._told is not None:  # the server answers with the rows of those queues
            self._runtime.expand_rows(self, change["new"])
        self._show_workloads()

    def close(self) -> None:
        """Stop following the queues; the server no longer shows this board's queues whole."""
        if self._told is not None:
            self._runtime.expand_rows(self, ())
        super().close()

    def _on_change(self, message: Message) -> None:
        if isinstance(message, HealthChanged):
            self.freshness = message.health.freshness.to_json()
        elif isinstance(message, RowsChanged):
            if self._told is not None:
                self._told.pop(message.shown.queue, None)
                if message.shown.count:
                    self._told[message.shown.queue] = message.shown
                self._show_workloads()
        elif isinstance(message, (WorkloadChanged, PositionsChanged)):
            if self._told is not None:  # the server went away: the kernel's own feed now
                self._told = None
                self._choose_rows(self._runtime)  # every Workload now, this change included
            elif self._rows is not None:
                changed = (
                    [(message.name, message.workload)]
                    if isinstance(message, WorkloadChanged)
                    else [(info.name, info) for info in message.workloads]
                )
                for name, info in changed:
                    self._rows.put(name, info)
                self._show_workloads()
        elif isinstance(message, ClusterChanged) and message.holding is not None:
            queue, holding = message.holding
            self.holdings = {**self.holdings, queue: holding.to_json()}
        elif isinstance(message, QueuesChanged):
            if message.queues is not None:
                self.queues = message.queues.to_json()["queues"]
                self.error = None
            elif message.error is not None:
                self.error = message.error.to_json()


class ClusterBuilder(_Live, w.VBox):
    """Size a Ray cluster and see, as you type, whether it fits now; take the suggestion in
    one click; Submit. After a submit the same output shows the cluster's live status.

    Not synced (kernel-side state for scripts and tests): ``verdict`` (fits-now, must-wait,
    never-fits, unknown or empty), ``suggestion`` (the REST object or None), ``errors``
    (field → message) and ``status`` (the :class:`ClusterStatus` after a submit).
    """

    verdict = Unicode("")
    suggestion = optional_dict()
    errors = Dict()
    status = Instance(ClusterStatus, allow_none=True)

    def __init__(self, name: str = "", queue: str | None = None, **values: Any) -> None:
        style = {"description_width": "110px"}
        # Wide enough for "team (default) — free: 8 CPU, 16Gi memory".
        self.queue = w.Dropdown(description="Queue", style=style, layout=w.Layout(width="36em"))
        self.name = w.Text(value=name, description="Name", placeholder="my-ray", style=style)
        self.workers = w.BoundedIntText(min=1, max=10_000, description="Workers", style=style)
        self.worker_cpu = w.Text(description="Worker CPU", style=style)
        self.worker_memory = w.Text(description="Worker memory", style=style)
        self.worker_gpu = w.BoundedIntText(min=0, max=64, description="Worker GPU", style=style)
        self.head_cpu = w.Text(description="Head CPU", style=style)
        self.head_memory = w.Text(description="Head memory", style=style)
        # The built-in defaults until the configured ones are read (below).
        self._set_sizes(SpecPolicy().published_sizes())
        self.limits = w.HTML()
        """This server's limits on the sizes ("at most 4 CPUs per worker"); empty if none."""
        self.image = w.Text(value="", description="Image", placeholder="default", style=style)
        self.tolerations = w.Text(
            description="Tolerations", placeholder="nvidia.com/gpu:NoSchedule", style=style
        )
        self.node_selector = w.Text(
            description="Node selector", placeholder="gpu-type=a100", style=style
        )
        # Offered from the queues API; disabled when the classes cannot be read.
        self.priority = w.Dropdown(
            description="Priority", options=[(NO_PRIORITY, "")], value="", style=style
        )
        self.verdict_view = w.HTML()
        self.use_suggestion = w.Button(description="Use it", layout=w.Layout(display="none"))
        self.submit_button = w.Button(description="Submit", button_style="primary")
        self.problem = w.HTML()
        self._inputs = [
            self.queue, self.name, self.workers, self.worker_cpu, self.worker_memory,
            self.worker_gpu, self.head_cpu, self.head_memory, self.image, self.tolerations,
            self.node_selector, self.priority,
        ]  # fmt: skip
        super().__init__(
            children=[
                *self._inputs,
                self.limits,
                w.HBox([self.verdict_view, self.use_suggestion]),
                self.submit_button,
                self.problem,
            ]
        )
        self._pending: asyncio.Handle | None = None
        self._attempt: tuple[str, str] | None = None
        """The last submitted request (as JSON) and its idempotency key."""
        try:
            rt = self._follow(self._on_change)
            # The configured defaults as a request writes them: the form as it starts builds
            # the spec the server makes of a request that gives no size.
            sizes = rt.core.clusters.published_sizes()
            self._set_sizes(sizes)
            self.limits.value = _limits_html(sizes)
            queues = rt.core.queues.list()
            self._set_queues(queues, queue)
            self._set_priorities(queues, values.pop("priority", None))
        except DWError as err:
            self._show_error(err)
        for key, value in values.items():
            getattr(self, key).value = value
        for control in self._inputs:
            control.observe(self._changed, names="value")
        self.use_suggestion.on_click(self._apply_suggestion)
        self.submit_button.on_click(lambda _: self.submit())
        self.evaluate()

    # -- the form ------------------------------------------------------------------------

    def _set_sizes(self, sizes: dict[str, dict[str, int | str | None]]) -> None:
        """Each sized field at its default in ``sizes`` (``SpecPolicy.published_sizes()``)."""
        for size in SIZES:
            getattr(self, size.field).value = sizes[size.field]["default"]

    def request(self) -> dict[str, Any]:
        """The REST request the form describes."""
        request: dict[str, Any] = {
            "queue": self.queue.value or None,
            "workers": self.workers.value,
            "worker_cpu": self.worker_cpu.value.strip(),
            "worker_memory": self.worker_memory.value.strip(),
            "worker_gpu": self.worker_gpu.value,
            "head_cpu": self.head_cpu.value.strip(),
            "head_memory": self.head_memory.value.strip(),
        }
        if self.name.value.strip():
            request["name"] = self.name.value.strip()
        if self.image.value.strip():
            request["image"] = self.image.value.strip()
        # The same text forms as %dw: "KEY[=VALUE][:EFFECT], ..." and "k=v, ...".
        if self.tolerations.value.strip():
            request["tolerations"] = self.tolerations.value.strip()
        if self.node_selector.value.strip():
            request["node_selector"] = self.node_selector.value.strip()
        if self.priority.value:
            request["priority"] = self.priority.value
        return request

    def _set_priorities(self, queues: Any, preferred: str | None) -> None:
        """Offer the WorkloadPriorityClasses, highest first, after "Kueue's default"."""
        classes = queues.priority_classes
        self.priority.disabled = classes is None
        self.priority.tooltip = (
            "WorkloadPriorityClasses are not readable by this identity" if classes is None else ""
        )
        options = [(NO_PRIORITY, "")] + [
            (f"{c.name} ({c.value})" + (f" — {c.description}" if c.description else ""), c.name)
            for c in classes or ()
        ]
        current = preferred or self.priority.value
        self.priority.options = options
        self.priority.value = current if current in {v for _, v in options} else ""

    def _set_queues(self, queues: Any, preferred: str | None) -> None:
        options = []
        for q in queues.queues:
            free = ", ".join(
                f"{r['headroom']} {r['resource']}"
                for r in q.to_json()["resources"]
                if r["headroom"] is not None
            )
            label = (
                q.name + (" (default)" if q.default else "") + (f" — free: {free}" if free else "")
            )
            options.append((label, q.name))
        current = self.queue.value
        self.queue.options = options
        chosen = preferred or current or (queues.default.name if queues.default else None)
        if chosen in {value for _, value in options}:
            self.queue.value = chosen

    def _changed(self, _change: Any) -> None:
        """Debounce: judge the spec once the user pauses."""
        if self._pending is not None:
            self._pending.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None:
            self.evaluate()
            return
        self._pending = loop.call_later(DEBOUNCE_SECONDS, self.evaluate)

    def _on_change(self, message: Message) -> None:
        if isinstance(message, QueuesChanged) and message.queues is not None:
            self._set_queues(message.queues, None)
            self._set_priorities(message.queues, None)
            if self.status is None:
                self.evaluate()

    def evaluate(self) -> FitResult | None:
        """Judge the form's spec now, from the kernel's caches (no visibility API call)."""
        self._pending = None
        if self.status is not None:
            return None  # submitted: the form is gone, the status view has taken over
        try:
            result = runtime().core.clusters.fit(self.request(), ask_positions=False)
        except InvalidRequest as err:
            self.errors = dict(err.errors)
            self.verdict, self.suggestion = "", None
            self.verdict_view.value = _field_errors(err.errors)
            self.use_suggestion.layout.display = "none"
            return None
        except DWError as err:
            self._show_error(err)
            return None
        self.errors = {}
        self.verdict = result.verdict
        self.suggestion = result.suggestion.to_json() if result.suggestion else None
        self.verdict_view.value = fit_html(result)
        if result.suggestion is not None:
            self.use_suggestion.description = f"Use {result.suggestion.workers} workers"
            self.use_suggestion.layout.display = ""
        else:
            self.use_suggestion.layout.display = "none"
        return result

    def _apply_suggestion(self, _button: Any = None) -> None:
        if self.suggestion is not None:
            self.workers.value = self.suggestion["workers"]
            self.evaluate()

    def submit(self) -> ClusterStatus | None:
        """Create the cluster; the builder then shows its :class:`ClusterStatus`.

        Each click sends an idempotency key; a click that retries the same request (the
        last one failed, the form unchanged) sends the same key, so if the failed try made
        the cluster after all, the retry answers with it rather than "name taken"."""
        request = self.request()
        signature = json.dumps(request, sort_keys=True, default=str)
        if self._attempt is None or self._attempt[0] != signature:
            self._attempt = (signature, new_idempotency_key())
        try:
            info = runtime().core.clusters.create(request, self._attempt[1])
        except InvalidRequest as err:
            self.errors = dict(err.errors)
            self.problem.value = _field_errors(err.errors)
            return None
        except DWError as err:
            self._show_error(err)
            return None
        self.status = ClusterStatus(info.snapshot.name)
        self.children = [self.status]
        return self.status

    def _show_error(self, err: DWError) -> None:
        self.problem.value = _error_html(err)

    def close(self) -> None:
        """Stop following the queues (and the submitted cluster) and close."""
        if self.status is not None:
            self.status.close()
        super().close()


def _limits_html(sizes: dict[str, dict[str, int | str | None]]) -> str:
    """This server's limits on the sizes (``published_sizes()``) as one line, or ""."""
    from html import escape

    limits = [
        f"at most {limit} {SIZE_OF[field].unit}"
        for field, published in sizes.items()
        if (limit := published["max"]) is not None
    ]
    if not limits:
        return ""
    words = escape("This server's limits: " + ", ".join(limits))
    return f'<div class="jp-dw-limits" style="opacity:.7">{words}</div>'


def _field_errors(errors: dict[str, str]) -> str:
    from html import escape

    items = "".join(f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in errors.items())
    return f'<ul style="color:#c53030;margin:2px 0">{items}</ul>'


def _error_html(err: DWError) -> str:
    from html import escape

    reason = f": {escape(err.reason)}" if err.reason else ""
    hint = f"<div>{escape(err.hint)}</div>" if err.hint else ""
    return f'<div role="alert" style="color:#c53030">{escape(err.error)}{reason}{hint}</div>'
