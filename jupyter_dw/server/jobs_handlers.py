"""REST handlers of a cluster's Ray jobs, under ``{base_url}dw/api/clusters/{name}/jobs``.
The server adds the cluster's token upstream, so it never reaches the browser
(docs/explanation/architecture.md).
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from .handlers import DWHandler


class JobsHandler(DWHandler):
    """``GET clusters/{name}/jobs``: the cluster's Ray jobs, newest first."""

    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """See :meth:`jupyter_dw.core.ray_jobs.RayJobService.list`."""
        await self.call(lambda: self.core.jobs.list(name))


class JobLogsHandler(DWHandler):
    """``GET clusters/{name}/jobs/{id}/logs``: the job's log so far (its end when long)."""

    @web.authenticated
    @authorized
    async def get(self, name: str, job_id: str) -> None:
        """See :meth:`jupyter_dw.core.ray_jobs.RayJobService.logs`."""
        await self.call(lambda: self.core.jobs.logs(name, job_id))


class JobStopHandler(DWHandler):
    """``POST clusters/{name}/jobs/{id}/stop``: ask Ray to stop the job."""

    @web.authenticated
    @authorized
    async def post(self, name: str, job_id: str) -> None:
        """See :meth:`jupyter_dw.core.ray_jobs.RayJobService.stop`."""
        await self.call(lambda: self.core.jobs.stop(name, job_id))
