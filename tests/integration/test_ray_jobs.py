"""Ray jobs from a kernel, on a real Ray head with token auth standing in for a ready RayCluster
(see :mod:`tests.integration.ray_jobs_support`): ``h.submit_job`` through Ray's Jobs REST API,
the handle's reads, its log stream, ``wait``, ``stop``, the live ``dw.JobView``, and the errors
a user can act on.
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client

import jupyter_dw as dw
from tests.cluster.ray_head import status_of
from tests.integration.clusters_support import make_queue, small_cluster
from tests.integration.ray_jobs_support import (
    CLUSTER,
    TEMPLATE,
    give_token,
    wait_for_file,
)
from tests.integration.test_notebook_widgets import until
from tests.integration.workbench_rbac import namespace_rules

WORKBENCH_RULES = namespace_rules()

pytestmark = pytest.mark.cluster
TIMEOUT = 120.0


@pytest.fixture
def kernel_settings(ray_port):
    """The kernel's ``ray_dashboard_url`` aimed at the local Ray head."""
    return {
        "JUPYTER_DW_RAY_DASHBOARD_URL": TEMPLATE,
        "JUPYTER_DW_RAY_DASHBOARD_PORT": str(ray_port),
    }


@pytest.fixture
def fresh_token(monkeypatch):
    """The cluster's address and token are read again on every call (not kept 5 s)."""
    monkeypatch.setattr("jupyter_dw.core.ray_jobs.ENDPOINT_TTL", 0.0)


@pytest.fixture
def ray_cluster(kernel, kueue, kube, namespace, head_token):
    """RayCluster ``localhost``, ready, its Secret holding the head's token."""
    make_queue(kueue)
    h = dw.submit(small_cluster(CLUSTER, workers=1))
    h.wait("ready", timeout=TIMEOUT)
    give_token(kube, namespace, head_token)
    return h


async def test_a_job_runs_on_real_ray_and_the_widget_follows_it_live(
    ray_cluster, ray_port, head_token, tmp_path
):
    # Ray itself: auth is really on.
    ray = f"http://127.0.0.1:{ray_port}"
    assert status_of(f"{ray}/api/jobs/") == 401
    assert status_of(f"{ray}/api/jobs/", {"Authorization": "Bearer wrong"}) == 403

    release = tmp_path / "release"
    job = ray_cluster.submit_job(wait_for_file(release), metadata={"test": "widget"})
    assert job.cluster == CLUSTER and job.submission_id.startswith("raysubmit_")
    view = dw.JobView(job)
    # The log line arrives while the job runs (it waits for the file until the test saw it).
    await until(view, "log", lambda text: "42" in text, "the job's first line")
    await until(view, "status", lambda s: s == "RUNNING", "the running job")
    assert view.start_time is not None and view.end_time is None
    assert job.status().status == "RUNNING"
    assert "42" in job.logs()

    release.touch()
    await until(view, "status", lambda s: s == "SUCCEEDED", "the job's end")
    assert "done" in view.log and view.failure is None and view.error is None
    assert view.end_time is not None and view.end_time >= view.start_time
    finished = await job.wait_async(timeout=TIMEOUT)
    assert finished.status == "SUCCEEDED" and finished.metadata == {"test": "widget"}
    # One head per module: earlier tests' jobs are listed too, newest first.
    listing = ray_cluster.list_jobs()
    assert listing[0].submission_id == job.submission_id
    assert listing[job.submission_id].status == "SUCCEEDED"

    # The token is in no widget state and no answer.
    state = json.dumps(view.get_state(), default=str)
    assert head_token not in state
    assert head_token not in json.dumps(finished.to_json()) and head_token not in repr(job)
    view.close()


async def test_a_failing_entrypoint_is_failed_with_rays_message_and_its_last_lines(ray_cluster):
    # Its last line is coloured for a terminal, as loggers do: widgets show it as plain text.
    fail = "import sys; print('\\x1b[31mabout to fail\\x1b[0m'); sys.exit(3)"
    job = ray_cluster.submit_job(f'python -c "{fail}"')
    view = dw.JobView(job)
    await until(view, "status", lambda s: s == "FAILED", "the failed job")
    await until(view, "failure", lambda f: f is not None, "the failure")
    assert "exit code 3" in view.failure and "about to fail" in view.failure
    assert "about to fail" in view.log and "\x1b" not in view.log + view.failure + job.logs()
    with pytest.raises(dw.JobFailed) as failed:
        await job.wait_async(timeout=TIMEOUT)
    assert "FAILED" in failed.value.error and "exit code 3" in failed.value.reason
    assert failed.value.job.status == "FAILED"
    with pytest.raises(dw.JobFailed):
        job.wait(timeout=TIMEOUT)  # the blocking form says the same
    view.close()


