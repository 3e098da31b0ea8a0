"""``GET {base_url}dw/api/events``: a WebSocket of changes to the namespace's queues and Ray
clusters, so pages never poll.

Every tab shares the server's one :class:`KubeSession` and its watch caches: a socket only
registers a listener on them (removed when it closes), so N tabs cost N listeners, not N
watches. Listeners run on the caches' threads; they hand each change to the socket's IO loop
(``IOLoop.add_callback``), where one task per socket turns changes into messages in the order
they happened. Blocking parts (queue summaries, the visibility API) run on the extension's
thread pool, awaited one at a time so the order holds.

Messages are JSON text frames from the server; the browser sends nothing (what it sends is
ignored). A cluster is the object ``GET clusters`` lists (``ClusterStatus`` JSON plus
``dashboard_url``, ``owner``, ``pods``); ``queues`` is the ``GET queues`` answer.

- ``{"type": "snapshot", "namespace", "queues", "queues_error", "clusters",
  "clusters_error", "positions_visible"}``: the first message. ``queues``/``clusters`` are
  null when they cannot be read, and the matching ``*_error`` is the error JSON
  (``{"error", "reason", "hint", "code"}``) instead.
- ``{"type": "queues", "event", "kind", "name", "queues", "queues_error"}``: a LocalQueue,
  ClusterQueue, Cohort or ResourceFlavor changed (``event``: ``ADDED``/``MODIFIED``/
  ``DELETED``; ``kind``/``name``: the object that changed) and with it the ``GET queues``
  answer, which ``queues`` is (or null with ``queues_error``). A ClusterQueue counts when a
  LocalQueue of the namespace points to it or it shares a cohort tree with one (its usage
  changes what may be borrowed); changes of other ClusterQueues send nothing.
- ``{"type": "cluster", "event", "name", "cause": {"kind", "name", "event"}, "state",
  "milestones"}``: RayCluster ``name`` changed, or its Workload or one of its pods did
  (``cause`` says which; ``event`` is the RayCluster's own event for a RayCluster change,
  ``MODIFIED`` otherwise). ``state`` is the cluster now, null once the RayCluster is gone.
  Positions are read when the cluster is waiting for quota; a waiting cluster whose position
  moved because a queue changed (a workload ahead admitted or gone, maybe in another
  namespace) gets a message with that queue as ``cause`` right after the ``queues`` one.
  ``milestones`` are :func:`jupyter_dw.domain.cluster_state.transition` names crossed since
  the previous message about this cluster on this socket (or since the snapshot), in order:
  ``Queued``, ``QuotaReserved``, ``Admitted``, ``HeadReady``, ``WorkerReady:<n>``, ``Ready``,
  then ``Evicted``/``Preempted``/``Failed``/``Suspended``/``Deleting``, ``QuotaReleased``.
- ``{"type": "workload", "event", "name", "queue"}``: a Workload that belongs to no
  RayCluster (another kind of job) changed.
- ``{"type": "error", "error", "reason", "hint", "code"}``: the socket cannot go on (sent
  before the server closes it).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado.ioloop import IOLoop
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from .domain.cluster_state import ClusterStatus, transition
from .domain.quota import QuotaTree
from .handlers import AUTH_RESOURCE, ExtensionObjectsMixin
from .k8s.errors import KubeError
from .k8s.resources import (
    CLUSTER_QUEUE,
    COHORT,
    JOB_UID_LABEL,
    LOCAL_QUEUE,
    POD,
    RAY_CLUSTER,
    RAY_CLUSTER_LABEL,
    RAY_GROUP,
    RESOURCE_FLAVOR,
    WORKLOAD,
)
from .k8s.session import KubeSession
from .k8s.watch_cache import DELETED

log = logging.getLogger(__name__)

Object = dict[str, Any]
Change = tuple[str, str, Object]
"""``(plural, event_type, object)`` as the session's listeners get it."""

QUEUE_KINDS = {k.plural: k.kind for k in (LOCAL_QUEUE, CLUSTER_QUEUE, COHORT, RESOURCE_FLAVOR)}
"""Caches whose changes are ``queues`` messages, and the kind each message names."""
CLUSTER_CAUSES = {k.plural: k.kind for k in (RAY_CLUSTER, WORKLOAD, POD)}
"""Caches whose changes are ``cluster`` messages, and the ``cause`` kind each names."""


