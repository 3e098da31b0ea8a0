"""REST handlers for KubeRay RayJobs (``{base_url}dw/api/rayjobs``): the same shape as the
cluster handlers, over :class:`jupyter_dw.core.kuberay_jobs.KubeRayJobService`."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from .handlers import FIT, IDEMPOTENCY_KEY_HEADER, DWHandler


class RayJobsHandler(DWHandler):
    """``GET rayjobs`` (list) and ``POST rayjobs`` (create)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """See :meth:`jupyter_dw.core.kuberay_jobs.KubeRayJobService.list`."""
        await self.call(self.core.rayjobs.list)

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """See :meth:`jupyter_dw.core.kuberay_jobs.KubeRayJobService.create`; 201 with the new
        RayJob (also for a retry whose ``Idempotency-Key`` made the existing one)."""
        key = self.request.headers.get(IDEMPOTENCY_KEY_HEADER)
        await self.call_with_body(lambda body: self.core.rayjobs.create(body, key), status=201)


class RayJobHandler(DWHandler):
    """``GET rayjobs/{name}``, ``DELETE rayjobs/{name}`` and ``POST rayjobs/fit`` (one route:
    tornado routes by path only, and ``fit`` is also a valid RayJob name)."""

    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        """``POST rayjobs/fit``: see :meth:`KubeRayJobService.fit`."""
        if name != FIT:
            raise web.HTTPError(405, "POST is only for rayjobs (create) and rayjobs/fit")
        await self.call_with_body(self.core.rayjobs.fit)

    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """See :meth:`KubeRayJobService.get`."""
        await self.call(lambda: self.core.rayjobs.get(name))

    @web.authenticated
    @authorized
    async def delete(self, name: str) -> None:
        """See :meth:`KubeRayJobService.delete`."""
        await self.call(lambda: self.core.rayjobs.delete(name))
