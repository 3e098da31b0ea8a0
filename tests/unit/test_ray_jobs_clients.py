"""The Jobs API clients a session caches per cluster: reused for a few seconds, never kept for a
cluster that is gone (names come and go: the soak's server held one per cluster ever made)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from jupyter_dw.core import ray_jobs
from jupyter_dw.core.ray_jobs import ENDPOINT_TTL, RayJobService


def service() -> RayJobService:
    # A cluster on a MultiKueue worker: its address is the worker's, no token to read.
    clusters = SimpleNamespace(worker_dashboard_base=lambda _rc: "https://worker.example/ray")
    return RayJobService(cast(Any, SimpleNamespace(namespace="ns")), cast(Any, clusters))


def raycluster(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"uid-{name}"}}


def test_a_client_is_reused_within_its_time_then_made_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(ray_jobs.time, "monotonic", lambda: now[0])
    jobs = service()
    first = jobs._client_of("c", raycluster("c"), None)
    now[0] += ENDPOINT_TTL / 2
    assert jobs._client_of("c", raycluster("c"), None) is first
    now[0] += ENDPOINT_TTL
    assert jobs._client_of("c", raycluster("c"), None) is not first


def test_clients_of_clusters_that_came_and_went_are_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(ray_jobs.time, "monotonic", lambda: now[0])
    jobs = service()
    for index in range(100):  # a cluster a second, each asked once and deleted
        jobs._client_of(f"c-{index}", raycluster(f"c-{index}"), None)
        now[0] += 1.0
    assert jobs.clients_held <= ENDPOINT_TTL
