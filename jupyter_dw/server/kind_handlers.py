"""REST handlers of every workload kind (:mod:`jupyter_dw.domain.kinds`), one pair of routes
per kind, made from its description: ``{base_url}dw/api/<plural>`` (``rayjobs``,
``trainjobs``) and ``<plural>/{name}``, each the same shape as the cluster handlers, answered
by the kind's :class:`~jupyter_dw.core.kind_service.KindService`."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.utils import url_path_join
from tornado import web

from ..core.kind_service import KindService
from ..domain.kinds import KINDS
from .handlers import FIT, IDEMPOTENCY_KEY_HEADER, DWHandler


class _KindHandler(DWHandler):
    """A handler bound to one kind by its route (``plural``: the kind's collection)."""

    plural = ""

    def initialize(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.plural = kwargs.pop("plural")
        super().initialize(name, *args, **kwargs)

    @property
    def jobs(self) -> KindService[Any, Any]:
        return self.core.kind(self.plural)


class KindCollectionHandler(_KindHandler):
    """``GET <plural>`` (list) and ``POST <plural>`` (create, 201 with the new job; also for a
    retry whose ``Idempotency-Key`` made the existing one)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """See :meth:`KindService.list`."""
        await self.call(self.jobs.list)

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """See :meth:`KindService.create`."""
        key = self.request.headers.get(IDEMPOTENCY_KEY_HEADER)
        await self.call_with_body(lambda body: self.jobs.create(body, key), status=201)


class KindMemberHandler(_KindHandler):
    """``GET <plural>/{name}``, ``DELETE <plural>/{name}`` and ``POST <plural>/fit`` (one
    route: tornado routes by path only, and ``fit`` is also a valid job name)."""

    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        """``POST <plural>/fit``: see :meth:`KindService.fit`."""
        if name != FIT:
            raise web.HTTPError(
                405, f"POST is only for {self.plural} (create) and {self.plural}/fit"
            )
        await self.call_with_body(self.jobs.fit)

    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """See :meth:`KindService.get`."""
        await self.call(lambda: self.jobs.get(name))

    @web.authenticated
    @authorized
    async def delete(self, name: str) -> None:
        """See :meth:`KindService.delete`."""
        await self.call(lambda: self.jobs.delete(name))


def kind_routes(prefix: str) -> list[tuple[str, type[web.RequestHandler], dict[str, Any]]]:
    """``(pattern, handler, kwargs)`` of every kind's two routes."""
    return [
        route
        for kind in KINDS
        for route in (
            (url_path_join(prefix, kind.plural), KindCollectionHandler, {"plural": kind.plural}),
            (
                url_path_join(prefix, kind.plural, "([^/]+)"),
                KindMemberHandler,
                {"plural": kind.plural},
            ),
        )
    ]
