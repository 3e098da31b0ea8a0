"""Ray authentication rules: versions, how a RayCluster is authenticated, the token Secret's
owner check, KubeRay's refusal events as the ``stalled`` state, and the proxy's headers."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from tornado import httputil

from jupyter_dw.core.doctor import _ray_auth_check
from jupyter_dw.domain.cluster_state import cluster_snapshot
from jupyter_dw.domain.ray_auth import (
    RayToken,
    RayVersionError,
    TokenUnavailable,
    check_ray_version,
    kuberay_refusal,
    parse_ray_version,
    ray_auth_of,
    token_from_secret,
    token_secret_name,
)
from jupyter_dw.k8s.discovery import Discovery, _has_auth_options
from jupyter_dw.server.dashboard_capability import Target
from jupyter_dw.server.dashboard_proxy import Located, upstream_request_headers

UID = "5c1e4a4e-0000-4000-8000-000000000001"
TOKEN = "c2VjcmV0LXRva2VuLXZhbHVl"


def raycluster(name: str = "demo", uid: str = UID, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid}, "spec": spec}


def secret(owner_uid: str | None = UID, token: str = TOKEN, **owner: Any) -> dict[str, Any]:
    reference = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": "demo",
        "uid": owner_uid,
        "controller": True,
        **owner,
    }
    return {
        "metadata": {
            "name": "demo",
            "labels": {"ray.io/cluster": "demo"},
            "ownerReferences": [reference] if owner_uid else [],
        },
        "data": {"auth_token": base64.b64encode(token.encode()).decode()},
    }


# --- versions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("2.60.0", (2, 60, 0)),
        ("2.52", (2, 52, 0)),
        ("v2.55.1", (2, 55, 1)),
        ("3.0.0rc1", (3, 0, 0)),
    ],
)
def test_ray_versions_parse_like_kuberay(text, parsed):
    assert parse_ray_version(text) == parsed


@pytest.mark.parametrize("text", ["", "2", "two", "2.x.0", "2.60.0 x", "2.60.0\nx", 2.6])
def test_what_is_not_a_version_is_refused(text):
    with pytest.raises(RayVersionError):
        parse_ray_version(text)


@pytest.mark.parametrize(
    ("version", "mode", "ok"),
    [
        ("2.52.0", "token", True),
        ("2.51.9", "token", False),
        ("2.55.0", "k8s", True),
        ("2.54.0", "k8s", False),
        ("1.0.0", "disabled", True),
    ],
)
def test_the_oldest_ray_each_mode_runs_on(version, mode, ok):
    if ok:
        assert check_ray_version(version, mode) == version
    else:
        with pytest.raises(RayVersionError, match="older than"):
            check_ray_version(version, mode)


# --- how a RayCluster is authenticated ----------------------------------------------------------


def test_auth_of_a_raycluster_from_its_spec():
    assert ray_auth_of(raycluster(authOptions={"mode": "token"})).mode == "token"
    assert ray_auth_of(raycluster(authOptions={"mode": "token"})).warning is None
    k8s = raycluster(authOptions={"mode": "token", "enableK8sTokenAuth": True})
    assert ray_auth_of(k8s).mode == "k8s"
    disabled = ray_auth_of(raycluster(authOptions={"mode": "disabled"}))
    assert disabled.mode == "disabled" and "ray_auth=disabled" in (disabled.warning or "")
    container = {"name": "ray-head", "env": [{"name": "RAY_AUTH_MODE", "value": "disabled"}]}
    by_env = raycluster(headGroupSpec={"template": {"spec": {"containers": [container]}}})
    assert ray_auth_of(by_env).mode == "disabled"
    none = ray_auth_of(raycluster())
    assert none.mode == "none" and "authOptions" in (none.warning or "")
    assert ray_auth_of({"spec": "garbage"}).mode == "none"  # never raises


# --- the token Secret -------------------------------------------------------------------------


def test_the_token_of_the_secret_this_cluster_controls():
    token = token_from_secret(secret(), raycluster())
    assert token.reveal() == TOKEN
    assert token.header() == f"Bearer {TOKEN}"
    assert TOKEN not in repr(token) and TOKEN not in str(token) and TOKEN not in f"{token!r}"


@pytest.mark.parametrize(
    "planted",
    [
        secret(owner_uid=None),  # made by someone before the cluster existed
        secret(owner_uid="another-uid"),  # a former cluster of the same name
        secret(kind="RayJob"),  # the right UID on another kind
        secret(controller=False),  # an owner, but not the controller
        secret(apiVersion="evil.io/v1"),
    ],
)
def test_a_secret_this_cluster_does_not_control_is_never_used(planted):
    with pytest.raises(TokenUnavailable) as info:
        token_from_secret(planted, raycluster())
    assert info.value.code == "secret_not_owned"
    assert TOKEN not in str(info.value)


@pytest.mark.parametrize("data", [{}, {"auth_token": "!!not base64"}, {"auth_token": ""}])
def test_a_secret_without_a_usable_token(data):
    broken = {**secret(), "data": data}
    with pytest.raises(TokenUnavailable) as info:
        token_from_secret(broken, raycluster())
    assert info.value.code == "secret_malformed"


@pytest.mark.parametrize(
    ("cluster", "name"),
    [("demo", "demo"), ("a" * 53, "a" * 50), ("x" * 3 + "-" + "b" * 49, "-" + "b" * 49)],
)
def test_the_secret_name_is_kuberays_check_name(cluster, name):
    expected = name if not name.startswith("-") else "r" + name[1:]
    assert token_secret_name(cluster) == expected


# --- KubeRay's refusal: stalled with its words ------------------------------------------------


def refusal_event(uid: str = UID, reason: str = "InvalidRayClusterSpec", when: str = "t2"):
    return {
        "type": "Warning",
        "reason": reason,
        "message": f"The RayCluster spec is invalid ns/demo: {reason} details",
        "involvedObject": {"kind": "RayCluster", "name": "demo", "uid": uid},
        "lastTimestamp": when,
    }


def test_kuberays_refusal_of_this_very_cluster():
    events = [
        refusal_event(when="t1"),
        refusal_event(reason="InvalidRayClusterMetadata", when="t3"),
        refusal_event(uid="former-cluster", when="t9"),
        {**refusal_event(when="t8"), "type": "Normal"},
        {**refusal_event(when="t7"), "reason": "FailedToCreatePod"},
    ]
    refusal = kuberay_refusal(events, raycluster())
    assert refusal is not None
    assert (refusal.reason, refusal.time) == ("InvalidRayClusterMetadata", "t3")
    assert kuberay_refusal(events[2:], raycluster()) is None


def _admitted_workload() -> dict[str, Any]:
    conditions = [
        {"type": t, "status": "True", "reason": t, "message": ""}
        for t in ("QuotaReserved", "Admitted")
    ]
    return {"metadata": {"name": "wl"}, "status": {"conditions": conditions}}


def test_a_refused_cluster_is_stalled_with_kuberays_words_even_when_kueue_admits_it():
    rc = raycluster(suspend=False, authOptions={"mode": "token"}, rayVersion="2.50.0")
    refusal = kuberay_refusal([refusal_event()], rc)
    status = cluster_snapshot(rc, _admitted_workload(), refusal=refusal)
    assert status.state == "stalled"
    assert status.reason == "InvalidRayClusterSpec"
    assert status.message == "The RayCluster spec is invalid ns/demo: InvalidRayClusterSpec details"
    assert cluster_snapshot(rc, _admitted_workload()).state == "admitted"  # without the event


def test_a_refusal_from_before_a_head_started_is_history():
    rc = raycluster(suspend=False)
    rc["status"] = {"head": {"podName": "demo-head-x"}}
    status = cluster_snapshot(
        rc, _admitted_workload(), refusal=kuberay_refusal([refusal_event()], rc)
    )
    assert status.state == "starting"


# --- the dashboard proxy's headers ------------------------------------------------------------


def test_the_proxy_sends_rays_token_and_never_the_pages_own():
    browser = httputil.HTTPHeaders(
        {
            "Authorization": "Bearer jupyter-token",
            "X-Ray-Authorization": "Bearer chosen-by-the-page",
            "Cookie": "ray-authentication-token=planted",
            "Accept": "application/json",
        }
    )
    forwarded = upstream_request_headers(browser)
    assert "X-Ray-Authorization" not in forwarded and "Authorization" not in forwarded
    located = Located(Target("demo", "ns"), UID, "http://x", RayToken(TOKEN))
    sent = located.upstream_headers(forwarded)
    assert sent.get_list("Authorization") == [f"Bearer {TOKEN}"]
    assert "Cookie" not in sent and sent["Accept"] == "application/json"
    assert TOKEN not in repr(located)
    open_cluster = Located(Target("demo", "ns"), UID, "http://x")
    assert "Authorization" not in open_cluster.upstream_headers(upstream_request_headers(browser))


# --- the capability: KubeRay's schema ---------------------------------------------------------


def _document(spec_properties: dict[str, Any]) -> dict[str, Any]:
    gvk = [{"group": "ray.io", "version": "v1", "kind": "RayCluster"}]
    return {
        "components": {
            "schemas": {
                "io.ray.v1.RayJob": {
                    "x-kubernetes-group-version-kind": [{**gvk[0], "kind": "RayJob"}],
                    "properties": {"spec": {"properties": {"authOptions": {}}}},
                },
                "io.ray.v1.RayCluster": {
                    "x-kubernetes-group-version-kind": gvk,
                    "properties": {"spec": {"properties": spec_properties}},
                },
            }
        }
    }


def test_auth_options_are_read_from_the_rayclusters_schema():
    assert _has_auth_options(_document({"authOptions": {}, "suspend": {}})) is True
    assert _has_auth_options(_document({"suspend": {}})) is False
    assert _has_auth_options({"components": {"schemas": {}}}) is None


@pytest.mark.parametrize(
    ("mode", "served", "status"),
    [
        ("token", True, "ok"),
        ("k8s", True, "ok"),
        ("token", False, "optional-missing"),
        ("token", None, "optional-missing"),
        ("disabled", True, "optional-missing"),
    ],
)
def test_the_doctor_says_whether_clusters_get_ray_auth(mode, served, status):
    check = _ray_auth_check(Discovery(ray_version="v1", ray_auth_options=served), mode)
    assert check.status == status
    assert not check.failing
    assert f"ray_auth={mode}" in check.detail
