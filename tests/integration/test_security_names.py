"""Names from URLs never reach Kubernetes unchecked.

A cluster name is one path segment of a Kubernetes path. ``.`` and ``..`` survive quoting and
HTTP clients remove them, so ``DELETE .../rayclusters/.`` would become ``DELETE
.../rayclusters/`` -- a delete of every RayCluster of the namespace when the identity may
``deletecollection`` (the common ``edit`` role may). The workbench here has exactly that
permission; every spelling must answer 4xx and leave every cluster in place.

Requests are written on a raw socket so that no client of ours normalizes the path first.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.integration.clusters_support import create_suspended_raycluster, rayclusters
from tests.integration.workbench_rbac import RAY_RULE_VERBS, namespace_rules

# A workbench that may delete whole collections (as Kubernetes' `edit` ClusterRole may).
WORKBENCH_RULES = namespace_rules([*RAY_RULE_VERBS, "deletecollection"])
WORKBENCH_CLUSTER_RULES = None

pytestmark = pytest.mark.cluster

SPELLINGS = ["%2E", "%2e", ".", "..", "%2E%2E", "a%2F..", "%2E%2e", "a%2F%2E%2E"]
"""Ways to write a dot segment (or a path that climbs out of one) in a URL."""

KEPT = ("kept-one", "kept-two")


async def _raw(port: int, method: str, path: str, auth: dict[str, str]) -> int:
    """Send one request with ``path`` exactly as written; return the status code."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    headers = "".join(f"{key}: {value}\r\n" for key, value in auth.items())
    writer.write(
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}"
        "Content-Length: 0\r\nConnection: close\r\n\r\n".encode()
    )
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    return int(status_line.split()[1])


@pytest.fixture
def kept(kube, namespace):
    for name in KEPT:
        create_suspended_raycluster(kube, namespace, name)
    return KEPT


@pytest.mark.parametrize("method", ["DELETE", "GET"])
async def test_dot_segments_are_refused_on_every_route(
    kube, namespace, identity, kept, jp_fetch, jp_http_port, jp_base_url, jp_auth_header, method
):
    await jp_fetch("dw", "api", "version")  # the server is up
    for spelling in SPELLINGS:
        for route in (f"dw/api/clusters/{spelling}", f"dw/ray/{spelling}/"):
            code = await _raw(jp_http_port, method, f"{jp_base_url}{route}", jp_auth_header)
            assert 400 <= code < 500, (method, route, code)
    assert sorted(rc["metadata"]["name"] for rc in rayclusters(kube, namespace)) == list(kept)
