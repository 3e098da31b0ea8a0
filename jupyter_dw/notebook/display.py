"""Rich HTML for the API's results in a notebook: headroom bars, state badges, timelines.
Pure functions of the core's results, registered by :mod:`.formatters`; escaped, themed
(docs/explanation/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from decimal import Decimal
from html import escape
from typing import Any

from ..core.cluster_results import ClusterInfo, ClusterList, FitResult
from ..core.queue_results import QueueList
from ..core.workload_results import WorkloadList
from ..domain.cluster_state import AdmissionCheckStatus
from ..domain.job_kind import JobInfo
from ..domain.kueue_words import Summarized
from ..domain.lenient import timestamp
from ..domain.milestones import Milestone, milestone_words
from ..domain.multikueue import Placement
from ..domain.priorities import PreemptedBy
from ..domain.quantity import parse_quantity
from ..domain.quota import QueueSummary
from ..domain.timeline import Span, Timeline
from ..domain.usage import ClusterUsage, is_gpu, shown_amount
from ..domain.workloads import WorkloadInfo
from .tones import color_of, tone_color, tone_of

_BOX = (
    "font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;"
    "color:var(--jp-ui-font-color1,inherit);line-height:1.5"
)


def badge(text: str, color: str) -> str:
    """A coloured pill with ``text``."""
    return (
        f'<span style="background:{color};color:#fff;border-radius:9px;padding:1px 8px;'
        f'font-size:12px;font-weight:600">{escape(text)}</span>'
    )


def bar(fraction: float, label: str, color: str = "#2b6cb0") -> str:
    """A horizontal bar filled to ``fraction`` (0..1) with ``label`` beside it."""
    percent = max(0.0, min(1.0, fraction)) * 100
    return (
        '<div style="display:flex;align-items:center;gap:8px">'
        '<div style="flex:0 0 160px;height:10px;border-radius:5px;'
        'background:var(--jp-layout-color3,#ddd);overflow:hidden">'
        f'<div style="width:{percent:.0f}%;height:100%;background:{color}"></div></div>'
        f"<span>{escape(label)}</span></div>"
    )


def _amount(text: str | None) -> Decimal | None:
    if text is None:
        return None
    try:
        return parse_quantity(text)
    except ValueError:
        return None


def queue_rows(queue: QueueSummary) -> str:
    """One queue: name, default mark, counts and a headroom bar per resource."""
    data = queue.to_json()
    title = f"<b>{escape(queue.name)}</b>"
    if queue.default:
        title += " " + badge("default", "#4a5568")
    title += (
        f' <span style="opacity:.7">→ {escape(queue.cluster_queue)} · '
        f"{queue.pending} pending · {queue.admitted} admitted</span>"
    )
    rows = [f"<div>{title}</div>"]
    if queue.multikueue is not None:
        rows.append(f'<div class="jp-dw-multikueue">{escape(queue.multikueue.sentence)}</div>')
    if not queue.quota_visible:
        rows.append(f'<div style="opacity:.7">quota hidden: {escape(queue.hint or "")}</div>')
    for resource in data["resources"]:
        nominal = _amount(resource["max_obtainable"]) or _amount(resource["nominal"])
        headroom = _amount(resource["headroom"])
        name = f"{resource['resource']} ({resource['flavor']})"
        if nominal is None or headroom is None:
            rows.append(f"<div>{escape(name)}: {escape(str(resource['used']))} in use</div>")
            continue
        used = max(Decimal(0), nominal - headroom)
        fraction = float(used / nominal) if nominal else 1.0
        rows.append(
            bar(fraction, f"{name}: {resource['headroom']} free of {nominal_text(resource)}")
        )
    return "".join(rows)


def nominal_text(resource: dict[str, Any]) -> str:
    """What a queue could get at most (its nominal quota, or more with borrowing)."""
    return str(resource.get("max_obtainable") or resource.get("nominal"))


def queues_html(queues: QueueList) -> str:
    """Every queue of the namespace."""
    if not queues.queues:
        return f'<div style="{_BOX}">No LocalQueues in namespace {escape(queues.namespace)}.</div>'
    parts = [f'<div style="margin:4px 0 10px">{queue_rows(q)}</div>' for q in queues.queues]
    if queues.priority_classes:
        names = ", ".join(f"{c.name} ({c.value})" for c in queues.priority_classes)
        parts.append(f'<div style="opacity:.8">priorities: {escape(names)}</div>')
    return f'<div style="{_BOX}">{"".join(parts)}</div>'


def queue_html(queue: QueueSummary) -> str:
    return f'<div style="{_BOX}">{queue_rows(queue)}</div>'


def fit_html(result: FitResult) -> str:
    """The verdict, its sentence and the suggestion."""
    verdict = result.assessment
    parts = [
        badge(verdict.verdict, color_of("verdict", verdict.verdict)),
        f" {escape(verdict.message)}",
    ]
    if result.suggestion is not None:
        parts.append(f'<div style="margin-top:4px">💡 {escape(result.suggestion.message)}</div>')
    return f'<div style="{_BOX}">{"".join(parts)}</div>'


_time = timestamp


def clock_html(at: datetime) -> str:
    """A time of day in HTML the kernel draws. The kernel cannot know the reader's locale or
    time zone (the widgets and the sidebar, drawn by the browser, use them: ``clock.js``), so
    it writes the kernel's own zone's 24-hour time and names the zone, never a bare time in
    another zone than the reader's; the exact instant is in ``datetime`` and on hover."""
    local = at.astimezone()
    instant = at.isoformat().replace("+00:00", "Z")
    return (
        f'<time datetime="{escape(instant)}" title="{escape(instant)}">'
        f"{local.strftime('%H:%M:%S')} {escape(local.tzname() or '')}</time>"
    )


