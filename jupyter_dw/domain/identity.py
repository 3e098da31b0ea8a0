"""Who the API server thinks this workbench is (a SelfSubjectReview's ``status.userInfo``):
data only, so a kernel reading through its server holds it without the Kubernetes layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Identity:
    """Who the API server thinks we are (SelfSubjectReview ``status.userInfo``)."""

    username: str | None
    groups: tuple[str, ...] = ()
    uid: str | None = None

    @property
    def service_account(self) -> tuple[str, str] | None:
        """``(namespace, name)`` when the identity is a service account."""
        if self.username and self.username.startswith(SERVICE_ACCOUNT_PREFIX):
            namespace, _, name = self.username[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
            return namespace, name
        return None

    def to_json(self) -> dict[str, Any]:
        """``{"username", "groups", "kind", "service_account"}`` for ``GET context``."""
        sa = self.service_account
        return {
            "username": self.username,
            "groups": list(self.groups),
            "kind": "ServiceAccount" if sa else ("User" if self.username else None),
            "service_account": {"namespace": sa[0], "name": sa[1]} if sa else None,
        }
