"""HTML of a cluster's Ray job list in a notebook (the domain's :class:`JobList` knows no HTML:
:mod:`.formatters` registers this with IPython's formatters)."""

from __future__ import annotations

import html
import time

from ..domain.ray_jobs import JobList
from .display import badge, duration
from .tones import color_of


def jobs_html(jobs: JobList) -> str:
    """A table: id, entrypoint, state, duration, Ray's message."""
    if not jobs.jobs:
        return f"<p>No Ray jobs on cluster <code>{html.escape(jobs.cluster)}</code> yet.</p>"
    now = int(time.time() * 1000)
    rows = "".join(
        "<tr>"
        f"<td><code>{html.escape(job.submission_id)}</code></td>"
        f"<td><code>{html.escape(job.command[:120])}</code></td>"
        f"<td>{badge(job.status, color_of('job', job.status))}</td>"
        f"<td>{duration((job.duration_ms(now) or 0) / 1000) if job.start_time else ''}</td>"
        f"<td>{html.escape((job.message or '')[:200])}</td>"
        "</tr>"
        for job in jobs.jobs
    )
    return (
        f"<b>Ray jobs on {html.escape(jobs.cluster)}</b><table><tr><th>id</th>"
        f"<th>entrypoint</th><th>state</th><th>duration</th><th>message</th></tr>{rows}</table>"
    )
