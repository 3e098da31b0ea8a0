"""No request through jupyter_dw reaches another namespace, proved on the real API server.

The workbench's service account may do everything jupyter_dw could ever do (create, delete,
deletecollection of RayClusters, and more) in a second namespace too, so any leak would
succeed: the control reads and deletes there with the same token directly. Then every trick an
attacker can put in a request is sent to the server (paths, encodings, query parameters,
headers, body fields, labels), and the second namespace's full listing must be exactly what it
was, object by object; the workbench's own namespace holds only what was validly created.

Paths are written on a raw socket, so no client of ours normalizes them first.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.integration.clusters_support import (
    create_suspended_raycluster,
    make_queue,
    namespace_objects,
    wait_gone,
)
from tests.integration.workbench_rbac import RAY_RULE_VERBS, namespace_rules

pytestmark = pytest.mark.cluster

# Everything jupyter_dw may need, and more: a leaked write would not be stopped by RBAC.
WORKBENCH_RULES = [
    *namespace_rules([*RAY_RULE_VERBS, "deletecollection", "update", "patch"]),
    {"apiGroups": [""], "resources": ["services", "configmaps"], "verbs": ["*"]},
]
WORKBENCH_CLUSTER_RULES = None

MINE = "mine"
VICTIM = "victim"


@pytest.fixture
def other(kube, namespace, identity) -> Iterator[str]:
    """A second namespace where the workbench's service account has the same rights, with a
    RayCluster of the same name as the workbench's own and one of its own."""
    name = f"{namespace}-other"
    core = client.CoreV1Api(kube)
    rbac = client.RbacAuthorizationV1Api(kube)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        rbac.create_namespaced_role(name, {"metadata": {"name": "wb"}, "rules": WORKBENCH_RULES})
        rbac.create_namespaced_role_binding(
            name,
            {
                "metadata": {"name": "wb"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "wb"},
                "subjects": [
                    {"kind": "ServiceAccount", "name": identity.name, "namespace": namespace}
                ],
            },
        )
        for cluster in (MINE, VICTIM):
            create_suspended_raycluster(kube, name, cluster)
        yield name
    finally:
        core.delete_namespace(name, propagation_policy="Background")


async def send(port: int, method: str, path: str, headers: dict[str, str], body: Any = None):
    """One request with ``path`` exactly as written; ``(status, JSON body or None)``."""
    data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    writer.write(
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{head}"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        "Connection: close\r\n\r\n".encode()
        + data
    )
    await writer.drain()
    raw = await reader.read()
    writer.close()
    status = int(raw.split(b" ", 2)[1])
    payload = raw.split(b"\r\n\r\n", 1)[1]
    try:
        return status, json.loads(payload)
    except ValueError:
        return status, None


def attacks(other: str) -> list[tuple[str, str, Any]]:
    """``(method, path under base_url, body)``: every way this test knows to name another
    namespace, or a cluster in one."""
    names = [
        VICTIM,  # only in the other namespace: must be 404 here
        f"{other}%2F{VICTIM}",
        f"{other}%2f{VICTIM}",
        f"..%2F..%2F{other}%2Frayclusters%2F{VICTIM}",
        f"..%2F..%2Fnamespaces%2F{other}%2Frayclusters%2F{VICTIM}",
        f"%2E%2E%2F%2E%2E%2Fnamespaces%2F{other}%2Frayclusters",
        f"{VICTIM}%3Fnamespace%3D{other}",
        f"{VICTIM}%23",
        f"{other}:{VICTIM}",
        f"{VICTIM}.{other}",
        f"{VICTIM}%00",
        f"%20{VICTIM}",
        f"{VICTIM}%2F..%2F..%2F{other}",
        "%2E",
        "..",
        "%C0%AE%C0%AE",  # an overlong UTF-8 '..'
        "%252E%252E",  # double-encoded '..'
    ]
    found: list[tuple[str, str, Any]] = []
    for name in names:
        for method in ("GET", "DELETE"):
            found.append((method, f"dw/api/clusters/{name}", None))
        found.append(("GET", f"dw/ray/{name}/", None))
    for path in (
        f"dw/api/namespaces/{other}/clusters",
        f"dw/api/clusters/{VICTIM}/../../namespaces/{other}/clusters/{VICTIM}",
        f"dw/api/{other}/clusters/{VICTIM}",
        f"dw/api/clusters?namespace={other}",
        f"dw/api/clusters/{MINE}?namespace={other}",
        f"dw/api/queues?namespace={other}",
        f"dw/api/context?namespace={other}",
        f"dw/ray/{MINE}/?namespace={other}",
        f"dw/ray/{MINE}/..%2F..%2F{other}%2F{VICTIM}/",
    ):
        found.append(("GET", path, None))
    found.append(("DELETE", f"dw/api/clusters/{VICTIM}?namespace={other}&dryRun=All", None))
    found.append(("DELETE", f"dw/api/clusters?namespace={other}", None))
    spec = {"name": "pin-x", "workers": 0, "head_cpu": "100m", "head_memory": "256Mi"}
    bodies: list[Any] = [
        {**spec, "namespace": other},
        {**spec, "metadata": {"namespace": other}},
        {**spec, "metadata": {"name": VICTIM, "namespace": other}},
        {**spec, "name": f"{other}/{VICTIM}"},
        {**spec, "name": f"../{other}/{VICTIM}"},
        {**spec, "name": VICTIM, "kind": "Namespace"},
        {**spec, "apiVersion": "v1", "kind": "Service"},
        {**spec, "labels": {"kueue.x-k8s.io/queue-name": "x"}},
        {**spec, "labels": {f"{other}/x": "y", "namespace": "../x"}},
        {**spec, "annotations": {"namespace": other}},
        {**spec, "env": {"NAMESPACE": other}, "namespace": other},
        [{**spec, "namespace": other}],
        {"spec": {**spec, "namespace": other}},
    ]
    for body in bodies:
        found.append(("POST", "dw/api/clusters", body))
        found.append(("POST", "dw/api/clusters/fit", body))
        found.append(("POST", f"dw/api/clusters?namespace={other}", body))
    return found


