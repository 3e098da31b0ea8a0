"""examples/rbac/ applied exactly as a maintainer would (placeholders filled in, server-side
apply as an administrator), and helpers to wait for RBAC and run the doctor as a workbench."""

from __future__ import annotations

import json
import os
import string
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.cluster.fixtures import WorkbenchIdentity, wait_allowed
from tests.cluster.kubeapi import AdminApi

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "rbac"
ROLE_FILE, CLUSTER_ROLE_FILE = "role.yaml", "clusterrole.yaml"


def example_objects(file: str, namespace: str, service_account: str) -> list[dict[str, Any]]:
    """The objects of ``examples/rbac/<file>`` with ``${NAMESPACE}`` and ``${SERVICE_ACCOUNT}``
    filled in (what ``envsubst`` does); a placeholder left unfilled is an error."""
    text = string.Template((EXAMPLES / file).read_text()).substitute(
        NAMESPACE=namespace, SERVICE_ACCOUNT=service_account
    )
    return [doc for doc in yaml.safe_load_all(text) if doc]


@contextmanager
def examples_applied(
    admin: AdminApi,
    identity: WorkbenchIdentity,
    files: tuple[str, ...] = (ROLE_FILE, CLUSTER_ROLE_FILE),
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """Apply ``files`` for ``identity`` (``edit`` may change each object first), wait until the
    API server's authorizer grants what they say, and remove the cluster-scoped bindings after
    (namespaced objects go with the test namespace; the shared ClusterRole stays, unbound)."""
    objects = [
        obj for file in files for obj in example_objects(file, identity.namespace, identity.name)
    ]
    for obj in objects:
        if edit is not None:
            edit(obj)
        admin.apply(obj)
    try:
        for obj in objects:
            if obj["kind"] in ("Role", "ClusterRole"):
                rule = obj["rules"][-1]
                wait_allowed(
                    identity,
                    rule["verbs"][-1],
                    rule["apiGroups"][0],
                    rule["resources"][0],
                    namespaced=obj["kind"] == "Role",
                )
        yield objects
    finally:
        for obj in objects:
            if obj["kind"] == "ClusterRoleBinding":
                admin.delete(obj)


def run_doctor(
    *args: str, identity: WorkbenchIdentity | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m jupyter_dw doctor ARGS`` in a fresh process: as ``identity`` in its pod
    environment (KUBERNETES_SERVICE_HOST/PORT, the fake service-account directory), with no
    kubeconfig and no config files in reach."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KUBERNETES_", "JUPYTER_DW_")) and k != "KUBECONFIG"
    }
    environ.update(KUBECONFIG="/nonexistent/kubeconfig", JUPYTER_CONFIG_DIR="/nonexistent")
    if identity is not None:
        environ.update(identity.environ)
        environ["JUPYTER_DW_SERVICE_ACCOUNT_DIR"] = str(identity.service_account_dir)
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "jupyter_dw", "doctor", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=120,
    )


def doctor_json(identity: WorkbenchIdentity, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    """Exit status and JSON report of the doctor as ``identity``."""
    done = run_doctor("--json", identity=identity, **kwargs)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The report's checks by name."""
    return {check["name"]: check for check in report["checks"]}
