"""What a :class:`~jupyter_dw.k8s.session.KubeSession` knows once connected, read without
I/O: the namespace, discovery, identity, the access reviews' verdicts, the API client and
the caches. The base of the session's answers (``session_answers``) and of the session itself
(``session``, which connects, re-checks and stops)."""

from __future__ import annotations

import threading

from .access import AccessResult, Identity, Permission
from .auth import Credentials
from .cache_set import CacheSet, Kind
from .client import KubeApi
from .discovery import Discovery
from .errors import KubeForbidden, NotReady
from .resources import LOCAL_QUEUE
from .watch_cache import WatchCache


class SessionState:
    """The connection's state; set by the session's start and re-checks."""

    request_timeout: float
    _configured_namespace: str | None
    _credentials: Credentials | None
    _started: threading.Event
    _api: KubeApi | None
    _namespace: str | None
    _discovery: Discovery | None
    _identity: Identity | None
    _access: dict[Permission, AccessResult]
    _cache_set: CacheSet

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until started (see ``KubeSession.wait_ready``)."""
        raise NotImplementedError

    @property
    def ready(self) -> bool:
        """True once :meth:`start` has succeeded (caches may still be syncing)."""
        return self._started.is_set()

    @property
    def namespace(self) -> str:
        """The namespace in use (after start)."""
        self._require_started()
        assert self._namespace is not None
        return self._namespace

    @property
    def discovery(self) -> Discovery:
        """What the cluster serves (after start)."""
        self._require_started()
        assert self._discovery is not None
        return self._discovery

    @property
    def identity(self) -> Identity:
        """Who the API server says we are (after start)."""
        self._require_started()
        assert self._identity is not None
        return self._identity

    @property
    def api(self) -> KubeApi:
        """The API client (after start), for calls no cache answers."""
        self._require_started()
        assert self._api is not None
        return self._api

    @property
    def access(self) -> dict[Permission, AccessResult]:
        """Verdicts on every needed permission, as last checked (at start, then re-checked
        every ``refresh_interval`` and after a 403)."""
        return dict(self._access)

    @property
    def credentials(self) -> Credentials:
        """The credentials in use (after start)."""
        self._require_started()
        assert self._credentials is not None
        return self._credentials

    @property
    def namespace_source(self) -> str:
        """Where the namespace came from: ``config``, or the credentials' source."""
        return "config" if self._configured_namespace else self.credentials.source

    @property
    def _caches(self) -> dict[str, WatchCache]:
        """The caches by plural (the set itself: :class:`~jupyter_dw.k8s.cache_set.CacheSet`)."""
        return self._cache_set.caches

    def cache(self, kind: Kind) -> WatchCache | None:
        """The watch cache of ``kind``, None if not served or not readable (started now if
        the session watches lazily)."""
        return self._cache_set.watching(kind.plural)

    @property
    def watched(self) -> list[str]:
        """The plurals whose watches are open."""
        return [plural for plural, cache in self._caches.items() if cache.started]

    def cache_health(self) -> dict[str, tuple[bool, str | None]]:
        """Per watched plural: ``(synced, last error)``."""
        return {
            plural: (cache.synced, str(cache.last_error) if cache.last_error else None)
            for plural, cache in self._caches.items()
        }

    def allowed(self, verb: str, kind: Kind, subresource: str = "") -> bool | None:
        """The last verdict for ``verb`` on ``kind`` (None if it was not checked)."""
        for permission, result in self._access.items():
            if (permission.verb, permission.group, permission.resource) == (
                verb,
                kind.group,
                kind.plural,
            ) and permission.subresource == subresource:
                return result.allowed
        return None

    def _denied(self, kind: Kind) -> bool:
        return not (self.allowed("list", kind) and self.allowed("watch", kind))

    def _require_started(self) -> None:
        if not self._started.is_set():
            raise NotReady("Not connected to Kubernetes yet", None, "Start the session first.")

    def synced_cache(
        self, kind: Kind, deadline: float, required: bool = False
    ) -> WatchCache | None:
        """The cache of ``kind`` once synced, waiting until ``deadline`` (``time.monotonic``)
        at most; None when ``kind`` is not served or not readable, unless ``required``: then
        ``KubeForbidden`` names the list/watch missing (see :meth:`CacheSet.synced`)."""
        return self._cache_set.synced(
            kind, deadline, self._forbidden, required, request_timeout=self.request_timeout
        )

    def _forbidden(self, kind: Kind) -> KubeForbidden:
        denied = [
            p.name
            for p, r in self._access.items()
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
            f"SelfSubjectAccessReview denied {what} in namespace {self._namespace} "
            f"to {self._identity.username if self._identity else 'this identity'}",
            f"Ask a cluster administrator to allow '{what}' in namespace {self._namespace}"
            f"{example}.",
            denied=denied[0] if denied else f"list {kind.qualified}",
        )
