"""REST handlers under ``{base_url}dw/api/``, as ``jupyter_dw/openapi.yaml`` describes them.
Each authenticates and authorizes through jupyter_server, decodes the JSON body, runs one
blocking core call (the core checks the request) on the extension's thread pool and writes the
answer, or the error, as JSON.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from concurrent.futures import Executor
from http.client import responses
from typing import TYPE_CHECKING, Any

from jupyter_server.auth import User
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import url_path_join
from tornado import web

from .._version import __version__
from ..core.errors import DWError, InvalidRequest
from .kernel_link import KERNEL_USER, KernelLink

if TYPE_CHECKING:
    from ..core.cluster_results import ClusterInfo, ScaleResult
    from ..core.services import DWCore

AUTH_RESOURCE = "jupyter_dw"
"""The resource name a jupyter_server Authorizer sees for every jupyter_dw endpoint."""
API_PREFIX = "dw/api"
CORE_SETTING = "jupyter_dw_core"
KERNEL_LINK_SETTING = "jupyter_dw_kernel_link"
EXECUTOR_SETTING = "jupyter_dw_executor"
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
"""``POST clusters``: one key per user action, the same on its retries (see openapi.yaml)."""
FIT = "fit"
"""``POST clusters/fit``: the fit check's path segment."""


class JSONErrorsMixin:
    """``write_error`` in the ``{"error", "reason", "hint"}`` shape of jupyter_dw's API, for
    errors raised by jupyter_server's own checks (auth, XSRF) and unexpected bugs."""

    def write_error(self: Any, status_code: int, **kwargs: Any) -> None:
        """Write the error as JSON; never a traceback or an HTML page."""
        self.set_header("Content-Type", "application/json")
        reason = responses.get(status_code, "Unknown HTTP Error")
        error = reason
        exc_info = kwargs.get("exc_info")
        if exc_info and isinstance(exc_info[1], web.HTTPError):
            error = exc_info[1].log_message or reason
        elif exc_info:
            error = "Unhandled error in jupyter_dw (see the server log)"
        self.finish(json.dumps({"error": error, "reason": reason, "hint": None}))


class ExtensionObjectsMixin:
    """What every jupyter_dw handler shares, from the tornado settings the extension fills:
    the core (session and services) and the executor for blocking calls."""

    settings: dict[str, Any]
    _finished: bool

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        """jupyter_server's checks (who, XSRF, origin), then wait for the core if it is still
        being made (see :mod:`.core_loader`)."""
        checks = super().prepare(*args, **kwargs)  # type: ignore[misc]  # the handler's own
        if inspect.isawaitable(checks):  # jupyter_server's are async, a WebSocket's returns one
            await checks
        if not self._finished:
            await self.wait_for_core()

    async def wait_for_core(self) -> None:
        """Until the core is made (at once, but for the first requests after a start)."""
        await self.settings[CORE_SETTING].ready()

    @property
    def core(self) -> DWCore:
        """The extension's core (made: :meth:`prepare` waited for it)."""
        core: DWCore | None = self.settings[CORE_SETTING].made
        assert core is not None, "the core is used before prepare() waited for it"
        return core

    async def run_blocking(self, func: Callable[..., Any], *args: Any) -> Any:
        """``func(*args)`` on the extension's executor: never on the IO loop."""
        executor: Executor | None = self.settings.get(EXECUTOR_SETTING)
        return await asyncio.get_running_loop().run_in_executor(executor, func, *args)


class KernelAuthMixin(ExtensionObjectsMixin):
    """A kernel of this server is known by its secret (:mod:`.kernel_link`) instead of
    jupyter_server's identity: it opens jupyter_dw's API only (these handlers), and no XSRF
    check applies (a browser cannot send that header to another site)."""

    from_kernel = False
    """Whether the request carries this server's kernel secret."""

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        """The kernel's secret, else :meth:`ExtensionObjectsMixin.prepare`."""
        link: KernelLink | None = self.settings.get(KERNEL_LINK_SETTING)
        request = self.request  # type: ignore[attr-defined]  # the handler's
        if link is None or not link.authenticates(request.headers.get("Authorization")):
            await super().prepare(*args, **kwargs)
            return
        if not self.check_host():  # type: ignore[attr-defined]  # JupyterHandler's
            raise web.HTTPError(403)
        self.from_kernel = True
        user = User(KERNEL_USER)
        # What JupyterHandler.prepare sets: tornado's and jupyter_server's current user.
        setattr(self, "current_user", user)  # noqa: B010
        setattr(self, "_jupyter_current_user", user)  # noqa: B010
        await self.wait_for_core()


