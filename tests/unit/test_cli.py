"""``jupyter dw`` / ``python -m jupyter_dw``: usage, exit codes, JSON on stdout only, and a
thin surface (no tornado or jupyter_server). The checks against a real API server are in
tests/integration/test_doctor.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_dw import cli
from jupyter_dw.core.doctor import Check, DoctorReport

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m jupyter_dw ARGS`` with no cluster in reach (no pod, no kubeconfig)."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KUBERNETES_", "JUPYTER_DW_")) and k != "KUBECONFIG"
    }
    environ.update(KUBECONFIG="/nonexistent/kubeconfig", JUPYTER_CONFIG_DIR="/nonexistent")
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "jupyter_dw", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=120,
    )


def unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A valid kubeconfig naming an API server address where nothing listens."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return kubeconfig


def test_no_command_prints_usage_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "doctor" in capsys.readouterr().err


def test_unknown_command_or_option_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["doctr"])
    assert exited.value.code == 2
    assert "invalid choice: 'doctr'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        cli.main(["doctor", "--jsn"])
    assert exited.value.code == 2
    assert "--jsn" in capsys.readouterr().err


def test_doctor_help_explains_the_exit_status(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["doctor", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--json" in text and "0 when every required check passes" in text


def test_without_credentials_the_doctor_says_so_and_exits_1():
    done = run("doctor", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)  # stdout holds the JSON only
    assert report["ok"] is False
    [check] = report["checks"]
    assert (check["name"], check["status"]) == ("credentials", "failed")
    assert "/nonexistent/kubeconfig" in check["detail"] and check["hint"]
    assert "reading credentials" in done.stderr  # progress goes to stderr

    table = run("doctor")
    assert table.returncode == 1
    assert "NOT READY" in table.stdout and "credentials" in table.stdout


def test_failed_calls_are_logged_only_with_verbose(tmp_path):
    kubeconfig = unreachable_kubeconfig(tmp_path)
    quiet = run("doctor", env={"KUBECONFIG": str(kubeconfig)})
    assert quiet.returncode == 1
    assert "Cannot reach the Kubernetes API server" in quiet.stdout
    assert "Kubernetes call failed" not in quiet.stderr
    verbose = run("doctor", "--json", "-v", env={"KUBECONFIG": str(kubeconfig)})
    assert verbose.returncode == 1 and json.loads(verbose.stdout)["ok"] is False
    assert "WARNING jupyter_dw.k8s.client: Kubernetes call failed: GET /version" in verbose.stderr


def test_a_bad_setting_is_reported_with_its_variable():
    done = run("doctor", "--json", env={"JUPYTER_DW_MAX_WORKERS": "lots"})
    assert done.returncode == 1
    [check] = json.loads(done.stdout)["checks"]
    assert check["name"] == "settings" and "JUPYTER_DW_MAX_WORKERS" in check["detail"]


def test_a_bad_namespace_is_refused_before_anything_is_asked(tmp_path):
    kubeconfig = unreachable_kubeconfig(tmp_path)
    done = run("doctor", "--json", "--namespace", "Team/A", env={"KUBECONFIG": str(kubeconfig)})
    assert done.returncode == 1
    [check] = json.loads(done.stdout)["checks"]
    assert check["name"] == "namespace" and "'Team/A'" in check["detail"]


def test_the_cli_imports_no_server_code():
    code = (
        "import sys, jupyter_dw.cli, jupyter_dw.core.doctor; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tornado', "
        "'jupyter_server')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_rbac_command_fills_in_the_service_account(capsys):
    assert cli.main(["rbac", "--namespace", "team-a", "--service-account", "wb"]) == 0
    out = capsys.readouterr().out
    assert '"team-a"' in out and '"wb"' in out and "${" not in out
    assert "kind: ClusterRole\n" in out
    assert cli.main(["rbac", "--required-only"]) == 0
    out = capsys.readouterr().out
    assert "kind: ClusterRole\n" not in out and "${NAMESPACE}" in out


def test_the_table_reports_optional_missing_as_ready():
    report = DoctorReport(
        "team-a",
        "https://api",
        "kubeconfig",
        "alice",
        (
            Check("connection", "API server", "ok", "Kubernetes v1.36.3", "everything"),
            Check(
                "permission",
                "list clusterqueues.kueue.x-k8s.io",
                "optional-missing",
                "no RBAC",
                "show quota, borrowing and headroom",
                required=False,
                scope="cluster",
            ),
        ),
        fix="kind: ClusterRole\n",
    )
    assert report.exit_code == 0
    text = cli.format_report(report)
    assert "READY: every required check passed." in text
    assert "optional-missing  list clusterqueues.kueue.x-k8s.io (cluster)" in text
    assert "show quota, borrowing and headroom" in text
    assert text.rstrip().endswith("kind: ClusterRole")
