"""A cluster's Ray jobs through the server extension (what the sidebar uses): ``GET
clusters/{name}/jobs``, ``GET .../jobs/{id}/logs``, ``POST .../jobs/{id}/stop`` and the
``watch_jobs`` stream on the events socket, against a real Ray head with token auth (see
:mod:`tests.integration.ray_jobs_support`). The token is added server-side: it is in no answer,
no events message and no log line.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.clusters_support import (
    call,
    make_queue,
    open_events,
    small_cluster,
    state_is,
)
from tests.integration.log_capture import server_log
from tests.integration.ray_jobs_support import (
    CLUSTER,
    TEMPLATE,
    give_token,
    submit_to_ray,
    wait_for_file,
)
from tests.integration.workbench_rbac import namespace_rules

WORKBENCH_RULES = namespace_rules()

pytestmark = pytest.mark.cluster


@pytest.fixture
def dw_config(ray_port: int) -> dict[str, Any]:
    return {"ray_dashboard_url": TEMPLATE, "ray_dashboard_port": ray_port}


async def seen_or_until(events: Any, predicate: Any, what: str) -> dict[str, Any]:
    """A message seen already, or the next that satisfies ``predicate`` (two streams on one
    socket: their messages interleave)."""
    for message in events.seen:
        if predicate(message):
            return message
    return await events.until(predicate, what)


async def ready(jp_fetch, jp_ws_fetch, kueue, kube, namespace, head_token):
    """RayCluster ``localhost`` made through the server and ready, its token the head's; the
    events socket that saw it."""
    make_queue(kueue)
    code, body = await call(jp_fetch, "POST", "clusters", body=small_cluster(CLUSTER, 1))
    assert code == 201, body
    events, _ = await open_events(jp_ws_fetch)
    await events.cluster_state(CLUSTER, state_is("ready"), "ready")
    give_token(kube, namespace, head_token)
    return events


async def test_jobs_logs_stream_and_stop_through_the_server(
    jp_fetch, jp_ws_fetch, kueue, kube, namespace, ray_port, head_token, tmp_path
):
    events = await ready(jp_fetch, jp_ws_fetch, kueue, kube, namespace, head_token)
    release = tmp_path / "release"
    with server_log() as log:
        code, listing = await call(jp_fetch, "GET", "clusters", CLUSTER, "jobs")
        assert code == 200 and listing == {"cluster": CLUSTER, "jobs": []}, listing

        first = submit_to_ray(ray_port, head_token, wait_for_file(release))
        await events.ws.write_message(
            json.dumps(
                {
                    "type": "watch_jobs",
                    "clusters": [CLUSTER],
                    "logs": {"cluster": CLUSTER, "job": first},
                }
            )
        )
        # The list shows it running, and its log line arrives while it runs.
        await events.until(
            lambda m: (
                m["type"] == "jobs"
                and any(
                    j["submission_id"] == first and j["status"] == "RUNNING"
                    for j in m["jobs"] or []
                )
            ),
            "the job running in the list",
        )
        await events.until(
            lambda m: m["type"] == "job_logs" and m["job"] == first and "42" in m["text"],
            "the first log line",
        )
        code, logs = await call(jp_fetch, "GET", "clusters", CLUSTER, "jobs", first, "logs")
        assert code == 200 and "42" in logs["logs"] and logs["truncated"] is False, logs
        release.touch()
        end = await events.until(
            lambda m: m["type"] == "job_logs" and m["end"], "the end of the log stream"
        )
        assert end["error"] is None
        await seen_or_until(
            events,
            lambda m: (
                m["type"] == "jobs" and any(j["status"] == "SUCCEEDED" for j in m["jobs"] or [])
            ),
            "the job succeeded in the list",
        )

        # Stop: a second job that would wait forever.
        second = submit_to_ray(ray_port, head_token, wait_for_file(tmp_path / "never"))
        code, stopped = await call(
            jp_fetch, "POST", "clusters", CLUSTER, "jobs", second, "stop", body={}
        )
        assert code == 200 and stopped == {
            "cluster": CLUSTER,
            "submission_id": second,
            "stopped": True,
        }, stopped
        await events.until(
            lambda m: (
                m["type"] == "jobs"
                and any(
                    j["submission_id"] == second and j["status"] == "STOPPED"
                    for j in m["jobs"] or []
                )
            ),
            "the stopped job",
        )
        code, listing = await call(jp_fetch, "GET", "clusters", CLUSTER, "jobs")
        assert [j["submission_id"] for j in listing["jobs"]] == [second, first]

        # Errors a user can act on.
        code, missing = await call(
            jp_fetch, "GET", "clusters", CLUSTER, "jobs", "raysubmit_no", "logs"
        )
        assert code == 404 and missing["code"] == "job_not_found", missing
        code, bad = await call(jp_fetch, "GET", "clusters", CLUSTER, "jobs", "..", "logs")
        assert code in (400, 404), bad
        code, absent = await call(jp_fetch, "GET", "clusters", "nosuch", "jobs")
        assert code == 404 and absent["code"] == "not_found", absent
    events.close()

    seen = json.dumps(events.seen) + json.dumps(listing) + json.dumps(logs)
    assert head_token not in seen
    assert any("jobs" in line for line in log), "the requests were logged"
    assert not [line for line in log if head_token in line]


async def test_a_cluster_not_ready_is_409_and_the_socket_says_so(
    jp_fetch, jp_ws_fetch, kueue, namespace
):
    make_queue(kueue, cpu="1")
    code, _ = await call(jp_fetch, "POST", "clusters", body=small_cluster("waiting", 2))
    assert code == 201
    code, body = await call(jp_fetch, "GET", "clusters", "waiting", "jobs")
    assert code == 409 and body["code"] == "cluster_not_ready" and body["state"] != "ready", body
    events, _ = await open_events(jp_ws_fetch)
    await events.ws.write_message(json.dumps({"type": "watch_jobs", "clusters": ["waiting"]}))
    message = await events.until(lambda m: m["type"] == "jobs", "the job list's error")
    assert message["jobs"] is None and message["error"]["code"] == "cluster_not_ready"
    # Bounded per socket: a ninth cluster is refused.
    many = [f"c{i}" for i in range(9)]
    await events.ws.write_message(json.dumps({"type": "watch_jobs", "clusters": many}))
    refused = await events.until(
        lambda m: m["type"] == "jobs" and m["cluster"] == "c8", "the refused ninth"
    )
    assert refused["error"]["code"] == "too_many_clusters"
    events.close()
