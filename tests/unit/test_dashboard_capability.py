"""Capabilities of the dashboard proxy (jupyter_dw.server.dashboard_capability), without a
server: minting, checking, and every way a capability must be refused."""

from __future__ import annotations

import base64
import json

import pytest

from jupyter_dw.server.dashboard_capability import (
    EXECUTE,
    IDLE_TTL,
    MAX_LIFETIME,
    READ,
    WRITE,
    Capabilities,
    CapabilityError,
    Target,
)

DASH = Target("dash", "team-a")
T0 = 1_800_000_000.0


def mint(caps: Capabilities, target: Target = DASH, **kwargs: object) -> str:
    fields = {"uid": "uid-1", "user": "alice", "actions": [READ, WRITE], "now": T0, **kwargs}
    return caps.mint(target, **fields)  # type: ignore[arg-type]


def refused(caps: Capabilities, token: str, target: Target = DASH, now: float = T0) -> str:
    with pytest.raises(CapabilityError) as err:
        caps.verify(token, target, now=now)
    return err.value.code


def test_a_capability_opens_its_cluster_with_what_was_granted():
    caps = Capabilities()
    grant = caps.verify(mint(caps), DASH, now=T0 + 1)

    assert (grant.target, grant.uid, grant.user) == (DASH, "uid-1", "alice")
    assert grant.allows(READ) and grant.allows(WRITE)
    assert not grant.allows(EXECUTE)


@pytest.mark.parametrize(
    "other",
    [Target("dash2", "team-a"), Target("other", "team-a"), Target("dash", "team-b")],
)
def test_another_cluster_or_namespace_is_refused(other):
    caps = Capabilities()
    assert refused(caps, mint(caps), other) == "invalid_capability"


def test_a_capability_of_another_server_is_refused():
    assert refused(Capabilities(), mint(Capabilities())) == "invalid_capability"


def test_tampering_with_any_part_is_refused():
    caps = Capabilities()
    token = mint(caps)
    payload, mac = token.split(".")
    fields = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    for index, value in ((1, "mallory"), (2, [EXECUTE, READ, WRITE]), (3, T0 + 3600)):
        changed = list(fields)
        changed[index] = value
        forged = base64.urlsafe_b64encode(json.dumps(changed).encode()).rstrip(b"=").decode()
        assert refused(caps, f"{forged}.{mac}") == "invalid_capability"
    flipped = mac[:-2] + ("A" if mac[-2] != "A" else "B") + mac[-1]
    assert refused(caps, f"{payload}.{flipped}") == "invalid_capability"
    caps.verify(token, DASH, now=T0)  # the original still works


@pytest.mark.parametrize("token", ["", ".", "abc", "abc.", ".abc", "a.b.c", "é.é", "!!!.???"])
def test_malformed_capabilities_are_refused(token):
    assert refused(Capabilities(), token) == "invalid_capability"


def test_an_idle_capability_expires_and_use_keeps_it_alive():
    caps = Capabilities()
    token = mint(caps)
    # Used every ten minutes, it outlives the idle timeout many times over.
    for step in range(1, 6):
        caps.verify(token, DASH, now=T0 + step * 600)
    assert refused(caps, token, now=T0 + 5 * 600 + IDLE_TTL) == "capability_expired"


def test_a_capability_expires_after_its_lifetime_however_used():
    caps = Capabilities()
    token = mint(caps)
    now = T0
    while now + 600 < T0 + MAX_LIFETIME:
        now += 600
        caps.verify(token, DASH, now=now)
    assert refused(caps, token, now=T0 + MAX_LIFETIME) == "capability_expired"


def test_expired_is_renewable_forged_is_not():
    caps = Capabilities()
    with pytest.raises(CapabilityError) as expired:
        caps.verify(mint(caps, now=T0 - 2 * IDLE_TTL), DASH, now=T0)
    assert expired.value.renewable
    with pytest.raises(CapabilityError) as forged:
        caps.verify(mint(Capabilities()), DASH, now=T0)
    assert not forged.value.renewable


def test_a_capability_from_the_future_is_refused():
    caps = Capabilities()
    assert refused(caps, mint(caps, now=T0 + 60), now=T0) == "capability_expired"


def test_unknown_actions_cannot_be_granted():
    with pytest.raises(ValueError, match="unknown actions"):
        mint(Capabilities(), actions=["read", "admin"])


def test_the_secret_never_shows():
    secret = b"s" * 32
    caps = Capabilities(secret)
    assert "s" * 8 not in repr(caps)
    assert secret.hex() not in repr(caps)


def test_remembered_capabilities_are_bounded(monkeypatch):
    monkeypatch.setattr("jupyter_dw.server.dashboard_capability.MAX_LIVE", 3)
    caps = Capabilities()
    tokens = [mint(caps, now=T0 + i) for i in range(4)]
    # The least recently used one was forgotten, so it no longer opens anything.
    assert refused(caps, tokens[0], now=T0 + 5) == "capability_expired"
    for token in tokens[1:]:
        caps.verify(token, DASH, now=T0 + 5)


def test_only_the_canonical_spelling_is_accepted():
    caps = Capabilities()
    token = mint(caps)
    payload, mac = token.split(".")
    # The last character of 43 base64 characters (32 bytes) carries 2 unused bits: every
    # character with the same 4 high bits decodes to the same MAC.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    index = alphabet.index(mac[-1])
    same_bytes = [c for c in alphabet if alphabet.index(c) >> 2 == index >> 2 and c != mac[-1]]
    assert len(same_bytes) == 3
    for other in same_bytes:
        assert base64.urlsafe_b64decode(mac[:-1] + other + "=") == base64.urlsafe_b64decode(
            mac + "="
        )
        assert refused(caps, f"{payload}.{mac[:-1]}{other}") == "invalid_capability"
    caps.verify(token, DASH, now=T0)
