"""A ready RayCluster with Ray token auth whose head is a real Ray on 127.0.0.1.

KWOK pods run no Ray, so a real head (:mod:`tests.cluster.ray_head`, Ray 2.60.0 with
``RAY_AUTH_MODE=token`` and a private ``HOME``) stands in for the cluster's: RayCluster
``localhost`` is created through Kueue (admitted, its KWOK pods ready), KubeRay makes its token
Secret, and the test sets that Secret's token to the one the head was started with (KubeRay
keeps an existing Secret's data; the Secret stays KubeRay's, owned by the cluster, so the
owner check passes). ``ray_dashboard_url`` is ``http://{name}:{port}``: ``localhost`` on the
head's dashboard port. The fixtures ``head_token`` and ``ray_port`` (one head per module) are
registered for every test (``tests/conftest.py``).
"""

from __future__ import annotations

import base64
import json
import secrets
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.cluster.fixtures import watch_until
from tests.cluster.ray_head import ray_head

CLUSTER = "localhost"  # a valid RayCluster name, and a host name that is 127.0.0.1
TEMPLATE = "http://{name}:{port}"


def new_token() -> str:
    return secrets.token_urlsafe(32)


@pytest.fixture(scope="module")
def head_token() -> str:
    """The token the module's Ray head requires."""
    return new_token()


@pytest.fixture(scope="module")
def ray_port(head_token: str) -> Iterator[int]:
    """One real Ray head per module (starting one takes 10-20 s): its dashboard port."""
    with ray_head(head_token) as port:
        yield port


def give_token(kube: client.ApiClient, namespace: str, token: str) -> None:
    """Wait for KubeRay's token Secret of ``localhost``, then set its token to ``token``."""
    core = client.CoreV1Api(kube)
    watch_until(
        core.list_namespaced_secret,
        lambda _: True,
        namespace=namespace,
        field_selector=f"metadata.name={CLUSTER}",
        what="KubeRay's token Secret",
    )
    data = {"auth_token": base64.b64encode(token.encode()).decode()}
    core.patch_namespaced_secret(CLUSTER, namespace, {"data": data})


def wait_for_file(path: Path) -> str:
    """A job entrypoint that prints 42, then waits for ``path`` to exist: the test decides
    when the job ends, after it has seen the line (a condition, not a sleep)."""
    wait = f"[time.sleep(0.02) for _ in iter(lambda: os.path.exists('{path}'), True)]"
    return f"python -c \"import os, time; print(42, flush=True); {wait}; print('done')\""


def submit_to_ray(port: int, token: str, entrypoint: str) -> str:
    """Submit a job as a notebook would (Ray's REST API, with the token)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/jobs/",
        data=json.dumps({"entrypoint": entrypoint}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(json.loads(response.read())["submission_id"])


def until(predicate: Any, timeout: float, what: str) -> Any:
    """Poll ``predicate`` (a Ray answer; Ray has no watch) until it is truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
