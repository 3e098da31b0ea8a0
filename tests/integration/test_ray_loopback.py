"""The test bed's Ray head keeps to 127.0.0.1: every socket its processes open, listening or
connected, is on a loopback address.

``--node-ip-address=127.0.0.1`` alone does not do it: Ray swaps a loopback node address for
the machine's network address (``resolve_ip_for_localhost`` in ``ray/_private/services.py``),
and its GCS, raylet and client server then listen on every interface and reach each other over
that address. :mod:`tests.cluster.ray_head` starts every head with
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, with which Ray keeps the loopback address.

A real head (token auth, as the demo's and the tests' heads run) does the work the tests and
the demo give it while its processes' sockets are sampled (:mod:`tests.cluster.ray_sockets`):
a Ray Client connection runs a task (the client server forks a server for it, the raylet a
worker), and a job submitted through Ray's Jobs API runs a driver that connects to the GCS and
runs a task. No control plane is needed. ``DW_RAY_LOOPBACK=off`` starts the head without the
variable, to see this test fail (91 of 120 sockets elsewhere here).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil

from tests.cluster.controlplane import free_port
from tests.cluster.ray_head import client_server_logs, head_pid, ray_head, ray_venv
from tests.cluster.ray_sockets import sampling
from tests.integration.ray_jobs_support import new_token

CLIENT = """
import sys
import ray
ray.init(sys.argv[1], log_to_driver=False)
assert ray.get(ray.remote(lambda: 6 * 7).remote()) == 42
ray.shutdown()
"""
DRIVER = "python -c 'import ray; ray.init(); print(ray.get(ray.remote(lambda: 6 * 7).remote()))'"
JOB_TIMEOUT = 120.0


def run_job(port: int, token: str) -> dict[str, object]:
    """Submit ``DRIVER`` through Ray's Jobs API and wait until it ends: its last status."""
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    body = json.dumps({"entrypoint": DRIVER}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/jobs/", data=body, headers=auth, method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        job = json.load(response)["submission_id"]
    deadline = time.monotonic() + JOB_TIMEOUT
    while True:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/jobs/{job}", headers=auth)
        with urllib.request.urlopen(request, timeout=60) as response:
            status: dict[str, object] = json.load(response)
        if status["status"] in ("SUCCEEDED", "FAILED", "STOPPED") or time.monotonic() > deadline:
            return status
        time.sleep(0.5)  # polling the condition: the job's status


def test_ray_head_listens_and_connects_on_loopback_only(tmp_path: Path) -> None:
    token, client_port = new_token(), free_port()
    home = tmp_path / "home"
    home.mkdir()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    environ.update(HOME=str(home), RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    with ray_head(token, client_port=client_port) as port, sampling(head_pid(port)) as sampled:
        client = subprocess.run(
            [str(ray_venv() / "bin" / "python"), "-c", CLIENT, f"ray://127.0.0.1:{client_port}"],
            env=environ,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert client.returncode == 0, client.stdout + client.stderr + client_server_logs(port)
        job = run_job(port, token)
        assert job["status"] == "SUCCEEDED", job
    seen = sampled.seen
    print(f"{len(seen)} sockets seen in {sampled.samples} samples")
    listening = {s.process for s in seen if s.status == psutil.CONN_LISTEN}
    # The sampler saw the head's servers (a sampler that sees nothing would pass the check).
    for server in ("gcs_server", "raylet"):
        assert server in listening, sorted(map(str, seen))
    assert any(s.local.endswith(f":{client_port}") for s in seen), sorted(map(str, seen))
    assert any(s.local.endswith(f":{port}") for s in seen), sorted(map(str, seen))
    assert any(s.remote for s in seen), sorted(map(str, seen))
    elsewhere = sorted(str(s) for s in seen if not s.loopback_only)
    assert not elsewhere, (
        f"{len(elsewhere)} of {len(seen)} sockets of the Ray head are not on loopback:\n"
        + "\n".join(elsewhere)
    )
