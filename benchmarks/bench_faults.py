"""Does a slow Kubernetes call slow the rest of the server down?

A real ``jupyter server`` with jupyter_dw runs as a workbench would (its own service account)
and reaches the local control plane's API server through the fault-injecting proxy of the
tests (tests/cluster/apiproxy.py). In the same run it measures ``GET dw/api/version`` (no
Kubernetes at all) and ``GET dw/api/clusters`` (answered from the watch caches on the
extension's thread pool):

- **idle**: nothing pending (the baseline);
- **N pending**: N requests (``GET clusters/<absent>``, each one API call) held at the proxy,
  i.e. N calls waiting on a slow API server at once.

And the cost of recovering from a lost answer: ``POST clusters`` (with an ``Idempotency-Key``)
to 201 when the API server's answer to the create is cut (the server finds the cluster by its
key) against a create whose answer arrives (the baseline), in the same run. The clusters go to
a LocalQueue whose ClusterQueue does not exist, so they stay suspended and nothing runs.

Usage: ``.venv/bin/python -m benchmarks.bench_faults [--rounds 100] [--pending 1 4]
[--creates 10]``
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from kubernetes import client, config

from tests.cluster.apiproxy import ApiProxy, request_to
from tests.cluster.controlplane import LocalCluster, free_port
from tests.integration.workbench_rbac import namespace_rules

RBAC_GROUP = "rbac.authorization.k8s.io"


class Server:
    """``jupyter server`` in a subprocess, called with its token."""

    def __init__(self, sa_dir: Path, proxy: ApiProxy, work: Path) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(16)
        env = {
            **os.environ,
            "KUBERNETES_SERVICE_HOST": proxy.host,
            "KUBERNETES_SERVICE_PORT": str(proxy.port),
        }
        self.log = (work / "server.log").open("w")
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
                f"--JupyterDW.service_account_dir={sa_dir}",
                "--JupyterDW.request_timeout=60",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def get(self, path: str, body: dict | None = None) -> int:
        """GET ``path`` (POST ``body`` as JSON when given, with a fresh idempotency key)."""
        headers = {"Authorization": f"token {self.token}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers |= {"Content-Type": "application/json", "Idempotency-Key": str(uuid.uuid4())}
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/{path}", data=data, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                response.read()
                return int(response.status)
        except urllib.error.HTTPError as err:
            return int(err.code)

    def wait_until(self, path: str, status: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.get(path) == status:
                    return
            except OSError:
                pass  # not listening yet
            time.sleep(0.2)
        self.log.flush()
        tail = Path(self.log.name).read_text()[-3000:]
        raise TimeoutError(f"{path} never answered {status}; the server's log ends:\n{tail}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)
        self.log.close()


def timed(call, rounds: int, status: int = 200) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        assert call() == status
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def describe(samples: list[float]) -> str:
    p95 = statistics.quantiles(samples, n=20)[18]
    return f"{statistics.median(samples):7.1f} ms  p95 {p95:7.1f} ms"


def workbench(admin: client.ApiClient, namespace: str, ca_file: Path, sa_dir: Path) -> None:
    """A service account with a workbench's namespaced RBAC, mounted into ``sa_dir``."""
    core, rbac = client.CoreV1Api(admin), client.RbacAuthorizationV1Api(admin)
    core.create_namespace({"metadata": {"name": namespace}})
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "workbench"}})
    rbac.create_namespaced_role(
        namespace, {"metadata": {"name": "workbench"}, "rules": namespace_rules()}
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "workbench"},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "workbench"},
            "subjects": [{"kind": "ServiceAccount", "name": "workbench", "namespace": namespace}],
        },
    )
    token = core.create_namespaced_service_account_token(
        "workbench",
        namespace,
        client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])),
    ).status.token
    sa_dir.mkdir()
    (sa_dir / "token").write_text(token)
    shutil.copyfile(ca_file, sa_dir / "ca.crt")
    (sa_dir / "namespace").write_text(namespace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--pending", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--creates", type=int, default=10)
    args = parser.parse_args()

    state = LocalCluster().up()
    admin = config.new_client_from_config(config_file=state.kubeconfig)
    namespace = f"bench-faults-{uuid.uuid4().hex[:6]}"
    work = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    proxy = ApiProxy(state.apiserver, state.ca_file, work / "proxy").start()
    server: Server | None = None
    try:
        workbench(admin, namespace, proxy.ca_file, work / "serviceaccount")
        local_queue = {"metadata": {"name": "bench"}, "spec": {"clusterQueue": "none"}}
        local_queue |= {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue"}
        client.CustomObjectsApi(admin).create_namespaced_custom_object(
            "kueue.x-k8s.io", "v1beta2", namespace, "localqueues", local_queue
        )
        server = Server(work / "serviceaccount", proxy, work)
        server.wait_until("dw/api/clusters", 200)  # started, caches synced
        for path in ("dw/api/version", "dw/api/clusters"):  # warm up before the baseline
            timed(lambda p=path: server.get(p), 20)
        results = {}
        for pending in [0, *args.pending]:
            held = proxy.hold(request_to("GET", r"/apis/ray\.io/v1/namespaces/.*/absent-.*"))
            waiting = [
                threading.Thread(target=server.get, args=(f"dw/api/clusters/absent-{i}",))
                for i in range(pending)
            ]
            for thread in waiting:
                thread.start()
            deadline = time.monotonic() + 60
            while held.hits < pending:  # until all of them are held at the proxy
                assert time.monotonic() < deadline, "the slow calls never reached the proxy"
                time.sleep(0.01)
            version = timed(lambda: server.get("dw/api/version"), args.rounds)
            clusters = timed(lambda: server.get("dw/api/clusters"), args.rounds)
            assert held.hits == pending  # nothing finished meanwhile: still pending
            results[pending] = (version, clusters)
            held.release()
            for thread in waiting:
                thread.join(60)
            proxy.heal()

        names = (f"c{i}" for i in range(2 * args.creates))
        spec = {"queue": "bench", "workers": 1, "worker_cpu": "1", "worker_memory": "1Gi"}

        def create() -> int:
            return server.get("dw/api/clusters", {**spec, "name": next(names)})

        answered = timed(create, args.creates, 201)
        cut = proxy.cut(request_to("POST", r"/apis/ray\.io/v1/.*", dry_run=False), None)
        lost = timed(create, args.creates, 201)
        assert cut.hits == args.creates
        proxy.heal()

        print(f"{args.rounds} requests each; slow calls held at the proxy until measured")
        print(f"{'pending slow calls':<20} {'GET version':<28} GET clusters (cache)")
        for pending, (version, clusters) in results.items():
            label = "0 (baseline)" if pending == 0 else str(pending)
            print(f"{label:<20} {describe(version):<28} {describe(clusters)}")
        print(f"\nPOST clusters → 201, {args.creates} each")
        print(f"{'answer arrives (baseline)':<28} {describe(answered)}")
        print(f"{'answer cut, found by key':<28} {describe(lost)}")
    finally:
        if server is not None:
            server.stop()
        proxy.stop()
        client.CoreV1Api(admin).delete_namespace(namespace, propagation_policy="Background")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
