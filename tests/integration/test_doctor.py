"""``python -m jupyter_dw doctor`` as a workbench runs it (its pod environment and service
account) on the real control plane, with exactly examples/rbac/ granted, without the optional
ClusterRole, and with a Role missing ``create rayclusters``: then the YAML it prints applies
cleanly (server-side dry run), and applied for real makes the doctor pass."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from jupyter_dw.k8s.access import NEEDED_PERMISSIONS
from tests.cluster.fixtures import wait_allowed
from tests.cluster.kubeapi import FIELD_MANAGER, object_path
from tests.integration.clusters_support import make_queue
from tests.integration.rbac_examples import (
    CLUSTER_ROLE_FILE,
    ROLE_FILE,
    by_name,
    doctor_json,
    examples_applied,
    run_doctor,
)

pytestmark = pytest.mark.cluster

OPTIONAL = {p.name for p in NEEDED_PERMISSIONS if not p.required}
REQUIRED = {p.name for p in NEEDED_PERMISSIONS if p.required}
CREATE = "create rayclusters.ray.io"
FIX_HEADING = "To grant what is missing, a cluster administrator applies this YAML"


@pytest.fixture
def queue(kueue):
    return make_queue(kueue)  # LocalQueue "team", annotated default


def permission_statuses(report: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["status"] for c in report["checks"] if c["kind"] == "permission"}


def test_with_the_example_rbac_every_check_passes(admin, workbench, namespace, queue):
    identity = workbench()
    with examples_applied(admin, identity):
        code, report = doctor_json(identity)
        table = run_doctor(identity=identity)
        elsewhere = run_doctor("--json", "--namespace", "default", identity=identity)

    assert code == 0, report
    assert report["ok"] is True
    assert report["namespace"] == namespace
    assert report["identity"] == identity.username
    assert all(check["status"] == "ok" for check in report["checks"]), report["checks"]
    assert permission_statuses(report) == dict.fromkeys(REQUIRED | OPTIONAL, "ok")
    checks = by_name(report)
    assert checks["Kueue"]["detail"].startswith("kueue.x-k8s.io/v1beta")
    assert checks["KubeRay"]["detail"] == "ray.io/v1 rayclusters"
    # The visibility API answered for the default queue, as this service account.
    assert "pending in LocalQueue team" in checks["visibility API"]["detail"]
    assert report["local_queues"] == [queue.local_queue]
    assert report["default_queue"] == queue.local_queue
    assert checks["LocalQueues"]["detail"] == "team (default)"
    assert report["fix"] is None

    assert table.returncode == 0
    assert "READY: every required check passed." in table.stdout
    assert FIX_HEADING not in table.stdout
    assert "asking the API server about" in table.stderr  # progress, on stderr

    # The Role holds in its namespace only: --namespace checks another one.
    assert elsewhere.returncode == 1
    other = json.loads(elsewhere.stdout)
    assert other["namespace"] == "default"
    assert {s for n, s in permission_statuses(other).items() if n in REQUIRED} == {"missing"}


def test_without_the_optional_cluster_role_it_passes_and_says_what_is_missing(
    admin, workbench, queue
):
    identity = workbench()
    with examples_applied(admin, identity, files=(ROLE_FILE,)):
        code, report = doctor_json(identity)
        table = run_doctor(identity=identity)

    assert code == 0, report
    statuses = permission_statuses(report)
    assert {n for n, s in statuses.items() if s == "optional-missing"} == OPTIONAL
    assert {n for n, s in statuses.items() if s == "ok"} == REQUIRED
    headroom = by_name(report)["list clusterqueues.kueue.x-k8s.io"]
    assert headroom["unlocks"] == "show quota, borrowing and headroom"
    assert headroom["required"] is False and headroom["scope"] == "cluster"
    fix = [doc for doc in yaml.safe_load_all(report["fix"]) if doc]
    assert [doc["kind"] for doc in fix] == ["ClusterRole", "ClusterRoleBinding"]

    assert table.returncode == 0
    assert "READY" in table.stdout and "optional check(s) missing" in table.stdout
    assert "show quota, borrowing and headroom" in table.stdout


def without_create(obj: dict[str, Any]) -> None:
    """Take ``create`` out of the example Role's rayclusters rule."""
    for rule in obj.get("rules", []):
        if rule["resources"] == ["rayclusters"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != "create"]


def fix_objects(stdout: str) -> list[dict[str, Any]]:
    """The YAML the doctor printed after its fix heading."""
    assert FIX_HEADING in stdout, stdout
    text = stdout.split(FIX_HEADING, 1)[1].split("\n", 1)[1]
    return [doc for doc in yaml.safe_load_all(text) if doc]


def test_a_role_without_create_fails_and_the_printed_yaml_fixes_it(
    admin, workbench, namespace, queue
):
    identity = workbench()
    with examples_applied(admin, identity, edit=without_create):
        wait_allowed(identity, "create", "ray.io", "rayclusters", expected=False)
        failed = run_doctor(identity=identity)
        code, report = doctor_json(identity)
        assert failed.returncode == 1 and code == 1
        assert "NOT READY: 1 required check(s) failed:" in failed.stdout
        assert f"- {CREATE}:" in failed.stdout
        assert [n for n, s in permission_statuses(report).items() if s != "ok"] == [CREATE]
        assert by_name(report)[CREATE]["unlocks"] == "create Ray clusters"

        objects = fix_objects(failed.stdout)
        assert [o["kind"] for o in objects] == ["Role", "RoleBinding"]
        role, binding = objects
        assert role["metadata"]["namespace"] == namespace
        assert role["rules"] == [
            {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["create"]}
        ]
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": identity.name, "namespace": namespace}
        ]

        # The API server's dry run accepts it as it is, and creates nothing.
        for obj in objects:
            admin.request(
                "PATCH",
                object_path(obj),
                obj,
                content_type="application/apply-patch+yaml",
                query=[("fieldManager", FIELD_MANAGER), ("dryRun", "All")],
            )
        for obj in objects:
            with pytest.raises(ApiException) as absent:
                admin.request("GET", object_path(obj))
            assert absent.value.status == 404

        for obj in objects:  # applied for real, the doctor passes
            admin.apply(obj)
        wait_allowed(identity, "create", "ray.io", "rayclusters")
        code, report = doctor_json(identity)
    assert code == 0, report
    assert permission_statuses(report)[CREATE] == "ok"
    assert report["fix"] is None


def test_the_doctor_needs_the_cluster_role_file_for_nothing_required(admin, workbench, queue):
    """The optional ClusterRole alone (no Role) is not enough: every required permission is
    reported missing, the exit status is 1, and the fix is a Role for all of them."""
    identity = workbench()
    with examples_applied(admin, identity, files=(CLUSTER_ROLE_FILE,)):
        code, report = doctor_json(identity)
    assert code == 1
    statuses = permission_statuses(report)
    assert {n for n, s in statuses.items() if s == "missing"} == REQUIRED
    assert by_name(report)["LocalQueues"]["status"] == "skipped"
    fix = [doc for doc in yaml.safe_load_all(report["fix"]) if doc]
    assert [doc["kind"] for doc in fix] == ["Role", "RoleBinding"]