class DWHandler(KernelAuthMixin, JSONErrorsMixin, ExtensionHandlerMixin, APIHandler):
    """Base class: JSON errors in the ``{"error", "reason", "hint"}`` shape."""

    auth_resource = AUTH_RESOURCE

    async def call(self, func: Callable[[], Any], status: int = 200) -> None:
        """Run blocking ``func`` off the IO loop and write its answer's ``to_json()`` with
        ``status``, or the DWError with its own."""
        try:
            result = await self.run_blocking(func)
        except DWError as err:
            self.write_dw_error(err)
            return
        self.set_status(status)
        self.finish(result.to_json())

    def json_body(self) -> Any:
        """The request body as JSON; a malformed body is a :class:`InvalidRequest`."""
        try:
            return json.loads(self.request.body or b"null")
        except ValueError as err:
            raise InvalidRequest(
                "The request body is not JSON",
                str(err),
                'Send a JSON object, e.g. {"name": "my-ray", "workers": 2}.',
                {"request": "must be a JSON object"},
            ) from err

    async def call_with_body(self, func: Callable[[Any], Any], status: int = 200) -> None:
        """:meth:`call` ``func(body)`` with the decoded JSON body (400 if it is not JSON)."""
        try:
            body = self.json_body()
        except InvalidRequest as err:
            self.write_dw_error(err)
            return
        await self.call(lambda: func(body), status)

    def write_dw_error(self, err: DWError) -> None:
        """The error with its status; a busy API server's advice as ``Retry-After``."""
        self.set_status(err.status)
        retry_after = getattr(err, "retry_after", None)
        if retry_after:
            self.set_header("Retry-After", str(retry_after))
        self.finish(err.to_json())


class VersionHandler(DWHandler):
    """``GET version``: the package version, for the frontend's handshake."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """``{"version": "<package version>"}``."""
        self.finish({"version": __version__})


class ContextHandler(DWHandler):
    """``GET context``: namespace, identity, installed APIs and permissions."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """See :class:`jupyter_dw.core.context.SessionContext`."""
        await self.call(self.core.context)


class QueuesHandler(DWHandler):
    """``GET queues``: the namespace's LocalQueues with quota and headroom."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """See :meth:`jupyter_dw.core.queues.QueueService.list`."""
        await self.call(self.core.queues.list)


class WorkloadsHandler(DWHandler):
    """``GET workloads[?queue=<LocalQueue>&kind=<Kind.group>]``: every Workload of the
    namespace, whatever job owns it."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """See :meth:`jupyter_dw.core.workloads.WorkloadService.list`."""
        queue = self.get_query_argument("queue", None)
        kind = self.get_query_argument("kind", None)
        await self.call(lambda: self.core.workloads.list(queue, kind))


class ClustersHandler(DWHandler):
    """``GET clusters`` (list) and ``POST clusters`` (create)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """See :meth:`jupyter_dw.core.clusters.ClusterService.list`."""
        await self.call(self.core.clusters.list)

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """See :meth:`jupyter_dw.core.clusters.ClusterService.create`; 201 with the new cluster
        (also for a retry whose ``Idempotency-Key`` header made the existing cluster)."""
        key = self.request.headers.get(IDEMPOTENCY_KEY_HEADER)
        await self.call_with_body(lambda body: self.core.clusters.create(body, key), status=201)


