"""Capabilities of the Ray dashboard proxy: short-lived grants carried in the URL path.
They authorize a sandboxed dashboard page's own requests, which carry no Jupyter cookie: an HMAC
over the user, the allowed actions and the cluster. Pure (the clock is a parameter);
docs/explanation/security.md.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

VERSION = 1
IDLE_TTL = 15 * 60.0
"""Seconds a capability stays valid after its last use."""
MAX_LIFETIME = 8 * 3600.0
"""Seconds a capability is valid at most after issue, however much it is used."""
MAX_LIVE = 10_000
"""Capabilities remembered at most (least recently used dropped first): memory stays bounded
even if something keeps minting."""

READ, WRITE, EXECUTE = "read", "write", "execute"
ACTIONS = frozenset({READ, WRITE, EXECUTE})


class CapabilityError(Exception):
    """A capability that does not open this cluster. ``code`` says why for the JSON error;
    ``renewable`` when navigating to the dashboard again would give a good one (it expired, or
    belongs to another session) rather than a forged or mistaken one."""

    def __init__(
        self, message: str, *, code: str = "invalid_capability", renewable: bool = False
    ) -> None:
        super().__init__(message)
        self.code = code
        self.renewable = renewable


@dataclass(frozen=True)
class Target:
    """The RayCluster a capability opens, by name in a namespace."""

    name: str
    namespace: str


@dataclass(frozen=True)
class Grant:
    """What a valid capability allows: ``user`` may do ``actions`` on the dashboard of
    ``target``, as long as that cluster is still the object with ``uid``."""

    target: Target
    uid: str
    user: str
    actions: frozenset[str]
    issued: float

    def allows(self, action: str) -> bool:
        """Whether ``action`` (``read``, ``write`` or ``execute``) was granted."""
        return action in self.actions


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class _Use:
    issued: float
    last_used: float


class Capabilities:
    """Mints and checks capabilities with a secret of its own (one per server)."""

    def __init__(
        self,
        secret: bytes | None = None,
        *,
        idle_ttl: float = IDLE_TTL,
        max_lifetime: float = MAX_LIFETIME,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret if secret is not None else secrets.token_bytes(32)
        self.idle_ttl = idle_ttl
        self.max_lifetime = max_lifetime
        self._clock = clock
        # The MAC of every live capability and when it was last used: the idle timeout needs
        # state, and a capability the server does not remember is not valid.
        self._live: OrderedDict[bytes, _Use] = OrderedDict()

    def __repr__(self) -> str:
        # Never show the secret (or the live MACs) in a log or a traceback.
        return f"Capabilities(idle_ttl={self.idle_ttl}, max_lifetime={self.max_lifetime})"

    def mint(
        self,
        target: Target,
        uid: str,
        user: str,
        actions: Iterable[str],
        now: float | None = None,
    ) -> str:
        """A capability for ``user`` to do ``actions`` on the dashboard of ``target`` (the
        object with ``uid``), issued at ``now`` (default: the clock)."""
        now = self._clock() if now is None else now
        granted = sorted(set(actions))
        unknown = set(granted) - ACTIONS
        if unknown:
            raise ValueError(f"unknown actions {sorted(unknown)}")
        payload = json.dumps([VERSION, user, granted, now, uid], separators=(",", ":")).encode()
        mac = self._mac(target, payload)
        self._forget_stale(now)
        self._live[mac] = _Use(issued=now, last_used=now)
        while len(self._live) > MAX_LIVE:
            self._live.popitem(last=False)
        return f"{_b64(payload)}.{_b64(mac)}"

    def verify(self, token: str, target: Target, now: float | None = None) -> Grant:
        """The grant of ``token`` for ``target``, counting this as a use; raise
        :class:`CapabilityError` if it was not issued for ``target`` by this server, was
        altered, or has expired."""
        now = self._clock() if now is None else now
        payload, mac = self._split(token)
        if not hmac.compare_digest(mac, self._mac(target, payload)):
            raise CapabilityError("the capability does not open this cluster's dashboard")
        version, user, actions, issued, uid = self._fields(payload)
        if version != VERSION:
            raise CapabilityError("unknown capability version")
        use = self._live.get(mac)
        if use is None or not self._fresh(use, now):
            self._live.pop(mac, None)
            raise CapabilityError(
                "the capability has expired", code="capability_expired", renewable=True
            )
        use.last_used = now
        self._live.move_to_end(mac)
        return Grant(target, uid, user, frozenset(actions), issued)

    # -- internals -----------------------------------------------------------------------

    def _mac(self, target: Target, payload: bytes) -> bytes:
        # JSON keeps the fields apart: no name/namespace split can collide with another.
        bound = json.dumps([target.name, target.namespace], separators=(",", ":"))
        return hmac.new(self._secret, bound.encode() + b"\n" + payload, hashlib.sha256).digest()

    def _fresh(self, use: _Use, now: float) -> bool:
        return (
            use.issued <= now < use.issued + self.max_lifetime
            and now < use.last_used + self.idle_ttl
        )

    def _forget_stale(self, now: float) -> None:
        for mac in [m for m, use in self._live.items() if not self._fresh(use, now)]:
            del self._live[mac]

    @staticmethod
    def _split(token: str) -> tuple[bytes, bytes]:
        encoded_payload, dot, encoded_mac = token.partition(".")
        if not dot or not encoded_payload or not encoded_mac:
            raise CapabilityError("malformed capability")
        try:
            payload, mac = _unb64(encoded_payload), _unb64(encoded_mac)
        except (binascii.Error, ValueError) as err:
            raise CapabilityError("malformed capability") from err
        # Only the one spelling this server wrote: base64's unused low bits would otherwise
        # let several strings carry the same capability.
        if _b64(payload) != encoded_payload or _b64(mac) != encoded_mac:
            raise CapabilityError("malformed capability")
        return payload, mac

    @staticmethod
    def _fields(payload: bytes) -> tuple[int, str, list[str], float, str]:
        # Only reached with a valid MAC: the payload is one this server wrote.
        version, user, actions, issued, uid = json.loads(payload)
        return int(version), str(user), [str(a) for a in actions], float(issued), str(uid)
