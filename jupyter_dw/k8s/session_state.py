"""What a :class:`~jupyter_dw.k8s.session.KubeSession` knows, read without I/O: the
:class:`Connection` (credentials, client, namespace, discovery, identity, access verdicts) and
the caches. The session writes it; the session and its answers read it."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..domain.identity import Identity
from .access import AccessResult, Permission
from .auth import Credentials
from .cache_set import CacheSet, Kind
from .client import KubeApi
from .discovery import Discovery
from .errors import KubeForbidden, NotReady
from .resources import LOCAL_QUEUE
from .watch_cache import WatchCache


@dataclass(frozen=True)
class Connection:
    """What one connection learnt: made whole at start; a re-check replaces ``discovery``
    and ``access``."""

    credentials: Credentials
    api: KubeApi
    namespace: str
    discovery: Discovery
    identity: Identity
    access: dict[Permission, AccessResult]


class SessionState:
    """The session's connection (None until connected), its caches, and the reads of them."""

    def __init__(
        self, cache_set: CacheSet, request_timeout: float, configured_namespace: str | None
    ) -> None:
        self.cache_set = cache_set
        self.request_timeout = request_timeout
        self.configured_namespace = configured_namespace
        self.started = threading.Event()
        """Set once a start succeeded (caches may still be syncing); cleared by a stop."""
        self.connection: Connection | None = None

    def connected(self) -> Connection:
        """The connection, once started; else :class:`NotReady`."""
        if not self.started.is_set():
            raise NotReady("Not connected to Kubernetes yet", None, "Start the session first.")
        assert self.connection is not None
        return self.connection

    @property
    def ready(self) -> bool:
        """True once the start has succeeded (caches may still be syncing)."""
        return self.started.is_set()

    @property
    def namespace(self) -> str:
        """The namespace in use (after start)."""
        return self.connected().namespace

    @property
    def namespace_or_empty(self) -> str:
        """The namespace in use, "" before the session connected (for reads without waiting)."""
        return self.connection.namespace if self.connection is not None else ""

    @property
    def discovery(self) -> Discovery:
        """What the cluster serves (after start)."""
        return self.connected().discovery

    @property
    def api(self) -> KubeApi:
        """The API client (after start), for calls no cache answers."""
        return self.connected().api

    @property
    def access(self) -> dict[Permission, AccessResult]:
        """Verdicts on every needed permission, as last checked (empty before connecting)."""
        return dict(self.connection.access) if self.connection is not None else {}

    @property
    def caches(self) -> dict[str, WatchCache]:
        """The caches by plural (the set itself: :class:`~jupyter_dw.k8s.cache_set.CacheSet`)."""
        return self.cache_set.caches

    def allowed(self, verb: str, kind: Kind, subresource: str = "") -> bool | None:
        """The last verdict for ``verb`` on ``kind`` (None if it was not checked)."""
        wanted = (verb, kind.group, kind.plural, subresource)
        connection = self.connection
        for p, result in (connection.access if connection is not None else {}).items():
            if (p.verb, p.group, p.resource, p.subresource) == wanted:
                return result.allowed
        return None

    def denied(self, kind: Kind) -> bool:
        """Whether ``kind`` may not be both listed and watched (so it gets no cache)."""
        return not (self.allowed("list", kind) and self.allowed("watch", kind))

    def synced_cache(
        self, kind: Kind, deadline: float, required: bool = False
    ) -> WatchCache | None:
        """The cache of ``kind`` once synced, waiting until ``deadline`` (``time.monotonic``)
        at most; None when ``kind`` is not served or not readable, unless ``required``: then
        ``KubeForbidden`` names the list/watch missing (see :meth:`CacheSet.synced`)."""
        return self.cache_set.synced(
            kind, deadline, self.forbidden, required, request_timeout=self.request_timeout
        )

    def forbidden(self, kind: Kind) -> KubeForbidden:
        """The error that says which of list and watch on ``kind`` this identity lacks."""
        connection = self.connection
        namespace = connection.namespace if connection is not None else None
        who = connection.identity.username if connection is not None else "this identity"
        denied = [
            p.name
            for p, r in self.access.items()
            if p.resource == kind.plural and p.group == kind.group and p.verb in ("list", "watch")
            if not r.allowed
        ]
        what = " and ".join(denied) or f"list {kind.qualified}"
        # Kueue ships a ClusterRole for namespace users of its own APIs; KubeRay ships none.
        example = (
            " (for example with the kueue-batch-user-role ClusterRole in a RoleBinding)"
            if kind.group == LOCAL_QUEUE.group
            else " (a Role and RoleBinding)"
        )
        return KubeForbidden(
            f"Forbidden: this identity may not {what}",
            f"SelfSubjectAccessReview denied {what} in namespace {namespace} to {who}",
            f"Ask a cluster administrator to allow '{what}' in namespace {namespace}{example}.",
            denied=denied[0] if denied else f"list {kind.qualified}",
        )
