"""REST handlers for the Kueue-managed jobs made over the shared core
(:class:`jupyter_dw.core.podset_jobs.PodSetJobService`): KubeRay RayJobs
(``{base_url}dw/api/rayjobs``) and Kubeflow Trainer TrainJobs (``{base_url}dw/api/trainjobs``),
each the same shape as the cluster handlers."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .handlers import FIT, IDEMPOTENCY_KEY_HEADER, DWHandler


class _Collection(DWHandler):
    """``GET <jobs>`` (list) and ``POST <jobs>`` (create, 201 with the new job; also for a
    retry whose ``Idempotency-Key`` made the existing one)."""

    service = ""
    """The :class:`~jupyter_dw.core.services.DWCore` attribute: ``rayjobs``, ``trainjobs``."""

    @property
    def jobs(self) -> Any:
        return getattr(self.core, self.service)

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """See the service's ``list``."""
        await self.call(self.jobs.list)

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """See the service's ``create``."""
        key = self.request.headers.get(IDEMPOTENCY_KEY_HEADER)
        await self.call_with_body(lambda body: self.jobs.create(body, key), status=201)


class _Member(DWHandler):
    """``GET <jobs>/{name}``, ``DELETE <jobs>/{name}`` and ``POST <jobs>/fit`` (one route:
    tornado routes by path only, and ``fit`` is also a valid job name)."""

    service = ""

    @property
    def jobs(self) -> Any:
        return getattr(self.core, self.service)

    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        """``POST <jobs>/fit``: see the service's ``fit``."""
        if name != FIT:
            raise web.HTTPError(
                405, f"POST is only for {self.service} (create) and {self.service}/fit"
            )
        await self.call_with_body(self.jobs.fit)

    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """See the service's ``get``."""
        await self.call(lambda: self.jobs.get(name))

    @web.authenticated
    @authorized
    async def delete(self, name: str) -> None:
        """See the service's ``delete``."""
        await self.call(lambda: self.jobs.delete(name))


class RayJobsHandler(_Collection):
    """``GET rayjobs``, ``POST rayjobs`` (``KubeRayJobService``)."""

    service = "rayjobs"


class RayJobHandler(_Member):
    """``GET``/``DELETE rayjobs/{name}``, ``POST rayjobs/fit``."""

    service = "rayjobs"


class TrainJobsHandler(_Collection):
    """``GET trainjobs``, ``POST trainjobs`` (``TrainJobService``)."""

    service = "trainjobs"


class TrainJobHandler(_Member):
    """``GET``/``DELETE trainjobs/{name}``, ``POST trainjobs/fit``."""

    service = "trainjobs"
