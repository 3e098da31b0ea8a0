"""The benchmark tables of the docs' benchmarks page, rendered from ``benchmarks/results/*.json``
(``make bench``).

A table lives in :data:`PAGE` (``docs/explanation/benchmarks.md``) between
``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``; its
rows come from ``results/bench_NAME.json`` (written by :mod:`benchmarks.run_all`). A marker
pair without a result file is left as it is, so a partial run changes only what it measured.

Usage: ``.venv/bin/python -m benchmarks.readme_tables`` (after a run).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PAGE = HERE.parent / "docs" / "explanation" / "benchmarks.md"
"""The page whose tables the benchmarks' results render: each table beside its command."""

Result = dict[str, Any]


LOAD_CONNECTIONS = {"own": "each on its own", "server": "through the server"}
LOAD_WINDOWS = {
    "few": "2 widgets a kernel, 1 socket",
    "many": "more widgets and sockets",
    "none": "the same, no Workload depending on Kueue",
}


def _load(what: Result) -> str:
    f = what["figures"]
    rows = [
        "| kernels connect | idle window | Workloads | widgets / kernels | sockets | requests "
        "besides watches | … of the re-check | … a minute per session | … others | watches "
        "opened | watches open |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def row(connection: str, title: str, p: Result) -> str:
        per_session = p.get("recheck_per_process_per_minute")
        return (
            f"| {connection} | {title} ({p['seconds']:g} s) | "
            f"{'yes' if p.get('workloads', True) else 'no'} | {p['widgets']} / {f['kernels']} | "
            f"{p['sockets']} | {p['requests_besides_watches']} | {p['recheck_requests']} | "
            f"{'—' if per_session is None else f'{per_session:.1f}'} | {p['other_requests']} | "
            f"{p['watches_opened']} | {p['watches_open_at_end']} |"
        )

    for connection, phases in f["connections"].items():
        if connection == "server" and "before" in f:
            rows.append(
                row(
                    f"{LOAD_CONNECTIONS['server']}, baseline, same run",
                    "discovery and Kueue's probe at every re-check",
                    f["before"],
                )
            )
        for phase, title in LOAD_WINDOWS.items():
            if phase in phases:
                rows.append(row(LOAD_CONNECTIONS.get(connection, connection), title, phases[phase]))
    return "\n".join(rows)


def _memory(what: Result) -> str:
    f = what["figures"]
    rows = [
        f"| RSS added by {f['workloads']:,} Workloads and {f['pods']:,} pods | median | runs |",
        "| --- | --- | --- |",
    ]
    if "jupyter_dw" in f:
        rows += [
            f"| jupyter_dw's watch caches | {f['jupyter_dw']['added_mib']} MiB | "
            f"{', '.join(str(r) for r in f['jupyter_dw']['runs'])} |",
            f"| baseline, same run: the same objects as full dicts | "
            f"{f['baseline']['added_mib']} MiB | "
            f"{', '.join(str(r) for r in f['baseline']['runs'])} |",
        ]
    words = {
        "server": "a kernel showing a QueueBoard and a ClusterStatus, through its server",
        "server-status": "a kernel showing a ClusterStatus only, through its server",
        "own": "baseline, same run: the same kernel and widgets on its own connection",
    }
    for mode, word in words.items():
        if mode in f.get("kernels", {}):
            k = f["kernels"][mode]
            rows.append(
                f"| {word} (over a bare kernel) | {k['added_mib']} MiB | "
                f"{', '.join(str(r) for r in k['runs'])} |"
            )
    sockets = f.get("kernels", {}).get("sockets", {})
    for mode, word in SOCKET_WORDS.items():
        if mode in sockets:
            s = sockets[mode]
            rows.append(
                f"| {word} | {s['server_mib_per_socket']} MiB | snapshot "
                f"{s['snapshot_bytes']:,} bytes |"
            )
    return "\n".join(rows)


SOCKET_WORDS = {
    "rows": "the server, per events socket of a kernel's QueueBoard (`?workloads=rows`)",
    "1": "the server, per events socket sent every Workload (`?workloads=1`, the sidebar's)",
}


def _startup(what: Result) -> str:
    f = what["figures"]
    return "\n".join(
        [
            f"| `jupyter server` start ({f['pairs']} pairs) | median | max |",
            "| --- | --- | --- |",
            f"| with jupyter_dw: spawn → `GET api/status` | {f['with_extension']['median_ms']} ms "
            f"| {f['with_extension']['max_ms']} ms |",
            f"| baseline, same run: without it | {f['without_extension']['median_ms']} ms | "
            f"{f['without_extension']['max_ms']} ms |",
            f"| added (per pair) | {f['added']['median_ms']} ms | |",
            f"| then the first `GET dw/api/queues` | {f['first_answer']['median_ms']} ms | "
            f"{f['first_answer']['max_ms']} ms |",
        ]
    )


STEP_NAMES = {
    "import": "first cell: `import`",
    "list_queues": "list queues",
    "create": "create a cluster",
    "wait_ready": "learn it is ready",
    "list_clusters": "list clusters with status",
    "delete": "delete it",
}


CODEFLARE_SIDES = {
    "jupyter_dw": "jupyter_dw, kernel of its server",
    "jupyter_dw_own": "jupyter_dw, kernel on its own",
}


def _codeflare(what: Result) -> str:
    f = what["figures"]
    version = f.get("codeflare_sdk_version") or "not installed"
    sides = [side for side in (*CODEFLARE_SIDES, "codeflare_sdk") if side in f]
    titles = {**CODEFLARE_SIDES, "codeflare_sdk": f"codeflare-sdk {version}"}
    header = " | ".join(f"{titles[side]}: requests + watches | time" for side in sides)
    rows = [
        f"| step | {header} | codeflare-sdk cannot |",
        "| --- " * (2 + 2 * len(sides)) + "|",
    ]
    cannot = f.get("cannot", {})
    for step, title in STEP_NAMES.items():
        cells = []
        for side in sides:
            s = f[side].get(step)
            if s is None:
                cells += ["—", "—"]
                continue
            cells += [_counted(s), _step_time(s)]
        rows.append(f"| {title} | {' | '.join(cells)} | {cannot.get(step, '')} |")
    start = (f.get("jupyter_dw") or {}).get("server_start")
    if start:
        cells = [_counted(start), f"{start['seconds']:.2f} s"] + ["—", "—"] * (len(sides) - 1)
        rows.append(
            f"| before: the server's start (the pod's, before a notebook opens) | "
            f"{' | '.join(cells)} | |"
        )
    return "\n".join(rows)


def _counted(s: Result) -> str:
    checks = s.get("session_checks")
    plural = "s" if checks != 1 else ""
    counted = f"{s['requests']:g} ({checks:g} check{plural})" if checks else f"{s['requests']:g}"
    return f"{counted} + {s['watches']:g}"


def _step_time(s: Result) -> str:
    seconds = f"{s['seconds']:.3f} s"
    if "api_import_seconds" in s:
        seconds += f" (importing the API: {s['api_import_seconds']:.3f} s)"
    if "ready_to_known_ms" in s:
        ms = s["ready_to_known_ms"]
        known = f"{ms:.1f} ms" if abs(ms) < 1000 else f"{ms / 1000:.2f} s"
        seconds += f" (Ready → known: {known})"
    return seconds


USAGE_ROWS = {
    "off": "(a) usage off (`usage_interval = 0`): baseline, same run",
    "usage": "(b) usage on, every {interval:g} s",
    "rule": "(c) usage on + idle rule (`idle_cluster_timeout = {timeout:g}`)",
}


def _usage(what: Result) -> str:
    f = what["figures"]
    rows = [
        f"| {f['clusters']} clusters, {f['sockets']} tabs, per minute | window | requests "
        "besides watches | … metrics.k8s.io pods | … re-check | … others | watches opened | "
        "Ray calls per cluster | cluster messages per tab |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, title in USAGE_ROWS.items():
        c = f["configs"][name]
        label = title.format(interval=f["usage_interval"], timeout=f["idle_cluster_timeout"])
        rows.append(
            f"| {label} | {c['seconds']:g} s | {c['requests_per_minute']:.1f} | "
            f"{c['metrics_per_minute']:.1f} | {c['recheck_per_minute']:.1f} | "
            f"{c['others_per_minute']:.1f} | {c['watches_opened']} | "
            f"{c['ray_calls_per_cluster_per_minute']:.1f} | "
            f"{c['cluster_messages_per_socket_per_minute']:.1f} |"
        )
    return "\n".join(rows)


def _decode(what: Result) -> str:
    f = what["figures"]
    return "\n".join(
        [
            f"| events snapshot: {f['queues']} LocalQueues, {f['workloads']:,} Workloads, "
            f"{f['clusters']} clusters ({f['snapshot_kib']:,} KiB) | median of {f['rounds']} |",
            "| --- | --- |",
            f"| the server: `to_json` + `json.dumps` | {f['encode_ms']} ms |",
            f"| baseline, same run: `json.loads` (any client) | {f['parse_ms']} ms |",
            f"| the kernel: decoded into the core's objects (added) | {f['decode_ms']} ms |",
            f"| a `workload` message: `json.loads` / + decoded | {f['workload_parse_ms']} ms / "
            f"{f['workload_decode_ms']} ms |",
            f"| a `cluster` message: `json.loads` / + decoded | {f['cluster_parse_ms']} ms / "
            f"{f['cluster_decode_ms']} ms |",
        ]
    )


def _fleet(what: Result) -> str:
    f = what["figures"]
    rows = [
        "| workbenches (kernels) | window | requests besides watches, per minute (… re-check) "
        "| per workbench-minute | watches open: the fleet's / every client's | API server CPU "
        "| API server RSS | watch events sent, per s | Kueue CPU | servers + kernels, PSS |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    windows = [size[phase] for size in f["sizes"] for phase in ("idle", "churn", "fanout")]
    codeflare = f.get("codeflare")
    if codeflare:
        windows += [codeflare["baseline"], codeflare]
    for w in windows:
        api = w["kube-apiserver"]
        minutes = w["seconds"] / 60
        if w["phase"] == "codeflare":
            who = f"{w['users']} codeflare-sdk users, `wait_ready`"
        elif w["phase"] == "alone":
            who = "0 (the plane alone, just before)"
        else:
            who = f"{w['workbenches']} ({w['kernels']})"
        window = {
            "churn": f"churn: {w['changes']} changes",
            "fanout": f"fan-out: {w['changes']} flavor changes",
        }.get(w["phase"], w["phase"])
        rows.append(
            f"| {who} | {window}, {w['seconds']:.0f} s | "
            f"{w['requests_besides_watches'] / minutes:.1f} ({w['recheck_requests'] / minutes:.1f})"
            f" | {w['requests_per_workbench_minute']:.2f} | {w['watches_open_at_end']} / "
            f"{api['watches_open']} | {api['cores']:.3f} cores | {api['rss_mib']:,.0f} MiB | "
            f"{api['watch_events'] / w['seconds']:.1f} | {w['kueue']['cores']:.3f} cores | "
            f"{w['jupyter_servers']['pss_mib'] + w['kernel_processes']['pss_mib']:,.0f} MiB |"
        )
    return "\n".join(rows) + "\n\n" + _fleet_projection(f)


FLEET_LINES = {
    "requests_per_minute": ("requests besides watches, per minute", "{:,.1f}"),
    "watches_open": ("watches open (the workbenches')", "{:,.0f}"),
    "apiserver_watches_open": ("watches open (every client's)", "{:,.0f}"),
    "apiserver_cores": ("API server CPU, idle (cores)", "{:.3f}"),
    "apiserver_rss_mib": ("API server RSS (MiB)", "{:,.0f}"),
    "apiserver_goroutines": ("API server goroutines", "{:,.0f}"),
    "kueue_cores": ("Kueue CPU, idle (cores)", "{:.3f}"),
    "apiserver_cpu_ms_per_change": ("API server CPU per change (ms)", "{:,.1f}"),
    "kueue_cpu_ms_per_change": ("Kueue CPU per change (ms)", "{:,.1f}"),
    "watch_events_per_change": ("watch events sent per change", "{:,.1f}"),
    "watch_event_kib_per_change": ("… their KiB per change", "{:,.1f}"),
    "apiserver_cpu_ms_per_flavor_change": ("API server CPU per flavor change (ms)", "{:,.2f}"),
    "servers_cpu_ms_per_flavor_change": ("Jupyter servers' CPU per flavor change (ms)", "{:,.2f}"),
    "workbench_pss_mib": ("servers + kernels, PSS (MiB; in the pods)", "{:,.0f}"),
}


def _fleet_projection(f: Result) -> str:
    p = f["projection"]
    n = p["workbenches"]
    cf = (p.get("codeflare") or {}).get("at", {}).get(str(n), {})
    cf_cells = {
        "requests_per_minute": cf.get("requests_per_minute"),
        "watches_open": 0 if cf else None,
        "apiserver_cores": cf.get("apiserver_cores"),
    }
    rows = [
        f"| projected to {n:,} workbenches | fixed | per workbench | at {n:,} | worst residual "
        f"| {n:,} codeflare-sdk users waiting |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, (title, form) in FLEET_LINES.items():
        line = p["lines"][name]
        theirs = cf_cells.get(name)
        se = line.get("per_workbench_se")
        slope = f"{line['per_workbench']:.3g}" + (f" ± {se:.2g}" if se else "")
        at = f"**{form.format(line['at'])}**"
        if line.get("within_noise"):
            at = f"within the noise (≤ {form.format(line['at_most'])})"
        elif line["per_workbench"] < 0:
            # A cost that fell as the fleet grew (the machine's load moved under the run): no
            # growth was measured, and a negative projection would mean nothing.
            at = f"no growth measured (≤ {form.format(max(line['at_most'], line['fixed']))})"
        rows.append(
            f"| {title} | {form.format(line['fixed'])} | {slope} | {at} | "
            f"{line['worst_residual']:.3g} | {form.format(theirs) if theirs is not None else ''} |"
        )
    rows.append(
        f"| API server CPU per change (ms): the plane's and its workbench's, plus one event "
        f"per workbench at the flavor changes' cost | | | **{p['apiserver_ms_per_change']:,.1f}**"
        " | | |"
    )
    rows.append(
        f"| API server CPU while {p['changes_per_second']:g} changes/s (cores) | | | "
        f"**{p['apiserver_cores_churning']:.2f}** | | |"
    )
    return "\n".join(rows)


def _slope(t: Result) -> str:
    if t["slope_per_hour"] == 0 and not t["slope_se"]:
        return "0 (every sample the same)"
    se = f" ± {t['slope_se']:.2g}" if t["slope_se"] is not None else ""
    noise = ", within the noise" if t.get("within_noise") else ""
    return f"{t['slope_per_hour']:+.3g}{se}{noise}"


def _rise(t: Result, form: str) -> str:
    """A trend's largest rise between two samples, with when ("none": it never rose)."""
    rise, at = t.get("largest_rise"), t.get("largest_rise_at_seconds")
    if rise is None:  # runs measured before the rise was kept
        return ""
    return "none" if at is None else f"{form.format(rise)} ({at / 60:.0f} min)"


SOAK_SERIES = {
    "server_rss_mib": ("the Jupyter server: RSS (MiB)", "{:,.1f}"),
    "server_threads": ("… threads", "{:,.0f}"),
    "server_fds": ("… open file descriptors", "{:,.0f}"),
    "kernel_rss_mib": ("the long-lived kernel: RSS (MiB)", "{:,.1f}"),
    "kernel_threads": ("… threads", "{:,.0f}"),
    "kernel_fds": ("… open file descriptors", "{:,.0f}"),
}


def _soak(what: Result) -> str:
    f = what["figures"]
    warmup = f["warmup_seconds"] / 60
    calm = f.get("series_after_restarts")
    after = ""
    if calm:
        since = f"from {calm['since_seconds'] / 60:.0f} min (after the restarts)"
        after = (
            f" | slope per hour {since} | median slope per hour {since} | largest rise between "
            "two samples (at)"
        )
    rows = [
        f"| after the warm-up ({warmup:g} of {f['seconds'] / 60:.0f} min, a sample every "
        f"{f['interval_seconds']:g} s) | start (the baseline) | end | max | slope per hour "
        f"(± standard error){after} |",
        "| --- | --- | --- | --- | --- |" + (" --- | --- | --- |" if calm else ""),
    ]
    for name, (title, form) in SOAK_SERIES.items():
        t = f["series"][name]
        cells = [form.format(t[k]) for k in ("start", "end", "max")] + [_slope(t)]
        if calm:
            c = calm[name]
            cells.append(_slope(c))
            # Runs measured before the median slope and the rise were kept have neither.
            median = c.get("median_slope_per_hour")
            cells.append("" if median is None else f"{median:+.3g}" if median else "0")
            cells.append(_rise(c, form))
        rows.append(f"| {title} | {' | '.join(cells)} |")
    views, watches, left = f["views"], f["watches"], f["left_behind"]
    restarts = "; ".join(
        f"{name} at {r['at_seconds'] / 60:.0f} min: down {r['down_seconds']:g} s, views "
        f"{'marked ' + r['views_told'] + ', ' if r['views_told'] else ''}live again "
        f"{r['live_again_seconds']:g} s after"
        for name, r in f["restarts"].items()
    )
    objects = sum(len(left[k]) for k in ("rayclusters", "rayjobs", "workloads", "pods"))
    rows += [
        "",
        "| the loop | |",
        "| --- | --- |",
        f"| cycles (median, longest) | {f['cycles']} ({f['cycle_seconds_median']:g} s, "
        f"{f['cycle_seconds_max']:g} s) |",
        f"| changes owed to the open views / missed | {views['changes_owed']:,} / "
        f"**{views['misses']}** ({views['sockets_opened']} sockets and "
        f"{views['kernels_started']} kernels opened and closed on the way) |",
        f"| restarts | {restarts} |",
        f"| REST calls / retried | {f['rest']['calls']:,} / {sum(f['rest']['retried'].values())} |",
        f"| the server's watches after the warm-up / at the end | "
        f"{watches['server_after_warmup']} / {watches['server_at_end']} (every client's: "
        f"{watches['apiserver_after_warmup']} / {watches['apiserver_at_end']}) |",
        f"| left behind: objects, kernel processes, link files after the server stopped | "
        f"{objects}, {len(left['kernel_processes'])}, {len(left['link_files_after_stop'])} |",
        f"| load average before / during (min, median, max) / after | "
        f"{f['load_average_before'][0]:g} / {_during(f)} / {f['load_average_after'][0]:g} |",
    ]
    return "\n".join(rows)


def _during(f: Result) -> str:
    during = f.get("load_average_during")
    if not during:
        return "—"
    return f"{during['min']:.1f}, {during['median']:.1f}, {during['max']:.1f}"


TABLES: dict[str, Callable[[Result], str]] = {
    "load": _load,
    "memory": _memory,
    "startup": _startup,
    "codeflare": _codeflare,
    "fleet": _fleet,
    "usage": _usage,
    "decode": _decode,
    "soak": _soak,
}


def replace_between(text: str, name: str, table: str) -> str:
    """``text`` with the lines between the markers of ``name`` replaced by ``table``."""
    pattern = re.compile(
        rf"(<!-- bench:{name} -->\n).*?(\n<!-- /bench:{name} -->)", flags=re.DOTALL
    )
    if not pattern.search(text):
        raise ValueError(f"the page has no <!-- bench:{name} --> ... <!-- /bench:{name} -->")
    return pattern.sub(lambda m: m.group(1) + table + m.group(2), text, count=1)


def render(results: Path, page: Path = PAGE) -> list[str]:
    """Render every table whose result file exists and says the run succeeded; returns the
    names rendered."""
    text = page.read_text()
    rendered = []
    for name, table in TABLES.items():
        path = results / f"bench_{name}.json"
        if not path.exists():
            continue
        result = json.loads(path.read_text())
        if result.get("returncode") or "figures" not in result:
            continue
        text = replace_between(text, name, table(result))
        rendered.append(name)
    page.write_text(text)
    return rendered


if __name__ == "__main__":
    print("rendered:", ", ".join(render(HERE / "results")) or "none")
