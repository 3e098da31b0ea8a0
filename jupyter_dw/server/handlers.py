"""REST handlers under ``{base_url}dw/api/``: thin wrappers around the core's services.

Each handler authenticates (``@web.authenticated``) and authorizes (``@authorized`` on the
``jupyter_dw`` resource) through jupyter_server, runs the blocking core call on the
extension's thread pool, writes its answer's ``to_json()``, and maps :class:`KubeError` to
JSON with the error's HTTP status. The full description is ``jupyter_dw/openapi.yaml``.

Routes:

- ``GET version`` → ``{"version": "0.1.0"}``.
- ``GET context`` → ``{"namespace", "namespace_source", "api_server", "credentials",
  "identity": {"username", "groups", "kind", "service_account"}, "kueue_api",
  "kueue": {"installed", "api_version", "served_versions", "cohorts", ...},
  "kuberay": {"installed", "api_version"}, "permissions": [{"permission", "verb", "group",
  "resource", "subresource", "scope", "purpose", "allowed", "reason"}], "caches"}``.
- ``GET queues`` → ``{"namespace", "kueue_api", "quota_visible", "cohorts_visible",
  "queues": [{"name", "cluster_queue", "default", "default_convention", "active", "pending",
  "reserving", "admitted", "quota_visible", "hint", "resources": [{"flavor", "resource",
  "nominal", "borrowing_limit", "lending_limit", "reserved", "used", "borrowed", "headroom",
  "max_obtainable", "queue_reserved", "queue_used"}]}]}``. Quantities are Kubernetes quantity
  strings. ``null`` means: for ``borrowing_limit``, unlimited borrowing; for
  ``lending_limit``, all unused nominal quota may be lent; with ``quota_visible`` false,
  unknown (``nominal``, limits, ``borrowed``, ``headroom``, ``max_obtainable`` are hidden and
  ``reserved``/``used`` are this LocalQueue's own numbers).
- ``POST clusters/fit`` with a cluster spec (the fields of
  :data:`jupyter_dw.domain.cluster_spec.FIELDS`; ``name`` optional here) → the fit verdict:
  ``{"verdict": "fits-now" | "must-wait" | "never-fits" | "unknown", "reason", "message",
  "requests", "headroom", "max_obtainable", "flavors", "assignment", "ahead", "queue",
  "cluster_queue", "spec", "default_queue", "suggestion"}`` (``suggestion``: ``{"workers",
  "requests", "message"}``, a smaller cluster that would start now, or null).
- ``GET clusters`` → ``{"namespace", "positions_visible", "clusters": [cluster]}``; a cluster
  is ``{"name", "namespace", "queue", "state", "reason", "message", "created", "workload",
  "cluster_queue", "quota_reserved", "admitted", "admitted_at", "flavors",
  "pod_set_flavors", "head_ready", "workers_ready", "workers_desired", "dashboard",
  "position_in_local_queue", "position_in_cluster_queue", "dashboard_url", "owner",
  "pods": [{"name", "role", "phase", "ready"}], "milestones": [{"name", "time"}]}``
  (``state``: queued, admitted, starting, ready, evicted, preempted, suspended, failed,
  deleting; positions only while queued).
- ``POST clusters`` with a cluster spec → 201 and the cluster. Validated first (400
  ``invalid_spec`` with ``"errors": {field: message}``, nothing sent to Kubernetes), then a
  server-side dry run (400 ``rejected`` when a webhook or the schema refuses it: nothing
  created; 503 ``kueue_webhook_unavailable`` when Kueue's webhook cannot be called: nothing
  created), then one create; 409 ``already_exists`` when the name is taken by another
  request. An ``Idempotency-Key`` header (one per user action, the same on its retries) is
  stored on the cluster: a retry whose create finds the name taken by that key answers 201
  with that cluster, and a create whose answer was lost is looked up by it, never sent twice.
- ``GET clusters/{name}`` → the cluster; ``DELETE clusters/{name}`` → ``{"name",
  "namespace", "deleted": true}`` (its Workload and pods follow); 404 ``not_found``.
- ``GET events``: a WebSocket of changes, see :mod:`jupyter_dw.events`.

Errors: ``{"error", "reason", "hint", "code"}`` (403s also ``"denied"``:
``"<verb> <resource>.<group>"``; 400s also ``"errors"``). 400 invalid request or refused by
Kubernetes; 403 Kubernetes denied a needed permission; 404 no such cluster; 409 name taken;
401 the credentials were rejected; 503 Kueue/KubeRay not installed (``code``
``kueue_not_installed`` / ``kuberay_not_installed``), API server unreachable
(``unreachable``), no credentials (``no_credentials``), still starting (``not_ready``) or an
admission webhook down (``kueue_webhook_unavailable`` / ``webhook_unavailable``, with
``"webhook"``); 504 the API server did not answer within ``request_timeout`` (``timeout``);
502 another API server failure.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import Executor
from http.client import responses
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import url_path_join
from tornado import web

from .._version import __version__
from ..k8s.errors import InvalidRequest, KubeError

if TYPE_CHECKING:
    from ..core.services import DWCore

AUTH_RESOURCE = "jupyter_dw"
"""The resource name a jupyter_server Authorizer sees for every jupyter_dw endpoint."""
API_PREFIX = "dw/api"
CORE_SETTING = "jupyter_dw_core"
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

    @property
    def core(self) -> DWCore:
        """The extension's core."""
        return self.settings[CORE_SETTING]  # type: ignore[no-any-return]

    async def run_blocking(self, func: Callable[..., Any], *args: Any) -> Any:
        """``func(*args)`` on the extension's executor: never on the IO loop."""
        executor: Executor | None = self.settings.get(EXECUTOR_SETTING)
        return await asyncio.get_running_loop().run_in_executor(executor, func, *args)


class DWHandler(ExtensionObjectsMixin, JSONErrorsMixin, ExtensionHandlerMixin, APIHandler):
    """Base class: JSON errors in the ``{"error", "reason", "hint"}`` shape."""

    auth_resource = AUTH_RESOURCE

    async def call(self, func: Callable[[], Any], status: int = 200) -> None:
        """Run blocking ``func`` off the IO loop and write its answer's ``to_json()`` with
        ``status``, or the KubeError with its own."""
        try:
            result = await self.run_blocking(func)
        except KubeError as err:
            self.set_status(err.status)
            self.finish(err.to_json())
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
            self.set_status(err.status)
            self.finish(err.to_json())
            return
        await self.call(lambda: func(body), status)


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


def route_table(prefix: str = API_PREFIX) -> list[tuple[str, type[web.RequestHandler]]]:
    """``(pattern, handler)`` pairs; ExtensionApp prepends ``base_url``."""
    # Imported here: the socket's module imports this one's settings names.
    from .events import EventsHandler

    return [
        (url_path_join(prefix, "version"), VersionHandler),
        (url_path_join(prefix, "context"), ContextHandler),
        (url_path_join(prefix, "queues"), QueuesHandler),
        (url_path_join(prefix, "clusters"), ClustersHandler),
        (url_path_join(prefix, "clusters", "([^/]+)"), ClusterHandler),
        (url_path_join(prefix, "events"), EventsHandler),
    ]