async def test_no_request_reaches_another_namespace(
    kube,
    kueue,
    namespace,
    kueue_api_version,
    identity,
    other,
    jp_fetch,
    jp_http_port,
    jp_base_url,
    jp_auth_header,
):
    make_queue(kueue)
    create_suspended_raycluster(kube, namespace, MINE)
    await jp_fetch("dw", "api", "version")  # the server is up
    # Control: the same token may read and delete in the other namespace, directly.
    custom = client.CustomObjectsApi(identity.api_client())
    assert custom.get_namespaced_custom_object("ray.io", "v1", other, "rayclusters", VICTIM)
    probe = f"probe-{uuid.uuid4().hex[:6]}"
    create_suspended_raycluster(kube, other, probe)
    # Foreground: the probe is gone only once what KubeRay made for it (its head Service) is,
    # so the listing below is not taken while the garbage collector still works on it.
    custom.delete_namespaced_custom_object(
        "ray.io", "v1", other, "rayclusters", probe, propagation_policy="Foreground"
    )
    assert wait_gone(kube, other, probe)

    before_other = namespace_objects(kube, other, kueue_api_version)
    before_own = namespace_objects(kube, namespace, kueue_api_version)
    assert ("rayclusters", VICTIM) in before_other and ("rayclusters", MINE) in before_own

    answers: dict[int, int] = {}
    for method, path, body in attacks(other):
        status, payload = await send(jp_http_port, method, jp_base_url + path, jp_auth_header, body)
        answers[status] = answers.get(status, 0) + 1
        assert status < 500, (method, path, body, status, payload)
        assert status >= 400 or method == "GET", (method, path, body, status, payload)
        text = json.dumps(payload)
        # An answer never shows the other namespace's objects.
        assert f'"namespace": "{other}"' not in text, (method, path, text[:300])
        if status == 200 and isinstance(payload, dict) and "clusters" in payload:
            assert [c["name"] for c in payload["clusters"]] == [MINE]
            assert payload["namespace"] == namespace

    # One valid creation with every namespace-looking label allowed: it lands here.
    valid = {
        "name": "pin-ok",
        "workers": 0,
        "head_cpu": "100m",
        "head_memory": "256Mi",
        "labels": {"app.kubernetes.io/part-of": other, "namespace": other},
    }
    status, created = await send(
        jp_http_port, "POST", f"{jp_base_url}dw/api/clusters", jp_auth_header, valid
    )
    assert status == 201, created
    assert created["namespace"] == namespace

    assert namespace_objects(kube, other, kueue_api_version) == before_other
    after_own = namespace_objects(kube, namespace, kueue_api_version)
    added = {key for key in after_own if key not in before_own}
    assert {key for key in before_own if key not in after_own} == set()
    assert ("rayclusters", "pin-ok") in added
    # Only what the valid creation brings with it (its Workload; once admitted, its pods and
    # Services), all named after it.
    assert all("pin-ok" in name for _, name in added), added
    assert {key: after_own[key] for key in before_own} == before_own
    print("namespace pinning: statuses", dict(sorted(answers.items())))
    assert sum(answers.values()) >= 80, answers