class EventsHandler(
    ExtensionObjectsMixin, ExtensionHandlerMixin, WebSocketMixin, WebSocketHandler, JupyterHandler
):
    """``GET events``: the WebSocket described in this module's docstring.

    Like jupyter_server's own sockets: authenticated before the upgrade (no login redirect),
    authorized on the ``jupyter_dw`` resource, origin checked by ``WebSocketMixin`` (which
    also pings to keep the connection alive).
    """

    auth_resource = AUTH_RESOURCE

    @ws_authenticated
    @authorized
    async def get(self, *args: Any, **kwargs: Any) -> None:
        """Upgrade to a WebSocket (after jupyter_server's authentication and authorization)."""
        await super().get(*args, **kwargs)

    # -- socket life ---------------------------------------------------------------------

    def open(self, *args: Any, **kwargs: Any) -> None:
        """Listen to the session's caches and start the task that sends messages."""
        super().open(*args, **kwargs)  # WebSocketMixin: keep-alive pings
        self._loop = IOLoop.current()
        self._changes: asyncio.Queue[Change] = asyncio.Queue()
        self._closed = False
        self._known: dict[str, ClusterStatus] = {}
        # Registered before the snapshot is read, so no change between the two is lost.
        self._remove_listener = self.session.add_listener(self._on_change)
        self._pump = asyncio.ensure_future(self._run())

    def on_message(self, message: str | bytes) -> None:
        """The stream is one-way: messages from the browser are ignored."""

    def on_close(self) -> None:
        """Stop listening and stop the sending task."""
        self._closed = True
        self._remove_listener()
        self._pump.cancel()

    def _on_change(self, plural: str, event_type: str, obj: Object) -> None:
        """Session listener, on a cache thread: hand the change to this socket's IO loop."""
        if not self._closed:
            self._loop.add_callback(self._changes.put_nowait, (plural, event_type, obj))

    # -- the sending task ----------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._send(await self._snapshot())
            while True:
                for message in await self._messages(*await self._changes.get()):
                    await self._send(message)
        except (WebSocketClosedError, asyncio.CancelledError):
            return
        except Exception as err:  # a bug: say so and close, rather than go silent
            log.exception("jupyter_dw events socket failed")
            await self._fail(KubeError("The events stream failed", f"{type(err).__name__}: {err}"))

    async def _send(self, message: dict[str, Any]) -> None:
        # Awaiting the write makes a slow browser slow this socket down, not the server.
        await self.write_message(json.dumps(message))

    async def _fail(self, err: KubeError) -> None:
        try:
            await self._send({"type": "error", **err.to_json()})
        except WebSocketClosedError:
            return
        self.close(1011, err.error[:120])

    async def _snapshot(self) -> dict[str, Any]:
        queues, queues_error = await self._answer(self.session.queues)
        entries, clusters_error = await self._answer(self.clusters.entries)
        if entries is not None:
            self._known = {status.name: status for status, _ in entries}
        return {
            "type": "snapshot",
            "namespace": self.session.namespace if self.session.ready else None,
            "queues": queues,
            "queues_error": queues_error,
            "clusters": [cluster for _, cluster in entries] if entries is not None else None,
            "clusters_error": clusters_error,
            "positions_visible": self.session.positions_visible,
        }

    async def _answer(self, func: Any) -> tuple[Any, dict[str, Any] | None]:
        """``(result, None)``, or ``(None, error JSON)`` when ``func`` raises a KubeError."""
        try:
            return await self.run_blocking(func), None
        except KubeError as err:
            return None, err.to_json()

    async def _messages(self, plural: str, event_type: str, obj: Object) -> list[dict[str, Any]]:
        metadata = obj.get("metadata") or {}
        name = str(metadata.get("name") or "")
        if plural in QUEUE_KINDS:
            if not await self.run_blocking(
                _concerns_namespace, self.session, plural, event_type, obj
            ):
                return []
            queues, error = await self._answer(self.session.queues)
            cause = {"kind": QUEUE_KINDS[plural], "name": name, "event": event_type}
            queues_message = {"type": "queues", **cause, "queues": queues, "queues_error": error}
            return [queues_message, *await self._waiting_clusters_moved(cause)]
        if plural not in CLUSTER_CAUSES:
            return []
        cluster = self._cluster_name(plural, obj)
        if cluster is None:
            workload = {"type": "workload", "event": event_type, "name": name}
            return [{**workload, "queue": (obj.get("spec") or {}).get("queueName")}]
        cause = {"kind": CLUSTER_CAUSES[plural], "name": name, "event": event_type}
        event = event_type if plural == RAY_CLUSTER.plural else "MODIFIED"
        return [await self._cluster_message(cluster, event, cause)]

    async def _cluster_message(
        self, cluster: str, event: str, cause: dict[str, Any], only_if_changed: bool = False
    ) -> dict[str, Any] | None:
        """The ``cluster`` message for ``cluster`` as the caches hold it now (None when
        ``only_if_changed`` and nothing about it changed since the last message)."""
        described = await self.run_blocking(self.clusters.describe, cluster)
        known = self._known.get(cluster)
        if described is None:
            self._known.pop(cluster, None)
            state, milestones = None, []
        else:
            status, state = described
            if only_if_changed and status == known:
                return None
            milestones = transition(known, status)
            self._known[cluster] = status
        return {
            "type": "cluster",
            "event": event,
            "name": cluster,
            "cause": cause,
            "state": state,
            "milestones": milestones,
        }

    async def _waiting_clusters_moved(self, cause: dict[str, Any]) -> list[dict[str, Any]]:
        """``cluster`` messages for waiting clusters whose position changed with a queue.

        A position moves when a workload ahead is admitted or leaves, and that workload may
        be in another namespace: nothing of the waiting cluster changes, only the queues'
        status (which this socket hears about). So a queue change re-reads the positions of
        this namespace's waiting clusters and reports those that moved.
        """
        waiting = [name for name, status in self._known.items() if status.state == "queued"]
        messages = []
        for cluster in waiting:
            message = await self._cluster_message(cluster, "MODIFIED", cause, only_if_changed=True)
            if message is not None:
                messages.append(message)
        return messages

    def _cluster_name(self, plural: str, obj: Object) -> str | None:
        """The RayCluster a RayCluster, Workload or Ray pod belongs to, if known."""
        metadata = obj.get("metadata") or {}
        if plural == RAY_CLUSTER.plural:
            return str(metadata.get("name") or "") or None
        if plural == POD.plural:
            return (metadata.get("labels") or {}).get(RAY_CLUSTER_LABEL)
        uid = (metadata.get("labels") or {}).get(JOB_UID_LABEL)
        raycluster = self.session.ray_cluster_by_uid(str(uid)) if uid else None
        if raycluster is not None:
            return str((raycluster.get("metadata") or {}).get("name"))
        # The RayCluster may be gone already (its Workload is deleted after it): its owner
        # reference still names it.
        for owner in metadata.get("ownerReferences") or []:
            if (
                owner.get("kind") == RAY_CLUSTER.kind
                and str(owner.get("apiVersion", "")).split("/")[0] == RAY_GROUP
            ):
                return str(owner.get("name"))
        return None


def _concerns_namespace(session: KubeSession, plural: str, event_type: str, obj: Object) -> bool:
    """Whether a change of a queue object can change the namespace's ``GET queues`` answer.

    Every LocalQueue (the cache holds only the namespace's), Cohort and ResourceFlavor counts.
    A ClusterQueue counts when a LocalQueue points to it, or it sits in the same cohort tree as
    one that does (lending and borrowing link them), or it was deleted (its tree is unknown).
    """
    if plural != CLUSTER_QUEUE.plural or event_type == DELETED:
        return True
    name = str((obj.get("metadata") or {}).get("name") or "")
    try:
        state = session.queue_state()
    except KubeError:
        return True  # the answer will be this error: worth a message
    used = {lq.cluster_queue for lq in state.local_queues}
    if name in used:
        return True
    if state.cluster_queues is None:
        return False
    tree = QuotaTree(state.cluster_queues, state.cohorts or ())
    path = tree.cohort_path(name) if tree.cluster_queue(name) is not None else ()
    roots = {p[-1] for cq in used if tree.cluster_queue(cq) and (p := tree.cohort_path(cq))}
    return bool(path) and path[-1] in roots