def duration(seconds: float) -> str:
    """``42s``, ``3m 5s``, ``2h 10m``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60}m"


def timeline_html(milestones: tuple[Milestone, ...] | list[Milestone]) -> str:
    """Each milestone in words with its time and the time since the previous one."""
    rows = []
    previous: datetime | None = None
    for milestone in milestones:
        at = _time(milestone.time)
        step = f" (+{duration((at - previous).total_seconds())})" if at and previous else ""
        clock = clock_html(at) if at else "—"
        words = milestone_words(milestone.name)
        rows.append(
            f"<li>{escape(words[:1].upper() + words[1:])} "
            f"<span style='opacity:.7'>{clock}{step}</span></li>"
        )
        previous = at or previous
    return f'<ol style="margin:4px 0;padding-left:20px">{"".join(rows)}</ol>'


def span_tone(span: Span) -> str:
    """The tone a span is drawn in, by timeline_bar.js's ``spanTone`` rule: a wait for Kueue
    (tones.js's ``span`` table) waits, a start-up under way is in progress, one done is ok,
    one the run's ending cut short is neutral."""
    if tone_of("span", span.step.split(":")[0]) == "wait":
        return "wait"
    if span.current:
        return "progress"
    return "ok" if span.done else "neutral"


def timeline_bar_html(timeline: Timeline, now: datetime | None = None) -> str:
    """The spans as one bar, as the widget and the sidebar draw them (widths by duration, a
    minimum share each; the span under way measured to ``now``), and what ended the run."""
    now = now or datetime.now(timezone.utc)
    lengths: list[float | None] = []
    for span in timeline.spans:
        start = _time(span.start)
        running = span.current and start is not None
        lengths.append((now - start).total_seconds() if running and start else span.seconds)
    total = sum(x or 0 for x in lengths)
    shares = [max((x or 0) / total if total else 0, 0.08) for x in lengths]
    cells = []
    for span, length, share in zip(timeline.spans, lengths, shares, strict=True):
        label = span.words + (f" ({span.detail})" if span.detail else "")
        label += f" {duration(length)}" if length is not None else ""
        label += " so far" if span.current else ""
        color = tone_color(span_tone(span))
        cells.append(
            f'<div title="{escape(label)}" style="flex:{share / sum(shares):.4f} 1 0;min-width:0;'
            f"background:{color};color:#fff;padding:0 4px;white-space:nowrap;overflow:hidden;"
            f'text-overflow:ellipsis">{escape(label)}</div>'
        )
    bar = (
        '<div style="display:flex;gap:1px;max-width:520px;height:20px;border-radius:4px;'
        f'overflow:hidden;font-size:11px;line-height:20px;margin:4px 0">{"".join(cells)}</div>'
    )
    ending = timeline.ending
    if ending is not None:
        ended = _time(ending.time)
        when = f" at {clock_html(ended)}" if ended else ""
        bar += f"<div style='opacity:.8'>{escape(milestone_words(ending.name))}{when}</div>"
    return bar


def said(record: Summarized) -> str:
    """Kueue's message in one line (its summary), the whole of it on expand; or the message."""
    if record.summary is None:
        return escape(record.message or "")
    return (
        f"{escape(record.summary)} <details style='display:inline'><summary>Kueue's message"
        f"</summary>{escape(record.message or '')}</details>"
    )


def checks_html(checks: tuple[AdmissionCheckStatus, ...]) -> str:
    """Each admission check with its state and its controller's message."""
    rows = "".join(
        f"<li>admission check <b>{escape(c.name)}</b>: {escape(c.state)}"
        + (f" — {escape(c.message)}" if c.message else "")
        + "</li>"
        for c in checks
    )
    return f'<ul style="margin:2px 0;padding-left:20px">{rows}</ul>' if rows else ""


def preemptor_words(preempted_by: PreemptedBy) -> str:
    """``Ray cluster big``, or ``workload <uid> (job <uid>)`` when it is not one of ours."""
    if preempted_by.name:
        return f"Ray cluster {preempted_by.name}"
    job = f" (job {preempted_by.job_uid})" if preempted_by.job_uid else ""
    return f"workload {preempted_by.workload_uid or 'unknown'}{job}"


_LABELS = {"cpu": "CPU", "memory": "Memory"}


def _order(resource: str) -> tuple[int, str]:
    rank = {"cpu": 0, "memory": 1}.get(resource, 2 if is_gpu(resource) else 3)
    return rank, resource


def _label(resource: str) -> str:
    return _LABELS.get(resource) or ("GPU" if is_gpu(resource) else resource)


def _count(n: int | None, one: str, many: str) -> str:
    return f"{many} unknown" if n is None else f"{n} {one if n == 1 else many}"


def usage_html(usage: ClusterUsage | None, idle_since: str | None) -> str:
    """Used of held per resource (the held amount and the reason when the use is unknown,
    never a zero), the idle line and Ray's load of a cluster or a job: the sidebar's words
    (``usage_bar.js``)."""
    if usage is None:
        return ""
    rows = []
    if not usage.resources and usage.metrics_reason:  # nothing held here (on a worker, say)
        rows.append(f'<div style="opacity:.7">use unknown: {escape(usage.metrics_reason)}</div>')
    for resource in sorted(usage.resources, key=_order):
        use = usage.resources[resource]
        label, held = _label(resource), shown_amount(resource, use.held)
        if use.used is None:
            why = (
                usage.ray_reason or "only Ray tells a GPU's use, and it has not yet"
                if is_gpu(resource)
                else usage.metrics_reason or "not measured yet"
            )
            rows.append(
                f"<div>{escape(label)} {escape(held)} held"
                f' <span style="opacity:.7">— use unknown: {escape(why)}</span></div>'
            )
        else:
            by = " by Ray" if is_gpu(resource) else ""
            share = float(use.used / use.held) if use.held > 0 else 0.0
            rows.append(
                bar(
                    share,
                    f"{label} {shown_amount(resource, use.used)} of {held} used{by}",
                    "#2b6cb0",
                )
            )
    if usage.idle:
        since = _time(idle_since)
        minutes = (
            f" {int((datetime.now(since.tzinfo) - since).total_seconds() // 60)} min"
            f" (since {clock_html(since)})"
            if since
            else ""
        )
        holding = " and ".join(
            f"{shown_amount(r, usage.resources[r].held)} {_label(r)}"
            for r in sorted(usage.resources, key=_order)
            if r == "cpu" or is_gpu(r)
        )
        rows.append(
            f'<div class="jp-dw-idle" style="color:{color_of("state", "queued")}">Idle{minutes}'
            f"{', holding ' + escape(holding) if holding else ''}</div>"
        )
    ray = usage.ray
    if ray is not None:
        parts = []
        for name in ("CPU", "GPU"):
            pair = (ray.resources or {}).get(name)
            if pair is not None and (name == "CPU" or pair[1] > 0):
                parts.append(
                    f"{shown_amount('', pair[0])} of {shown_amount('', pair[1])} {name} in use"
                )
        parts.append(f"{_count(ray.jobs_running, 'job', 'jobs')} running")
        if ray.jobs_pending:
            parts.append(f"{_count(ray.jobs_pending, 'job', 'jobs')} pending")
        parts.append(_count(ray.actors_alive, "actor", "actors"))
        rows.append(f'<div style="opacity:.7">Ray: {escape(", ".join(parts))}</div>')
    elif usage.ray_reason:
        rows.append(f'<div style="opacity:.7">Ray: {escape(usage.ray_reason)}</div>')
    return f'<div class="jp-dw-usage">{"".join(rows)}</div>' if rows else ""


def placement_html(placement: Placement | None) -> str:
    """Where MultiKueue sent a workload (the worker cluster it runs on), in one line."""
    if placement is None:
        return ""
    return f'<div class="jp-dw-placement">&#8658; {escape(placement.sentence)}</div>'


def title_html(name: str, state: str, queue: str | None) -> str:
    """A workload's first line: its name, its state's badge and its queue."""
    return (
        f"<div><b>{escape(name)}</b> {badge(state, color_of('state', state))}"
        f' <span style="opacity:.7">queue {escape(queue or "?")}</span></div>'
    )


def context_html(mode: str, why: str, session: Mapping[str, Any]) -> str:
    """``dw.context()``: how the kernel connects, who it is, where, and the watches' health."""
    identity = session.get("identity") or {}
    health = (session.get("health") or {}).get("state") or "?"
    rows = (
        ("Connection", f"{'through the Jupyter server' if mode == 'server' else 'its own'}"),
        ("Why", why),
        ("Namespace", session.get("namespace") or "?"),
        ("Identity", identity.get("username") or "?"),
        ("API server", session.get("api_server") or "?"),
        ("Kueue", session.get("kueue_api") or "not installed"),
        ("Watches", health),
    )
    cells = "".join(
        f'<tr><th style="text-align:left;padding-right:1em">{escape(k)}</th>'
        f"<td>{escape(str(v))}</td></tr>"
        for k, v in rows
    )
    return f"<table>{cells}</table>"


def cluster_html(info: ClusterInfo) -> str:
    """State badge, Kueue's reason and position while queued, workers bar, usage (used of
    held, idle, Ray's load), timeline."""
    status = info.snapshot
    parts = [title_html(status.name, status.state, status.queue), placement_html(status.placement)]
    if not info.freshness.live:  # the state below is the last known one: say so
        when = info.freshness.to_json()["since"] or ""
        parts.append(
            f'<div style="background:#fefcbf;color:#744210">{escape(info.freshness.state)} '
            f"since {escape(when)}: {escape(info.freshness.reason or '')} — last known state"
            "</div>"
        )
    if info.ray_auth is not None and info.ray_auth.warning:
        parts.append(
            f'<div class="jp-dw-auth-warning" style="background:#fed7d7;color:#742a2a">'
            f"&#9888; {escape(info.ray_auth.warning)}</div>"
        )
    if status.state == "queued":
        where = (
            f"position {status.position_in_local_queue + 1} in the queue · "
            if status.position_in_local_queue is not None
            else ""
        )
        parts.append(f"<div>{escape(where)}{escape(status.reason or '')}: {said(status)}</div>")
    elif status.reason or status.message:
        parts.append(f"<div>{escape(status.reason or '')} {said(status)}</div>")
    if status.preempted_by is not None:
        who = escape(preemptor_words(status.preempted_by))
        parts.append(f"<div><b>preempted by</b> {who}</div>")
    parts.append(checks_html(status.admission_checks))
    desired = max(status.workers_desired, 1)
    worker = status.placement.worker_cluster if status.placement else None
    # On a worker: KubeRay's counts there, copied back (no pod of it is in this cluster).
    on = f" on worker cluster {worker}" if worker else ""
    parts.append(
        bar(
            status.workers_ready / desired,
            f"{status.workers_ready}/{status.workers_desired} workers ready{on}",
        )
    )
    parts.append(usage_html(info.usage, info.idle_since))
    parts.append(timeline_bar_html(info.timeline))
    parts.append(
        f"<details><summary>{len(info.milestones)} milestones</summary>"
        f"{timeline_html(info.milestones)}</details>"
    )
    if info.dashboard_url is not None:
        where = f"<code>{escape(info.dashboard_url)}</code>"
    elif info.dashboard_note is not None:
        where = escape(info.dashboard_note)
    else:
        where = (
            "the proxy is turned off on this server; "
            f"<code>kubectl port-forward svc/{escape(status.dashboard.service)} "
            f"{status.dashboard.port}</code>"
        )
    parts.append(f'<div style="opacity:.7">dashboard: {where}</div>')
    return f'<div style="{_BOX}">{"".join(parts)}</div>'


def kind_job_html(info: JobInfo) -> str:
    """A RayJob's or TrainJob's record: its state badge and queue, Kueue's words while it
    waits, its life as a timeline bar, what its pods use of what they hold."""
    parts = [title_html(info.name, info.state, info.queue), placement_html(info.placement)]
    if info.reason or info.message:
        parts.append(f"<div>{escape(info.reason or '')} {said(info)}</div>")
    parts.append(timeline_bar_html(info.timeline))
    parts.append(usage_html(info.usage, info.idle_since))
    return f'<div class="jp-dw-job" style="font-size:13px">{"".join(parts)}</div>'


def clusters_html(clusters: ClusterList) -> str:
    """Every Ray cluster of the namespace."""
    if not clusters.clusters:
        return (
            f'<div style="{_BOX}">No Ray clusters in namespace {escape(clusters.namespace)}.</div>'
        )
    return "".join(cluster_html(info) for info in clusters.clusters)


def workload_words(info: WorkloadInfo) -> str:
    """Where a Workload stands: its position while it waits, Kueue's reason and message, the
    preemptor, or the quota it holds."""
    parts = []
    if info.position_in_local_queue is not None:
        parts.append(f"position {info.position_in_local_queue + 1}")
    if info.state in ("queued", "evicted", "preempted", "rejected", "suspended") and (
        info.reason or info.message
    ):
        parts.append(": ".join(w for w in (info.reason, info.message) if w))
    if info.preempted_by is not None:
        parts.append(f"preempted by {preemptor_words(info.preempted_by)}")
    if info.placement is not None and info.placement.worker_cluster is not None:
        parts.append(f"on worker cluster {info.placement.worker_cluster}")
    elif info.placement is not None and info.placement.nominated_clusters:
        parts.append(f"offered to {', '.join(info.placement.nominated_clusters)}")
    held = info.to_json()["resources"]
    if held:
        parts.append(
            "holds "
            + "; ".join(
                ", ".join(f"{amount} {resource}" for resource, amount in amounts.items())
                + f" ({flavor})"
                for flavor, amounts in held.items()
            )
        )
    return " · ".join(parts)


def workload_row(info: WorkloadInfo) -> str:
    """One Workload: owner kind and name, state badge, where it stands."""
    owner = f"{info.owner.kind} {info.owner.name}" if info.owner else f"Workload {info.name}"
    return (
        f'<div class="jp-dw-workload"><b>{escape(owner)}</b> '
        f"{badge(info.state, color_of('state', info.state))} "
        f'<span style="opacity:.8">{escape(workload_words(info))}</span></div>'
    )


def workloads_html(workloads: WorkloadList) -> str:
    """The namespace's Workloads, per queue, in Kueue's order."""
    if not workloads.workloads:
        return (
            f'<div style="{_BOX}">No Workloads in namespace {escape(workloads.namespace)}'
            f"{' for these filters' if workloads.queue or workloads.kind else ''}.</div>"
        )
    parts = []
    for queue in dict.fromkeys(w.queue for w in workloads.workloads):
        parts.append(f'<div style="margin-top:6px"><b>queue {escape(queue or "(none)")}</b></div>')
        parts.extend(workload_row(w) for w in workloads.workloads if w.queue == queue)
    return f'<div style="{_BOX}">{"".join(parts)}</div>'
