"""A disposable control plane whose API server writes an audit log, and a reader of that log.

:class:`AuditedCluster` is a :class:`~tests.cluster.disposable.DisposableCluster` whose
kube-apiserver runs with ``--audit-policy-file`` and ``--audit-log-path``: every request made by
a service account (the workbench's, codeflare-sdk's) is logged at the ``Metadata`` level (who,
verb, resource, URI, timestamps; no bodies). Controllers and the administrator use client
certificates and are left out, so the log holds only what the benchmarks measure, and the
shared test plane never pays for auditing.

:class:`AuditLog` reads that log as requests (one per ``auditID``): a watch has a
``ResponseStarted`` entry when it opens and a ``ResponseComplete`` when it ends, every other
request only a ``ResponseComplete``. :meth:`AuditLog.requests` returns those received in a
time window; :func:`count` groups them by (user, verb, resource).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from .disposable import DisposableCluster

AUDIT_POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    # RequestReceived adds nothing the later stages lack; ResponseStarted marks an open watch.
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "Metadata", "userGroups": ["system:serviceaccounts"]},
        {"level": "None"},
    ],
}


class AuditedCluster(DisposableCluster):
    """``with AuditedCluster(tmp_dir) as plane:`` a disposable control plane with an audit log
    of every service account's requests at :attr:`audit_log`."""

    def __init__(self, state_dir: Path, *, apiserver_flags: tuple[str, ...] = ()) -> None:
        audit_dir = state_dir / "audit"
        super().__init__(
            state_dir,
            apiserver_flags=(
                f"--audit-policy-file={audit_dir / 'policy.yaml'}",
                f"--audit-log-path={audit_dir / 'audit.log'}",
                "--audit-log-format=json",
                "--audit-log-mode=blocking",  # written before the answer: nothing is late
                *apiserver_flags,
            ),
        )
        self.audit_dir = audit_dir

    @property
    def audit_log(self) -> AuditLog:
        return AuditLog(self.audit_dir / "audit.log")

    def _start_etcd_and_apiserver(self, state: Any, pki: Any) -> None:
        # The state directory is made afresh by _start: the policy is written just before use.
        self.audit_dir.mkdir(parents=True, exist_ok=True)
        (self.audit_dir / "policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
        super()._start_etcd_and_apiserver(state, pki)


@dataclass(frozen=True)
class Request:
    """One API request, as the audit log tells it."""

    audit_id: str
    user: str
    verb: str
    resource: str
    """``resource`` or ``resource/subresource`` (``""`` for a non-resource URL: the URI then)."""
    uri: str
    name: str
    """The object's name when the request names one (a create's from its body), else ``""``."""
    received: float
    """When the API server received it (Unix seconds)."""
    ended: float | None
    """When its answer completed (None: a watch still open when the log was read)."""

    @property
    def is_watch(self) -> bool:
        return self.verb == "watch"

    def open_at(self, moment: float) -> bool:
        """Whether this request was in progress at ``moment``."""
        return self.received <= moment and (self.ended is None or self.ended > moment)


class AuditLog:
    """The API server's audit log (JSON lines)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def requests(self, users: Iterable[str] | None = None) -> list[Request]:
        """Every request logged so far (by ``users`` only, when given), oldest first."""
        wanted = set(users) if users is not None else None
        merged: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return []
        with self.path.open() as handle:
            for line in handle:
                if not line.strip():
                    continue
                entry = json.loads(line)
                user = entry.get("user", {}).get("username", "")
                if wanted is not None and user not in wanted:
                    continue
                merged.setdefault(entry["auditID"], {}).update(
                    {k: v for k, v in entry.items() if k != "stage"},
                    **{f"stage:{entry['stage']}": entry.get("stageTimestamp")},
                )
        found = [_request(entry) for entry in merged.values()]
        return sorted(found, key=lambda r: r.received)


def _request(entry: dict[str, Any]) -> Request:
    ref = entry.get("objectRef") or {}
    resource = "/".join(part for part in (ref.get("resource"), ref.get("subresource")) if part)
    ended = entry.get("stage:ResponseComplete") or entry.get("stage:Panic")
    return Request(
        audit_id=entry["auditID"],
        user=entry.get("user", {}).get("username", ""),
        verb=entry.get("verb", ""),
        resource=resource or entry.get("requestURI", "").split("?")[0],
        uri=entry.get("requestURI", ""),
        name=ref.get("name") or "",
        received=_seconds(entry["requestReceivedTimestamp"]),
        ended=_seconds(ended) if ended else None,
    )


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def count(requests: Iterable[Request]) -> Counter[tuple[str, str, str]]:
    """How many requests per ``(user, verb, resource)``."""
    return Counter((r.user, r.verb, r.resource) for r in requests)


def received_between(requests: Iterable[Request], start: float, end: float) -> list[Request]:
    """The requests the API server received in ``[start, end)``."""
    return [r for r in requests if start <= r.received < end]


def describe(counts: Counter[tuple[str, str, str]]) -> str:
    """One line per (verb, resource, user), most first."""
    return "\n".join(
        f"  {n:4d}  {verb:6s} {resource:40s} {user}"
        for (user, verb, resource), n in counts.most_common()
    )
