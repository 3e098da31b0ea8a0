"""``jupyter dw doctor`` on the MultiKueue bed's manager, as a workbench with exactly
examples/rbac/ granted: it names MultiKueue's check, the worker cluster Kueue reaches, the
namespace's LocalQueue that leads there and whether their dashboards are reachable from here;
without the optional ClusterRole it says it cannot tell, and that each workload still says
where it went."""

from __future__ import annotations

import pytest

from tests.cluster.multikueue import ADMISSION_CHECK, MirroredQueue
from tests.integration.rbac_examples import ROLE_FILE, by_name, doctor_json, examples_applied

from .conftest import WORKER

pytestmark = [pytest.mark.cluster, pytest.mark.multikueue]

GATEWAY = "https://ray.{worker}.example.com/{namespace}/{name}"


def test_the_doctor_reports_multikueue_and_its_worker(admin, workbench, mk_queue: MirroredQueue):
    identity = workbench()
    with examples_applied(admin, identity):
        code, report = doctor_json(identity)
        _, configured = doctor_json(identity, env={"JUPYTER_DW_MULTIKUEUE_DASHBOARD_URL": GATEWAY})
    assert code == 0, report
    check = by_name(report)["MultiKueue"]
    assert check["status"] == "ok", check
    detail = check["detail"]
    assert f"MultiKueue (admission check {ADMISSION_CHECK}) runs its workloads on worker " in detail
    assert f"worker clusters: {WORKER} (reached)" in detail
    assert f"LocalQueues of {mk_queue.namespace} that lead there: team" in detail
    assert "their Ray dashboards are not reachable from this workbench" in detail
    assert f"their Ray dashboards: {GATEWAY}" in by_name(configured)["MultiKueue"]["detail"]


def test_without_the_cluster_role_it_cannot_tell(admin, workbench, mk_queue: MirroredQueue):
    identity = workbench()
    with examples_applied(admin, identity, files=(ROLE_FILE,)):
        code, report = doctor_json(identity)
    assert code == 0, report
    check = by_name(report)["MultiKueue"]
    assert check["status"] == "optional-missing"
    assert check["detail"].startswith("cannot tell: may not list admissionchecks.kueue.x-k8s.io")
    assert "each workload still says which worker cluster it was sent to" in check["detail"]
