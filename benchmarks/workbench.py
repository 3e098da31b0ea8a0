"""What the audited benchmarks share: a workbench service account on a control plane, and a
real ``jupyter server`` running as that workbench would (in a subprocess, on its token)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from kubernetes import client, config

from jupyter_dw.names import ELASTIC_PROBE_PREFIX
from tests.cluster.audit import AuditedCluster, Request
from tests.cluster.controlplane import ClusterState, free_port
from tests.cluster.fixtures import KueueObjects, WorkbenchIdentity, make_workbench
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, KUEUE, namespace_rules

PRIORITY_CLASSES = {
    "apiGroups": [KUEUE],
    "resources": ["workloadpriorityclasses"],
    "verbs": ["get", "list", "watch"],
}


def audited_plane(
    cluster_dir: str | None, directory: Path
) -> tuple[AuditedCluster, ClusterState, client.ApiClient, str]:
    """An audited disposable control plane up (at ``cluster_dir``, reused or kept, else in
    ``directory``): the plane, its state, an administrator's client and the Kueue API version
    it serves (v1beta2 since 0.15, else v1beta1)."""
    plane = AuditedCluster(Path(cluster_dir) if cluster_dir else directory / "plane")
    started = time.monotonic()
    state = plane.up()
    print(f"audited control plane ready in {time.monotonic() - started:.1f} s", flush=True)
    kube = config.new_client_from_config(config_file=state.kubeconfig)
    return plane, state, kube, "v1beta2" if plane.versions.kueue_serves_v1beta2 else "v1beta1"


def workbench(
    kube: client.ApiClient,
    state: ClusterState,
    namespace: str,
    directory: Path,
    name: str = "workbench",
    extra_rules: tuple[dict[str, Any], ...] = (),
) -> WorkbenchIdentity:
    """A ServiceAccount ``name`` in ``namespace`` (made first if absent) with a workbench's
    RBAC (namespaced rules and ``extra_rules``; cluster-wide, reading ClusterQueues, Cohorts,
    flavors and priority classes)."""
    core = client.CoreV1Api(kube)
    if not core.list_namespace(field_selector=f"metadata.name={namespace}").items:
        core.create_namespace({"metadata": {"name": namespace}})
    rules = [*namespace_rules(), *extra_rules]
    cluster_rules = [*CLUSTER_READ_RULES, PRIORITY_CLASSES]
    return make_workbench(kube, state, namespace, directory, rules, cluster_rules, name)


def team_namespace(
    kube: client.ApiClient,
    state: ClusterState,
    version: str,
    prefix: str,
    directory: Path,
    quota: dict[str, str | dict[str, str]],
) -> tuple[str, WorkbenchIdentity, KueueObjects, str]:
    """A fresh namespace ``prefix-<random>`` with a workbench service account in it, and a
    ClusterQueue ``cq`` of ``quota`` on flavor ``default`` (named after the namespace): the
    namespace, the workbench, its Kueue objects and the ClusterQueue's name."""
    namespace = f"{prefix}-{uuid.uuid4().hex[:6]}"
    identity = workbench(kube, state, namespace, directory)
    kueue = KueueObjects(kube, version, namespace, prefix=namespace)
    cluster_queue = kueue.cluster_queue("cq", {kueue.flavor("default"): quota})
    return namespace, identity, kueue, cluster_queue


def is_session_check(request: Request) -> bool:
    """Whether ``request`` is one of a jupyter_dw session's checks (at its start, then every
    ``access_refresh_interval``): discovery and other non-resource GETs, access and identity
    reviews (the rules review, access reviews, who am I), and the dry-run create that asks
    Kueue whether it runs elastic jobs (told by its object's name from a create's own dry
    run, which belongs to the create)."""
    return (
        request.resource.startswith("/")
        or request.resource
        in ("selfsubjectrulesreviews", "selfsubjectaccessreviews", "selfsubjectreviews")
        or (
            request.verb == "create"
            and "dryRun=All" in request.uri
            and request.name.startswith(ELASTIC_PROBE_PREFIX)
        )
    )


def pod_environment(identity: WorkbenchIdentity) -> dict[str, str]:
    """This process's environment as the workbench pod's: in-cluster configuration only."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return {
        **env,
        **identity.environ,
        "JUPYTER_DW_SERVICE_ACCOUNT_DIR": str(identity.service_account_dir),
    }


class JupyterServer:
    """``jupyter server`` in a subprocess (``extension``: with jupyter_dw enabled or not);
    :attr:`spawned` is the ``time.monotonic()`` just before the process was started."""

    def __init__(
        self,
        work: Path,
        environ: dict[str, str],
        *,
        extension: bool = True,
        extra_args: tuple[str, ...] = (),
        log_name: str = "server.log",
        port: int | None = None,
    ) -> None:
        self.port = port or free_port()
        self.token = secrets.token_hex(16)
        self.log_path = work / log_name
        self._log = self.log_path.open("a")
        # A config file: a dict trait given on the command line arrives as a list of strings.
        settings = work / f"{log_name}.config.json"
        settings.write_text(
            json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_dw": extension}}})
        )
        self.spawned = time.monotonic()
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("jupyter")),
                "server",
                "--no-browser",
                "--allow-root",
                f"--port={self.port}",
                "--ip=127.0.0.1",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={work}",
                f"--config={settings}",
                *extra_args,
            ],
            env=environ,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(
        self,
        path: str,
        timeout: float = 60,
        *,
        method: str = "GET",
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """``method path`` (``body`` sent as JSON, with ``headers``): the status and the JSON
        body (None when not JSON)."""
        headers = {**(headers or {}), "Authorization": f"token {self.token}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            f"{self.url}/{path}", data=data, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read()
                status = int(response.status)
        except urllib.error.HTTPError as err:
            body, status = err.read(), int(err.code)
        try:
            return status, json.loads(body)
        except ValueError:
            return status, None

    def wait_answer(self, path: str, status: int = 200, timeout: float = 120) -> float:
        """Poll ``path`` every 2 ms until it answers ``status``; the ``time.monotonic()`` of
        the answer. Connection refused means: not listening yet."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.request(path)[0] == status:
                    return time.monotonic()
            except OSError:
                pass
            if self.process.poll() is not None:
                break
            time.sleep(0.002)
        self._log.flush()
        tail = self.log_path.read_text()[-3000:]
        raise TimeoutError(f"{path} never answered {status}; the server's log ends:\n{tail}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


def write_kubeconfig(identity: WorkbenchIdentity, path: Path) -> Path:
    """A kubeconfig that authenticates as ``identity`` with its token only (what a tool that
    reads ``KUBECONFIG`` gets in a workbench), its namespace as the context's."""
    server = f"https://{identity.host}:{identity.port}"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "local",
                        "cluster": {
                            "server": server,
                            "certificate-authority": str(identity.service_account_dir / "ca.crt"),
                        },
                    }
                ],
                "users": [{"name": identity.name, "user": {"token": identity.token}}],
                "contexts": [
                    {
                        "name": "workbench",
                        "context": {
                            "cluster": "local",
                            "user": identity.name,
                            "namespace": identity.namespace,
                        },
                    }
                ],
                "current-context": "workbench",
            }
        )
    )
    return path


def run_in_temporary_directory(
    measure: Callable[[Any, Path], Coroutine[Any, Any, dict[str, Any]]],
    args: Any,
    prefix: str,
) -> dict[str, Any]:
    """``measure(args, directory)`` on an event loop, in a directory removed after; its figures
    written to ``args.json`` when given."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        results = asyncio.run(measure(args, Path(tmp)))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return results
