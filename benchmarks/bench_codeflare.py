"""jupyter_dw and codeflare-sdk side by side: the same steps, the same control plane, one run,
the API requests of each step counted from the API server's audit log.

codeflare-sdk (its newest release on PyPI) is installed by this benchmark into a virtual
environment of its own (``~/.cache/jupyter-dw/codeflare-venv``; never our dependency) and run
there (benchmarks/codeflare_steps.py). jupyter_dw runs as a kernel would (a process with a
``KernelRuntime``, no Jupyter server). Each has its own service account with the same RBAC
(a workbench's, plus reading Secrets, Services and Ingresses, which codeflare-sdk looks at), so
the audit log tells their requests apart. On an audited disposable control plane
(tests/cluster/audit.py). The steps:

1. first cell: ``import jupyter_dw`` / ``import codeflare_sdk``;
2. list queues: ``dw.queues()`` / ``list_local_queues(namespace)``;
3. create a cluster (1 head, 1 worker, 1 CPU and 2 GiB each, in LocalQueue ``team``):
   ``dw.submit(...)`` / ``Cluster(ClusterConfiguration(...)).apply(timeout=0)``;
4. learn it is ready: ``h.wait("ready")`` / ``cluster.wait_ready(dashboard_check=False)``;
   measured from KubeRay's ``status.state: ready`` reaching the benchmark's own watch (the API
   server's Ready) to the call returning;
5. list clusters with their status: ``dw.clusters()`` / ``list_all_clusters(namespace)``;
6. delete: ``h.delete()`` / ``cluster.down()``.

Usage: ``.venv/bin/python -m benchmarks.bench_codeflare [--json FILE] [--cluster-dir DIR]``
(needs ``make cluster-build`` and PyPI). The run is one pass of small steps already:
``--smoke`` is the same run (accepted so ``make bench --smoke`` treats every benchmark alike).
When codeflare-sdk cannot be installed, its side is left out and the error recorded
(``codeflare_sdk_blocked``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

from benchmarks.workbench import is_session_check, pod_environment, workbench, write_kubeconfig
from tests.cluster.audit import AuditedCluster, Request, received_between
from tests.cluster.fixtures import KueueObjects

HERE = Path(__file__).resolve().parent
VENV = Path.home() / ".cache" / "jupyter-dw" / "codeflare-venv"
STEPS = ("import", "list_queues", "create", "wait_ready", "list_clusters", "delete")
QUEUE = "team"
EXTRA_RULES = (
    {"apiGroups": [""], "resources": ["secrets", "services"], "verbs": ["get", "list"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["get", "list"]},
)
CANNOT = {
    "list_queues": "names and flavors only: no quota, usage or headroom",
    "wait_ready": "polls every 5 s; no queue position or Kueue reason while waiting",
    "list_clusters": "KubeRay's state only: no Kueue state, reason or position",
}


# -- jupyter_dw's side (a kernel process) ------------------------------------------------------


def dw_steps(namespace: str, queue: str, name: str) -> None:
    """The steps as a jupyter_dw user runs them, printed like codeflare_steps.py does."""

    def step(what: str, call: Any) -> Any:
        start = time.time()
        value = call()
        print(json.dumps({"step": what, "start": start, "end": time.time()}), flush=True)
        return value

    dw = step("import", lambda: __import__("jupyter_dw"))
    queues = step("list_queues", dw.queues)
    assert any(q.name == queue for q in queues), queues
    spec = {"worker_cpu": "1", "worker_memory": "2Gi", "head_cpu": "1", "head_memory": "2Gi"}
    handle = step("create", lambda: dw.submit(name=name, queue=queue, workers=1, **spec))
    step("wait_ready", lambda: handle.wait("ready", timeout=600))
    print(json.dumps({"ready_known": time.time()}), flush=True)
    listed = step("list_clusters", lambda: [(h.name, h.status().state) for h in dw.clusters()])
    assert [n for n, _ in listed] == [name], listed
    print(json.dumps({"listed_status": [s for _, s in listed]}), flush=True)
    step("delete", handle.delete)


# -- codeflare-sdk's virtual environment ---------------------------------------------------------


def codeflare_python() -> tuple[Path | None, str]:
    """The venv's Python with codeflare-sdk installed (made now if missing), and its version;
    (None, the error) when it cannot be installed."""
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    found = subprocess.run(
        [str(python), "-m", "pip", "show", "codeflare-sdk"], capture_output=True, text=True
    )
    if found.returncode != 0:
        print("installing codeflare-sdk from PyPI into", VENV)
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "codeflare-sdk"],
            capture_output=True,
            text=True,
        )
        if install.returncode != 0:
            return None, install.stderr.strip().splitlines()[-1]
        found = subprocess.run(
            [str(python), "-m", "pip", "show", "codeflare-sdk"], capture_output=True, text=True
        )
    version = next(
        line.split()[-1] for line in found.stdout.splitlines() if line.startswith("Version")
    )
    return python, version


# -- the run --------------------------------------------------------------------------------------


class ReadyWatch:
    """The administrator's own watch of the namespace's RayClusters: when each was first seen
    ``ready`` (the API server's Ready), by name."""

    def __init__(self, kube: client.ApiClient, namespace: str) -> None:
        self.ready_at: dict[str, float] = {}
        self._watch = watch.Watch()
        custom = client.CustomObjectsApi(kube)
        self._thread = threading.Thread(
            target=self._run, args=(custom, namespace), daemon=True, name="ready-watch"
        )
        self._thread.start()

    def _run(self, custom: client.CustomObjectsApi, namespace: str) -> None:
        stream = self._watch.stream(
            custom.list_namespaced_custom_object, "ray.io", "v1", namespace, "rayclusters"
        )
        for event in stream:
            obj = event["object"]
            state = (obj.get("status") or {}).get("state")
            if state == "ready":
                self.ready_at.setdefault(obj["metadata"]["name"], time.time())

    def stop(self) -> None:
        self._watch.stop()


def run_side(argv: list[str], environ: dict[str, str]) -> dict[str, Any]:
    """Run one side's steps; its step windows and when it knew the cluster ready."""
    answer = subprocess.run(argv, capture_output=True, text=True, env=environ, timeout=900)
    if answer.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed:\n{answer.stdout[-2000:]}\n{answer.stderr[-4000:]}")
    side: dict[str, Any] = {"steps": {}}
    for line in answer.stdout.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if "step" in record:
            side["steps"][record["step"]] = (record["start"], record["end"])
        else:
            side.update(record)
    return side


def per_step(side: dict[str, Any], requests: list[Request]) -> dict[str, dict[str, Any]]:
    """Requests received in each step's window (non-watch, watches), and its seconds."""
    figures = {}
    for name, (start, end) in side["steps"].items():
        inside = received_between(requests, start, end)
        figures[name] = {
            "seconds": round(end - start, 3),
            "requests": sum(1 for r in inside if not r.is_watch),
            "session_checks": sum(1 for r in inside if not r.is_watch and is_session_check(r)),
            "watches": sum(1 for r in inside if r.is_watch),
            "kinds": sorted({f"{r.verb} {r.resource}" for r in inside}),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--cluster-dir", help="reuse or keep an audited control plane here")
    parser.add_argument("--smoke", action="store_true", help="every figure measured, once")
    parser.add_argument("--dw-steps", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dw_steps:
        dw_steps(*args.dw_steps)
        return
    python, version = codeflare_python()
    with tempfile.TemporaryDirectory(prefix="dw-bench-codeflare-") as tmp:
        results = measure(Path(tmp), args, python, version)
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


def measure(
    directory: Path, args: argparse.Namespace, python: Path | None, version: str
) -> dict[str, Any]:
    plane = AuditedCluster(Path(args.cluster_dir) if args.cluster_dir else directory / "plane")
    state = plane.up()
    kube = config.new_client_from_config(config_file=state.kubeconfig)
    namespace = f"bench-cf-{uuid.uuid4().hex[:6]}"
    users = {
        "jupyter_dw": workbench(kube, state, namespace, directory, "dw-user", EXTRA_RULES),
        "codeflare_sdk": workbench(kube, state, namespace, directory, "cf-user", EXTRA_RULES),
    }
    version_served = "v1beta2" if plane.versions.kueue_serves_v1beta2 else "v1beta1"
    kueue = KueueObjects(kube, version_served, namespace, prefix=namespace)
    flavor = kueue.flavor("default")
    kueue.local_queue(QUEUE, kueue.cluster_queue("cq", {flavor: {"cpu": "8", "memory": "32Gi"}}))
    ready = ReadyWatch(kube, namespace)
    results: dict[str, Any] = {
        "codeflare_sdk_version": version if python else None,
        "cannot": CANNOT,
    }
    try:
        dw_env = pod_environment(users["jupyter_dw"])
        sides = {
            "jupyter_dw": run_side(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.bench_codeflare",
                    "--dw-steps",
                    namespace,
                    QUEUE,
                    "dw-ray",
                ],
                dw_env,
            )
        }
        if python is not None:
            kubeconfig = write_kubeconfig(users["codeflare_sdk"], directory / "cf.kubeconfig")
            cf_env = {
                "PATH": os.environ["PATH"],
                "HOME": os.environ["HOME"],
                "KUBECONFIG": str(kubeconfig),
            }
            sides["codeflare_sdk"] = run_side(
                [str(python), str(HERE / "codeflare_steps.py"), namespace, QUEUE, "cf-ray"], cf_env
            )
        else:
            results["codeflare_sdk_blocked"] = version
        names = {"jupyter_dw": "dw-ray", "codeflare_sdk": "cf-ray"}
        for side_name, side in sides.items():
            requests = plane.audit_log.requests([users[side_name].username])
            figures = per_step(side, requests)
            ready_at = ready.ready_at.get(names[side_name])
            if ready_at is not None and "ready_known" in side:
                figures["wait_ready"]["ready_to_known_ms"] = round(
                    (side["ready_known"] - ready_at) * 1000, 1
                )
            figures["list_clusters"]["status"] = side.get("listed_status")
            results[side_name] = figures
    finally:
        ready.stop()
        kueue.cleanup()
        client.CoreV1Api(kube).delete_namespace(namespace)
        if not args.cluster_dir:
            plane.down()
    return results


def print_table(results: dict[str, Any]) -> None:
    sides = [s for s in ("jupyter_dw", "codeflare_sdk") if s in results]
    print(f"\ncodeflare-sdk {results.get('codeflare_sdk_version') or 'not installed'}")
    for step in STEPS:
        cells = []
        for side in sides:
            f = results[side].get(step, {})
            extra = f" ready->known {f['ready_to_known_ms']} ms" if "ready_to_known_ms" in f else ""
            cells.append(
                f"{side}: {f.get('requests')} requests + {f.get('watches')} watches, "
                f"{f.get('seconds')} s{extra}"
            )
        print(f"{step:14s} " + " | ".join(cells))
    if "codeflare_sdk_blocked" in results:
        print(f"codeflare-sdk blocked: {results['codeflare_sdk_blocked']}")


if __name__ == "__main__":
    main()