class ClusterHandler(DWHandler):
    """``GET clusters/{name}``, ``DELETE clusters/{name}`` and ``POST clusters/fit``.

    One route for both: tornado routes by path only, and ``fit`` is also a valid cluster
    name, which ``GET``/``DELETE`` must still reach.
    """

    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        """``POST clusters/fit``: see :meth:`jupyter_dw.core.clusters.ClusterService.fit`."""
        if name != FIT:
            raise web.HTTPError(405, "POST is only for clusters (create) and clusters/fit")
        await self.call_with_body(self.core.clusters.fit)

    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """See :meth:`jupyter_dw.core.clusters.ClusterService.get`."""
        await self.call(lambda: self.core.clusters.get(name))

    @web.authenticated
    @authorized
    async def delete(self, name: str) -> None:
        """See :meth:`jupyter_dw.core.clusters.ClusterService.delete`."""
        await self.call(lambda: self.core.clusters.delete(name))


class ScaleHandler(DWHandler):
    """``POST clusters/{name}/scale``: ``{"workers": N | null, "dry_run": bool}``."""

    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        """See :meth:`jupyter_dw.core.clusters.ClusterService.scale`."""
        await self.call_with_body(lambda body: self._scale(name, body))

    def _scale(self, name: str, body: Any) -> ScaleResult:
        # Imported on the pool's thread, as the core is (core_loader), not on the IO loop.
        from ..core.scaling import scale_request

        request = scale_request(body)
        return self.core.clusters.scale(name, request.workers, request.dry_run)


class StopHandler(DWHandler):
    """``POST clusters/{name}/stop``: stop an admitted cluster, keeping it (no body, or
    ``{}``)."""

    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        """See :meth:`jupyter_dw.core.clusters.ClusterService.stop`."""
        await self.call_with_body(lambda body: self._stop(name, body))

    def _stop(self, name: str, body: Any) -> ClusterInfo:
        from ..core.stopping import check_no_fields

        check_no_fields(body, "stop")
        return self.core.clusters.stop(name)


class ResumeHandler(DWHandler):
    """``POST clusters/{name}/resume``: queue a stopped cluster again (no body, or ``{}``)."""

    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        """See :meth:`jupyter_dw.core.clusters.ClusterService.resume`."""
        await self.call_with_body(lambda body: self._resume(name, body))

    def _resume(self, name: str, body: Any) -> ClusterInfo:
        from ..core.stopping import check_no_fields

        check_no_fields(body, "resume")
        return self.core.clusters.resume(name)


def route_table(
    prefix: str = API_PREFIX,
) -> list[tuple[str, type[web.RequestHandler]] | tuple[str, type[web.RequestHandler], dict]]:
    """``(pattern, handler)`` pairs (a workload kind's with the handler's ``initialize``
    arguments); ExtensionApp prepends ``base_url``."""
    # Imported here: those modules import this one's base class and settings names.
    from .events import EventsHandler
    from .jobs_handlers import JobLogsHandler, JobsHandler, JobStopHandler
    from .kernel_handlers import KernelCallHandler
    from .kind_handlers import kind_routes

    job = url_path_join(prefix, "clusters", "([^/]+)", "jobs", "([^/]+)")

    return [
        (url_path_join(prefix, "version"), VersionHandler),
        (url_path_join(prefix, "context"), ContextHandler),
        (url_path_join(prefix, "queues"), QueuesHandler),
        (url_path_join(prefix, "workloads"), WorkloadsHandler),
        (url_path_join(prefix, "clusters"), ClustersHandler),
        (url_path_join(prefix, "clusters", "([^/]+)"), ClusterHandler),
        (url_path_join(prefix, "clusters", "([^/]+)", "scale"), ScaleHandler),
        (url_path_join(prefix, "clusters", "([^/]+)", "stop"), StopHandler),
        (url_path_join(prefix, "clusters", "([^/]+)", "resume"), ResumeHandler),
        (url_path_join(prefix, "clusters", "([^/]+)", "jobs"), JobsHandler),
        (url_path_join(job, "logs"), JobLogsHandler),
        (url_path_join(job, "stop"), JobStopHandler),
        *kind_routes(prefix),
        (url_path_join(prefix, "events"), EventsHandler),
        (url_path_join(prefix, "kernel", "call"), KernelCallHandler),
    ]
