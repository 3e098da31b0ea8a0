"""Ray's own authentication on the clusters jupyter_dw creates.
The modes, the rayVersion rule, the manifest parts, how a RayCluster is authenticated and the
Secret its token may come from. What KubeRay v1.6.2 does with each:
docs/explanation/security.md.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.names import RAY_GROUP, RAYCLUSTER_KIND

RayAuthMode = Literal["token", "k8s", "disabled"]
RAY_AUTH_MODES: tuple[str, ...] = ("token", "k8s", "disabled")
"""The ``ray_auth`` setting: KubeRay's token (the default), Kubernetes-delegated tokens, or off
(an administrator's explicit choice)."""
DEFAULT_RAY_AUTH: RayAuthMode = "token"

ClusterAuth = Literal["token", "k8s", "disabled", "none"]
"""How a RayCluster is authenticated as it stands: ``none`` is a cluster made without any Ray
authentication (a KubeRay too old for ``authOptions``, or another tool)."""

MIN_RAY_VERSION: Mapping[str, tuple[int, int, int]] = {"token": (2, 52, 0), "k8s": (2, 55, 0)}
"""The oldest Ray KubeRay accepts for each mode (``ValidateRayClusterSpec``)."""

RAY_AUTH_MODE_ENV = "RAY_AUTH_MODE"
RAY_AUTH_TOKEN_ENV = "RAY_AUTH_TOKEN"
RAY_K8S_TOKEN_AUTH_ENV = "RAY_ENABLE_K8S_TOKEN_AUTH"
RESERVED_ENV: tuple[str, ...] = (RAY_AUTH_MODE_ENV, RAY_AUTH_TOKEN_ENV, RAY_K8S_TOKEN_AUTH_ENV)
"""Variables a request's ``env`` may not set: KubeRay keeps a container's own value of them."""
AUTH_TOKEN_KEY = "auth_token"
"""The Secret key KubeRay keeps the token under."""

KUBERAY_REFUSALS: tuple[str, ...] = ("InvalidRayClusterSpec", "InvalidRayClusterMetadata")
"""Reasons of KubeRay's Warning events for a RayCluster it will not reconcile at all."""

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?([.+-]?[0-9A-Za-z.+-]*)")

OPEN_WARNING = (
    "Ray authentication is off on this cluster: its dashboard, Jobs API and client port accept "
    "anyone who can reach the cluster's pods, and a submitted job runs as the cluster"
)


class RayVersionError(ValueError):
    """A Ray version that is malformed, or older than the authentication mode needs."""


def parse_ray_version(text: str) -> tuple[int, int, int]:
    """``(major, minor, patch)`` of a Ray version such as ``2.60.0`` (a missing patch is 0; a
    suffix such as ``rc1`` is ignored, as KubeRay's ``version.ParseGeneric`` does)."""
    match = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise RayVersionError(f"{text!r} is not a Ray version such as '2.60.0'")
    return int(match[1]), int(match[2]), int(match[3] or 0)


def version_text(version: tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


def check_ray_version(text: str, mode: str) -> str:
    """``text`` (stripped) when it is a Ray version ``mode`` can run on, else
    :class:`RayVersionError` saying which version is needed and why."""
    version = parse_ray_version(text)
    needed = MIN_RAY_VERSION.get(mode)
    if needed is not None and version < needed:
        what = "Kubernetes-delegated" if mode == "k8s" else "token"
        raise RayVersionError(
            f"Ray {version_text(version)} is older than {version_text(needed)}, the oldest Ray "
            f"KubeRay runs with {what} authentication (this server's ray_auth={mode}); use a "
            f"Ray {version_text(needed)} or newer image"
        )
    return text.strip()


def auth_options(mode: str) -> dict[str, Any]:
    """``spec.authOptions`` for ``mode``."""
    if mode == "k8s":
        return {"mode": "token", "enableK8sTokenAuth": True}
    if mode == "disabled":
        return {"mode": "disabled"}
    return {"mode": "token"}


def container_env(mode: str) -> list[dict[str, str]]:
    """Variables jupyter_dw sets in the Ray containers for ``mode``: ``RAY_AUTH_MODE=disabled``
    when auth is off (KubeRay sets the others itself)."""
    return [{"name": RAY_AUTH_MODE_ENV, "value": "disabled"}] if mode == "disabled" else []


# --------------------------------------------------------------------------------------------
# A RayCluster as it stands
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RayAuth:
    """How a RayCluster is authenticated (read from the object), and the warning to show on
    every card and widget when it is not."""

    mode: ClusterAuth
    warning: str | None = None

    @property
    def sends_token(self) -> bool:
        """Whether clients must send a bearer token: the one in the cluster's KubeRay-made
        Secret (``token``), or their own Kubernetes token (``k8s``)."""
        return self.mode in ("token", "k8s")

    def to_json(self) -> dict[str, Any]:
        """``{"mode", "warning"}``."""
        return {"mode": self.mode, "warning": self.warning}


def _head_env(raycluster: Mapping[str, Any]) -> dict[str, Any]:
    template = _map(_map(_map(raycluster.get("spec")).get("headGroupSpec")).get("template"))
    containers = _map(template.get("spec")).get("containers")
    first = _map(containers[0]) if isinstance(containers, list) and containers else {}
    env = first.get("env")
    return {
        str(e.get("name")): e.get("value")
        for e in (env if isinstance(env, list) else [])
        if isinstance(e, Mapping)
    }


def ray_auth_of(raycluster: Mapping[str, Any]) -> RayAuth:
    """How ``raycluster`` is authenticated: KubeRay's ``authOptions``, else the Ray container's
    own ``RAY_AUTH_MODE``; never raises on a malformed object."""
    options = _map(_map(raycluster.get("spec")).get("authOptions"))
    if options.get("mode") == "token":
        return RayAuth("k8s" if options.get("enableK8sTokenAuth") is True else "token")
    env_mode = _head_env(raycluster).get(RAY_AUTH_MODE_ENV)
    if options.get("mode") == "disabled" or env_mode == "disabled":
        return RayAuth("disabled", f"{OPEN_WARNING} (turned off on purpose: ray_auth=disabled)")
    return RayAuth(
        "none",
        f"{OPEN_WARNING} (created without spec.authOptions: a KubeRay older than 1.6, or "
        "another tool)",
    )


# --------------------------------------------------------------------------------------------
# The token and its Secret
# --------------------------------------------------------------------------------------------


class RayToken:
    """A cluster's Ray token. Its ``repr`` and ``str`` never show it: only :meth:`reveal` does,
    where it goes into an upstream header."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def header(self) -> str:
        """The ``Authorization`` header value Ray checks."""
        return f"Bearer {self._value}"

    def __repr__(self) -> str:
        return "RayToken(<hidden>)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RayToken) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class TokenUnavailable(Exception):
    """The token of a cluster cannot be used; ``code`` says why (``secret_missing``,
    ``secret_not_owned``, ``secret_malformed``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def token_secret_name(cluster: str) -> str:
    """The name KubeRay gives the token Secret of RayCluster ``cluster`` (``utils.CheckName``:
    at most 50 characters, the end kept; a leading digit or punctuation becomes ``r``)."""
    name = cluster[-50:] if len(cluster) > 50 else cluster
    if name and (name[0].isdigit() or not name[0].isalnum()):
        name = "r" + name[1:]
    return name


def token_from_secret(secret: Mapping[str, Any], raycluster: Mapping[str, Any]) -> RayToken:
    """The token in ``secret``, after checking that this RayCluster owns it: its controller
    owner reference names a ``ray.io`` RayCluster with ``raycluster``'s UID. KubeRay reuses any
    Secret of the expected name, so one planted before the cluster existed is refused."""
    cluster_meta = _map(raycluster.get("metadata"))
    uid, name = cluster_meta.get("uid"), cluster_meta.get("name")
    meta = _map(secret.get("metadata"))
    secret_name = meta.get("name")
    owners = meta.get("ownerReferences")
    controller = next(
        (
            o
            for o in (owners if isinstance(owners, list) else [])
            if isinstance(o, Mapping) and o.get("controller") is True
        ),
        None,
    )
    owned = (
        controller is not None
        and bool(uid)
        and controller.get("uid") == uid
        and controller.get("kind") == RAYCLUSTER_KIND
        and str(controller.get("apiVersion", "")).split("/")[0] == RAY_GROUP
    )
    if not owned:
        holder = (
            f"{controller.get('kind')} {controller.get('name')} (uid {controller.get('uid')})"
            if controller is not None
            else "nobody"
        )
        raise TokenUnavailable(
            "secret_not_owned",
            f"Secret {secret_name} is controlled by {holder}, not by RayCluster {name} "
            f"(uid {uid}): its token is not used",
        )
    raw = _map(secret.get("data")).get(AUTH_TOKEN_KEY)
    try:
        token = base64.b64decode(str(raw), validate=True).decode() if raw else ""
    except (binascii.Error, UnicodeDecodeError):
        token = ""
    if not token or any(c.isspace() or not c.isprintable() for c in token):
        raise TokenUnavailable(
            "secret_malformed", f"Secret {secret_name} has no usable '{AUTH_TOKEN_KEY}' key"
        )
    return RayToken(token)


# --------------------------------------------------------------------------------------------
# KubeRay's silent refusal
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """KubeRay refused to reconcile a RayCluster: its event's reason and words."""

    reason: str
    message: str | None
    time: str | None = None


def kuberay_refusal(
    events: Sequence[Mapping[str, Any]], raycluster: Mapping[str, Any]
) -> Refusal | None:
    """The newest of KubeRay's refusal events (:data:`KUBERAY_REFUSALS`) about this very
    RayCluster (its UID), or None."""
    uid = _map(raycluster.get("metadata")).get("uid")
    found: list[tuple[str, Refusal]] = []
    for event in events:
        involved = _map(event.get("involvedObject"))
        if not uid or involved.get("uid") != uid or involved.get("kind") != RAYCLUSTER_KIND:
            continue
        reason = event.get("reason")
        if reason not in KUBERAY_REFUSALS or event.get("type") != "Warning":
            continue
        when = str(
            event.get("lastTimestamp")
            or event.get("eventTime")
            or _map(event.get("metadata")).get("creationTimestamp")
            or ""
        )
        message = event.get("message")
        found.append(
            (when, Refusal(str(reason), message if isinstance(message, str) else None, when))
        )
    return max(found, key=lambda pair: pair[0])[1] if found else None


@dataclass(frozen=True)
class RayEndpoint:
    """Where a kernel's own Ray clients reach a cluster's head (``base_url``: its dashboard
    and Jobs API) and the token they send (None: the cluster has no auth). Its JSON carries
    the token: it goes only to a kernel of the same pod, over its server's kernel channel."""

    cluster: str
    base_url: str
    token: RayToken | None

    def headers(self) -> dict[str, str]:
        """The headers a Jobs API request carries."""
        return {"Authorization": self.token.header()} if self.token is not None else {}

    def to_json(self) -> dict[str, Any]:
        """``{"cluster", "base_url", "token"}``, the token revealed."""
        return {
            "cluster": self.cluster,
            "base_url": self.base_url,
            "token": self.token.reveal() if self.token is not None else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RayEndpoint:
        """What :meth:`to_json` made."""
        token = data.get("token")
        return cls(str(data["cluster"]), str(data["base_url"]), RayToken(token) if token else None)
