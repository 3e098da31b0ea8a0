"""Ray jobs from a kernel: :class:`RayJobHandle`, built on Ray's Jobs REST API through the
kernel's core (:class:`jupyter_dw.core.ray_jobs.RayJobService`), so it works without Ray
installed. The cluster's token is read from its Secret by the kernel's own session and only
ever sent to the cluster's head in a header: it is in no return value, repr or widget state.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import JobFailed
from ..domain.ray_jobs import JobList, RayJob, failure_reason
from .runtime import runtime

WAIT_TIMEOUT = 3600.0
STATUS_POLL_SECONDS = 0.5
"""How often a wait re-reads the job when its log stream broke off before the job ended (Ray
has no status stream: its log stream ending is the signal the job ended)."""


def submit_job(cluster: str, request: Mapping[str, Any]) -> RayJobHandle:
    """Submit ``request`` (Ray's Jobs API body: ``entrypoint`` and the options set) to cluster
    ``cluster``'s Ray; see :meth:`jupyter_dw.notebook.api.RayClusterHandle.submit_job`."""
    job = runtime().core.jobs.submit(cluster, request)
    return RayJobHandle(cluster, job.submission_id, _last=job)


def list_jobs(cluster: str) -> JobList:
    """The cluster's Ray jobs, newest first (a table in a notebook)."""
    from .formatters import register

    register()  # in a shell made after `import jupyter_dw`, the list is a table too
    return runtime().core.jobs.list(cluster)


@dataclass
class RayJobHandle:
    """One Ray job of a cluster, by its submission id. Every read asks the cluster's head."""

    cluster: str
    submission_id: str
    _last: RayJob | None = field(default=None, repr=False, compare=False)

    def status(self) -> RayJob:
        """The job now: ``status`` (PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED),
        ``message``, ``start_time``, ``end_time`` and Ray's other fields."""
        self._last = runtime().core.jobs.get(self.cluster, self.submission_id)
        return self._last

    def logs(self) -> str:
        """The log so far (its end when very long)."""
        return runtime().core.jobs.logs(self.cluster, self.submission_id).logs

    async def tail(self) -> AsyncIterator[str]:
        """The log as it is written, chunk by chunk (the log so far first), until the job
        has ended: ``async for chunk in job.tail(): print(chunk, end="")``."""
        jobs = runtime().core.jobs
        client = await asyncio.to_thread(jobs.client, self.cluster)
        async for chunk in jobs.tail(self.cluster, self.submission_id, client):
            yield chunk

    def stop(self) -> bool:
        """Ask Ray to stop the job; False when it had ended already."""
        return runtime().core.jobs.stop(self.cluster, self.submission_id).stopped

    async def wait_async(self, timeout: float = WAIT_TIMEOUT) -> RayJob:
        """``await`` the end of the job, keeping the kernel and its widgets live. Woken by the
        end of the job's log stream. Returns the job when it SUCCEEDED; raises
        :class:`JobFailed` (Ray's message and the last log lines) when it FAILED or was
        STOPPED, and ``TimeoutError`` after ``timeout`` seconds."""
        return await asyncio.wait_for(self._ended(), timeout)

    def wait(self, timeout: float = WAIT_TIMEOUT) -> RayJob:
        """Block until the job has ended (for scripts; in a notebook prefer ``await
        job.wait_async()``). Raises like :meth:`wait_async`."""
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["job"] = asyncio.run(self.wait_async(timeout))
            except BaseException as err:  # handed to the caller's thread
                outcome["error"] = err

        thread = threading.Thread(target=run, name=f"dw-wait-{self.submission_id}", daemon=True)
        thread.start()
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["job"]

    async def _ended(self) -> RayJob:
        async for _ in self.tail():
            pass  # the stream ends when the job has
        job = await asyncio.to_thread(self.status)
        while not job.terminal:  # the stream broke off: read the state until it ends
            await asyncio.sleep(STATUS_POLL_SECONDS)
            job = await asyncio.to_thread(self.status)
        if job.status != "SUCCEEDED":
            raise self.failure(job, await asyncio.to_thread(self.logs))
        return job

    def failure(self, job: RayJob, logs: str) -> JobFailed:
        """The error of an ended job that did not succeed."""
        return JobFailed(
            f"Ray job {self.submission_id} on cluster {self.cluster} {job.status}",
            failure_reason(job, logs),
            "See its whole log with job.logs(); fix the entrypoint and submit again.",
            job,
        )

    def view(self) -> Any:
        """A live :class:`jupyter_dw.notebook.job_view.JobView` of this job."""
        from .job_view import JobView

        return JobView(self)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.view())
