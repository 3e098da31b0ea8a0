"""``h.ray_init()`` and ``h.jobs`` against real Ray, from a process that has Ray.

The product's venv has no Ray (it is an optional extra), so this runs in the Ray head's own
venv (:mod:`tests.cluster.ray_head`, Ray 2.60.0, the Python of this venv, as a matching
workbench image would have), with jupyter_dw's source and its other dependencies after Ray's
on the path. The cluster (``localhost``, :mod:`tests.integration.ray_jobs_support`) is made
through Kueue; its KubeRay Secret holds the head's token; ``ray_client_url`` and
``ray_dashboard_url`` aim at the head. The process reads the token from the Secret with its
service account, as a kernel does, and nothing else gives it the token.
"""

from __future__ import annotations

import os
import subprocess
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

import jupyter_dw as dw
from tests.cluster.controlplane import free_port
from tests.cluster.ray_head import client_server_logs, ray_head, ray_venv
from tests.integration.clusters_support import make_queue, small_cluster
from tests.integration.ray_jobs_support import CLUSTER, TEMPLATE, give_token, new_token
from tests.integration.workbench_rbac import namespace_rules

WORKBENCH_RULES = namespace_rules()

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).parents[2]

SCRIPT = """
import os
import sys

# After the Ray venv's own packages (PYTHONPATH would go before them): jupyter_dw's source, then
# its dependencies from the product's venv.
sys.path.extend(os.environ.pop("DW_TEST_PATH").split(os.pathsep))
import ray  # before h.ray_init(), as notebooks do: Ray has read RAY_AUTH_MODE (unset) by then
import jupyter_dw as dw

assert "RAY_AUTH_TOKEN" not in os.environ  # nothing but the Secret gives this process the token
h = dw.cluster("localhost")
h.ray_init(log_to_driver=False)
print("mode", os.environ["RAY_AUTH_MODE"])
print("answer", ray.get(ray.remote(lambda: 6 * 7).remote()))
print("cpus", ray.cluster_resources().get("CPU"))
ray.shutdown()
client = h.jobs
job = client.submit_job(entrypoint="python -c 'print(7)'")
print("jobs", type(client).__name__, job in [j.submission_id for j in client.list_jobs()])
"""


@pytest.fixture(scope="module")
def head() -> Iterator[tuple[str, int, int]]:
    """A Ray head with token auth and a Ray Client port: (token, dashboard, client port)."""
    token, client_port = new_token(), free_port()
    with ray_head(token, client_port=client_port) as port:
        yield token, port, client_port


def test_ray_init_and_ray_s_job_client_work_on_real_ray(
    identity, kernel, kueue, kube, namespace, head, tmp_path
):
    token, port, client_port = head
    make_queue(kueue)
    h = dw.submit(small_cluster(CLUSTER, workers=1))  # image rayproject/ray:2.60.0
    h.wait("ready", timeout=120)
    give_token(kube, namespace, token)

    venv = ray_venv()
    home = tmp_path / "home"
    home.mkdir()
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RAY_", "JUPYTER_DW_")) and k != "PYTHONPATH"
    }
    environ.update(
        HOME=str(home),  # no token file of another run can switch auth on or off
        DW_TEST_PATH=os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]]),
        JUPYTER_DW_SERVICE_ACCOUNT_DIR=str(identity.service_account_dir),
        JUPYTER_DW_RAY_DASHBOARD_URL=TEMPLATE,
        JUPYTER_DW_RAY_DASHBOARD_PORT=str(port),
        JUPYTER_DW_RAY_CLIENT_URL=f"ray://{{name}}:{client_port}",
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", SCRIPT],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out + client_server_logs(port)
    assert "mode token" in out and "answer 42" in out and "cpus 1.0" in out, out
    assert "jobs JobSubmissionClient True" in out, out
    assert token not in out  # not in anything Ray or jupyter_dw printed