async def test_tail_streams_the_log_and_stop_stops_the_job(ray_cluster, tmp_path):
    job = ray_cluster.submit_job(wait_for_file(tmp_path / "never"))
    chunks: list[str] = []
    async for chunk in job.tail():
        chunks.append(chunk)
        if "42" in "".join(chunks):
            break
    assert job.stop() is True
    with pytest.raises(dw.JobFailed) as stopped:
        await job.wait_async(timeout=TIMEOUT)
    assert stopped.value.job.status == "STOPPED"


def test_errors_a_user_can_act_on(ray_cluster, kernel, kube, namespace, ray_port):
    # No such job.
    with pytest.raises(dw.DWError) as missing:
        ray_cluster.job("raysubmit_nosuchjob").status()
    assert missing.value.code == "job_not_found"
    # A bad id never reaches Ray.
    with pytest.raises(dw.DWError) as bad:
        ray_cluster.job("../api").status()
    assert bad.value.code == "invalid_request"
    # An empty entrypoint: nothing submitted.
    with pytest.raises(dw.DWError) as empty:
        ray_cluster.submit_job("  ")
    assert empty.value.code == "invalid_request"


def test_a_cluster_not_ready_is_said(kernel, kueue, kube, namespace):
    make_queue(kueue, cpu="1")  # too small: the cluster waits for quota
    h = dw.submit(small_cluster("waiting", workers=2))
    with pytest.raises(dw.ClusterNotReady) as waiting:
        h.submit_job("python -c 'print(1)'")
    assert waiting.value.state != "ready" and "not up yet" in waiting.value.error
    assert waiting.value.to_json()["code"] == "cluster_not_ready"


def test_a_token_secret_the_cluster_does_not_own_is_refused(
    ray_cluster, kernel, kube, namespace, fresh_token
):
    # KubeRay re-creates a deleted Secret at once; one it did not make (no owner) it keeps.
    patch = {"metadata": {"ownerReferences": None}}
    client.CoreV1Api(kube).patch_namespaced_secret(CLUSTER, namespace, patch)
    with pytest.raises(dw.RayTokenUnavailable) as refused:
        ray_cluster.list_jobs()
    assert "is controlled by nobody, not by RayCluster localhost" in refused.value.reason
    assert refused.value.to_json()["code"] == "ray_token_unavailable"


@pytest.mark.parametrize("rules", [namespace_rules()[:-2] + namespace_rules()[-1:]], indirect=True)
def test_without_get_secrets_the_permission_is_named(ray_cluster, kernel):
    with pytest.raises(dw.PermissionDenied) as denied:
        ray_cluster.list_jobs()
    assert denied.value.denied == "get secrets"


def test_an_unreachable_head_is_said(kernel, kueue, kube, namespace, head_token):
    make_queue(kueue)
    h = dw.submit(small_cluster("nohead", workers=1))  # nohead: no such host
    h.wait("ready", timeout=TIMEOUT)
    with pytest.raises(dw.RayUnreachable) as unreachable:
        h.list_jobs()
    assert unreachable.value.code == "ray_unreachable"
    assert "http://nohead:" in unreachable.value.reason


async def test_the_magics_submit_show_and_list(ray_cluster, tmp_path):
    from jupyter_dw.notebook.magics import run

    printed: list[str] = []
    view = run(f"job {CLUSTER} -- python -c 'print(6 * 7)'", printed.append)
    assert isinstance(view, dw.JobView) and printed == []
    assert view.entrypoint == "python -c 'print(6 * 7)'"
    assert view.command == "python -c print(6 * 7)"  # shown as the user wrote it
    await until(view, "status", lambda s: s == "SUCCEEDED", "the magic's job")
    assert "42" in view.log
    listing = run(f"jobs {CLUSTER}", printed.append)
    assert listing[0].submission_id == view.submission_id  # newest first (one head per module)
    from jupyter_dw.notebook.job_display import jobs_html

    assert "SUCCEEDED" in jobs_html(listing) and view.submission_id in jobs_html(listing)
    view.close()

    (tmp_path / "train.py").write_text("import sys; print('epochs', sys.argv[2])\n")
    view = run(f"job {CLUSTER} --working-dir {tmp_path} -- python train.py --epochs 3")
    await until(view, "status", lambda s: s in ("SUCCEEDED", "FAILED"), "the uploaded job")
    assert view.status == "SUCCEEDED" and "epochs 3" in view.log, (view.failure, view.log)
    view.close()

    assert run(f"job {CLUSTER} --", printed.append) is None
    assert "no command" in printed[-1]
