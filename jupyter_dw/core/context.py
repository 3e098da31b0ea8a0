"""Who this workbench is to Kubernetes, what the cluster serves and what it may do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..domain.freshness import WatchHealth
from ..domain.identity import Identity
from ..domain.json_decode import decode_fields, decode_key
from ..domain.spec_policy import PublishedPolicy, SpecPolicy
from ..k8s.access import AccessResult
from ..k8s.discovery import Discovery
from ..k8s.elastic import NOT_PROBED, ElasticJobs
from ..k8s.session import KubeSession
from .elastic import ASSUMED, AutoscalerQuota, ElasticSupport


@dataclass(frozen=True)
class SessionContext:
    """The ``GET context`` answer: namespace, identity, installed APIs, permissions, the
    health of each watch cache (``{plural: (synced, last error)}``, and as ``health``: live,
    reconnecting or stale, with Kueue's controller), and the configured defaults and limits
    of new clusters (``policy``: a form shows them, and leaves a field it was not given empty
    so the server's default applies)."""

    namespace: str
    namespace_source: str
    api_server: str
    credentials_source: str
    credentials_description: str
    identity: Identity
    discovery: Discovery
    permissions: tuple[AccessResult, ...]
    caches: dict[str, tuple[bool, str | None]]
    health: WatchHealth
    elastic_jobs: ElasticJobs = NOT_PROBED
    autoscaler_quota: AutoscalerQuota = ASSUMED
    policy: SpecPolicy | PublishedPolicy = field(default_factory=SpecPolicy)
    """The configured policy; read back from a server's answer, what it publishes of it."""

    @classmethod
    def of(
        cls,
        session: KubeSession,
        timeout: float | None = None,
        elastic: ElasticSupport | None = None,
        policy: SpecPolicy | None = None,
    ) -> SessionContext:
        """Read it from a session (waits for its start); ``policy`` is the configured one
        (the built-in defaults without)."""
        session.wait_ready(timeout)
        elastic = elastic or ElasticSupport(session)
        return cls(
            namespace=session.namespace,
            namespace_source=session.namespace_source,
            api_server=session.api.host,
            credentials_source=session.credentials.source,
            credentials_description=session.credentials.description,
            identity=session.identity,
            discovery=session.discovery,
            permissions=tuple(session.access.values()),
            caches=session.cache_health(),
            health=session.watch_health(),
            elastic_jobs=elastic.jobs(),
            autoscaler_quota=elastic.autoscaler_quota(),
            policy=policy or SpecPolicy(),
        )

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        discovered = self.discovery.to_json()
        discovered["kueue"] = {
            **discovered["kueue"],
            "elastic_jobs": self.elastic_jobs.to_json(),
            "autoscaler_in_quota": self.autoscaler_quota.to_json(),
        }
        return {
            "namespace": self.namespace,
            "namespace_source": self.namespace_source,
            "api_server": self.api_server,
            "credentials": {
                "source": self.credentials_source,
                "description": self.credentials_description,
            },
            "identity": self.identity.to_json(),
            "kueue_api": self.discovery.kueue_version,
            **discovered,
            "permissions": [result.to_json() for result in self.permissions],
            "caches": {
                plural: {"synced": synced, "error": error}
                for plural, (synced, error) in self.caches.items()
            },
            "health": self.health.to_json(),
            "cluster_policy": {
                "default_image": self.policy.default_image,
                "sizes": self.policy.published_sizes(),
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionContext:
        """What :meth:`to_json` made. What it leaves out is not known here: the identity's
        ``uid``, which Kueue kinds are served, and of the policy all but what it publishes
        (a client reading through the server leaves those to the server)."""
        credentials = decode_key(Mapping[str, str], data, "credentials")
        kueue = decode_key(Mapping[str, Any], data, "kueue")
        caches = decode_key(Mapping[str, Mapping[str, Any]], data, "caches")
        return decode_fields(
            cls,
            data,
            credentials_source=decode_key(str, credentials, "source"),
            credentials_description=decode_key(str, credentials, "description"),
            discovery=Discovery.from_json(data),
            caches={
                plural: (decode_key(bool, cache, "synced"), decode_key(str | None, cache, "error"))
                for plural, cache in caches.items()
            },
            elastic_jobs=decode_key(ElasticJobs, kueue, "elastic_jobs"),
            autoscaler_quota=decode_key(AutoscalerQuota, kueue, "autoscaler_in_quota"),
            policy=decode_key(PublishedPolicy, data, "cluster_policy"),
        )
