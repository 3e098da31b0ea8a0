"""jupyter_dw and codeflare-sdk side by side: the same steps, the same control plane, one run,
the API requests of each step counted from the API server's audit log.

codeflare-sdk (its newest release on PyPI) is installed by this benchmark into a virtual
environment of its own (``~/.cache/jupyter-dw/codeflare-venv``; never our dependency) and run
there (benchmarks/codeflare_steps.py). jupyter_dw runs twice, as a kernel does in each place:

- ``jupyter_dw``: a kernel of a workbench, whose Jupyter server runs jupyter_dw. The server
  is started first and answers before the steps (a workbench pod starts its server before its
  user opens a notebook); the kernel process reads through it (``JUPYTER_DW_SERVER_LINK``). A
  step counts everything the workbench's service account asked during it, the server's
  requests included; what the server asked from its start to the first step is reported
  apart (``server_start``);
- ``jupyter_dw_own``: a kernel on its own connection (VS Code, a server without jupyter_dw):
  a process with a ``KernelRuntime`` of its own.

Each side has its own service account with the same RBAC (a workbench's, plus reading
Secrets, Services and Ingresses, which codeflare-sdk looks at) in a namespace of its own (a
LocalQueue ``team`` on the same ClusterQueue), so the audit log tells their requests apart and
no side sees another's clusters. On an audited disposable control plane
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

Each side runs ``--rounds`` passes (default 3), each in fresh processes (a fresh server too),
its cluster named for the round; each figure is the median of the rounds (every round's
seconds are kept). Before its steps each side's process imports what every kernel holds
(IPython, asyncio), and jupyter_dw's bytecode is compiled first, as installing its wheel does
(codeflare-sdk's virtual environment holds its own).

Usage: ``.venv/bin/python -m benchmarks.bench_codeflare [--rounds 3] [--json FILE]
[--cluster-dir DIR]`` (needs ``make cluster-build`` and PyPI). ``--smoke``: one round.
When codeflare-sdk cannot be installed, its side is left out and the error recorded
(``codeflare_sdk_blocked``).
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

import jupyter_dw
from benchmarks.workbench import (
    JupyterServer,
    is_session_check,
    pod_environment,
    workbench,
    write_kubeconfig,
)
from jupyter_dw.names import KERNEL_LINK_ENV
from tests.cluster.audit import AuditedCluster, Request, received_between
from tests.cluster.fixtures import KueueObjects, cluster_role_name
from tests.integration.clusters_support import wait_gone

HERE = Path(__file__).resolve().parent
VENV = Path.home() / ".cache" / "jupyter-dw" / "codeflare-venv"
STEPS = ("import", "list_queues", "create", "wait_ready", "list_clusters", "delete")
SIDES = ("jupyter_dw", "jupyter_dw_own", "codeflare_sdk")
"""jupyter_dw in a kernel of its server, jupyter_dw in a kernel on its own, codeflare-sdk."""
CLUSTER_NAMES = {"jupyter_dw": "dw-ray", "jupyter_dw_own": "dw-own-ray", "codeflare_sdk": "cf-ray"}
QUEUE = "team"
EXTRA_RULES = (
    {"apiGroups": [""], "resources": ["secrets", "services"], "verbs": ["get", "list"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["get", "list"]},
)
THROUGH_SERVER_ENV = "JUPYTER_DW_KERNELS_THROUGH_SERVER"
"""``false`` keeps a kernel on its own connection even where a server link is set."""
CANNOT = {
    "list_queues": "names and flavors only: no quota, usage or headroom",
    "wait_ready": "polls every 5 s; no queue position or Kueue reason while waiting",
    "list_clusters": "KubeRay's state only: no Kueue state, reason or position",
}


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
    """The administrator's own watch of every RayCluster: when each was first seen ``ready``
    (the API server's Ready), by name (each side's cluster has a name of its own)."""

    def __init__(self, kube: client.ApiClient) -> None:
        self.ready_at: dict[str, float] = {}
        self._watch = watch.Watch()
        custom = client.CustomObjectsApi(kube)
        self._thread = threading.Thread(
            target=self._run, args=(custom,), daemon=True, name="ready-watch"
        )
        self._thread.start()

    def _run(self, custom: client.CustomObjectsApi) -> None:
        stream = self._watch.stream(
            custom.list_cluster_custom_object, "ray.io", "v1", "rayclusters"
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


def window_figures(requests: list[Request], start: float, end: float) -> dict[str, Any]:
    """Requests received in ``[start, end)`` (non-watch, watches), and its seconds."""
    inside = received_between(requests, start, end)
    return {
        "seconds": round(end - start, 3),
        "requests": sum(1 for r in inside if not r.is_watch),
        "session_checks": sum(1 for r in inside if not r.is_watch and is_session_check(r)),
        "watches": sum(1 for r in inside if r.is_watch),
        "kinds": sorted({f"{r.verb} {r.resource}" for r in inside}),
    }


def per_step(side: dict[str, Any], requests: list[Request]) -> dict[str, dict[str, Any]]:
    """:func:`window_figures` of each step's window."""
    return {
        name: window_figures(requests, start, end) for name, (start, end) in side["steps"].items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--cluster-dir", help="reuse or keep an audited control plane here")
    parser.add_argument(
        "--rounds", type=int, default=3, help="passes of the steps (medians are shown)"
    )
    parser.add_argument("--smoke", action="store_true", help="every figure measured, once")
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1
    # As installing the wheel does (pip compiles it): a machine that sets
    # PYTHONDONTWRITEBYTECODE would otherwise compile jupyter_dw from source in every step
    # process, while codeflare-sdk's virtual environment holds its bytecode.
    compileall.compile_dir(Path(jupyter_dw.__file__).parent, quiet=1)
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
    run = uuid.uuid4().hex[:6]
    version_served = "v1beta2" if plane.versions.kueue_serves_v1beta2 else "v1beta1"
    kueue = KueueObjects(kube, version_served, "default", prefix=f"bench-cf-{run}")
    flavor = kueue.flavor("default")
    cluster_queue = kueue.cluster_queue("cq", {flavor: {"cpu": "8", "memory": "32Gi"}})
    namespaces = {side: f"bench-cf-{run}-{i}" for i, side in enumerate(SIDES)}
    users = {}
    for side_name, namespace in namespaces.items():
        home = directory / namespace
        home.mkdir()
        users[side_name] = workbench(kube, state, namespace, home, "user", EXTRA_RULES)
        dataclasses.replace(kueue, namespace=namespace).local_queue(QUEUE, cluster_queue)
    ready = ReadyWatch(kube)
    results: dict[str, Any] = {
        "codeflare_sdk_version": version if python else None,
        "cannot": CANNOT,
        "rounds": args.rounds,
    }
    if python is None:
        results["codeflare_sdk_blocked"] = version
    rounds: dict[str, list[dict[str, Any]]] = {}
    try:
        for index in range(args.rounds):
            sides = run_round(index, directory, users, python)
            for side_name, side in sides.items():
                requests = plane.audit_log.requests([users[side_name].username])
                figures: dict[str, Any] = per_step(side, requests)
                ready_at = ready.ready_at.get(side["cluster"])
                if ready_at is not None and "ready_known" in side:
                    figures["wait_ready"]["ready_to_known_ms"] = round(
                        (side["ready_known"] - ready_at) * 1000, 1
                    )
                figures["list_clusters"]["status"] = side.get("listed_status")
                if "api_import_seconds" in side:
                    figures["list_queues"]["api_import_seconds"] = round(
                        side["api_import_seconds"], 3
                    )
                if "server_spawned" in side:
                    first = min(start for start, _ in side["steps"].values())
                    figures["server_start"] = window_figures(
                        requests, side["server_spawned"], first
                    )
                figures["connection"] = side.get("connection")
                rounds.setdefault(side_name, []).append(figures)
                # The next round's listing must find its own cluster only.
                if not wait_gone(kube, users[side_name].namespace, side["cluster"]):
                    raise TimeoutError(f"{side['cluster']} was not deleted")
        for side_name, passes in rounds.items():
            results[side_name] = summarise(passes)
    finally:
        ready.stop()
        rbac = client.RbacAuthorizationV1Api(kube)
        for identity in users.values():
            role = cluster_role_name(identity.namespace, identity.name)
            with contextlib.suppress(client.ApiException):
                rbac.delete_cluster_role_binding(role)
                rbac.delete_cluster_role(role)
        for namespace in namespaces.values():
            client.CoreV1Api(kube).delete_namespace(namespace)
        kueue.cleanup()
        if not args.cluster_dir:
            plane.down()
    return results


def dw_argv(namespace: str, name: str) -> list[str]:
    """The jupyter_dw steps' process: a script that holds nothing of ours before its steps."""
    return [sys.executable, str(HERE / "dw_steps.py"), namespace, QUEUE, name]


def run_round(
    index: int, directory: Path, users: dict[str, Any], python: Path | None
) -> dict[str, dict[str, Any]]:
    """One pass of the steps on each side, each in fresh processes (and, for the kernel of a
    server, a fresh server), its cluster named for the round."""
    names = {side: f"{CLUSTER_NAMES[side]}-{index}" for side in SIDES}
    own = users["jupyter_dw_own"]
    sides = {
        "jupyter_dw": run_server_side(
            directory / f"server-{index}", users["jupyter_dw"], names["jupyter_dw"]
        ),
        "jupyter_dw_own": run_side(
            dw_argv(own.namespace, names["jupyter_dw_own"]),
            {**pod_environment(own), THROUGH_SERVER_ENV: "false"},
        ),
    }
    if python is not None:
        identity = users["codeflare_sdk"]
        kubeconfig = write_kubeconfig(identity, directory / "cf.kubeconfig")
        cf_env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ["HOME"],
            "KUBECONFIG": str(kubeconfig),
        }
        argv = [str(HERE / "codeflare_steps.py"), identity.namespace, QUEUE]
        sides["codeflare_sdk"] = run_side([str(python), *argv, names["codeflare_sdk"]], cf_env)
    for side, record in sides.items():
        record["cluster"] = names[side]
    return sides


def summarise(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One side's rounds as one figure per step: the median of each count and time (the
    kinds asked in any round), each round's seconds kept."""
    summary: dict[str, Any] = {"connection": rounds[0].get("connection")}
    if "server_start" in rounds[0]:
        summary["server_start"] = _median_window([r["server_start"] for r in rounds])
    for step in STEPS:
        summary[step] = _median_window([r[step] for r in rounds])
    summary["list_clusters"]["status"] = rounds[-1]["list_clusters"].get("status")
    return summary


def _median_window(windows: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {
        key: statistics.median(w[key] for w in windows)
        for key in ("seconds", "requests", "session_checks", "watches")
    }
    merged["kinds"] = sorted({kind for w in windows for kind in w["kinds"]})
    merged["rounds_seconds"] = [w["seconds"] for w in windows]
    imports = [w["api_import_seconds"] for w in windows if "api_import_seconds" in w]
    if imports:
        merged["api_import_seconds"] = statistics.median(imports)
    known = [w["ready_to_known_ms"] for w in windows if "ready_to_known_ms" in w]
    if known:
        merged["ready_to_known_ms"] = float(statistics.median(known))
        merged["rounds_ready_to_known_ms"] = known
    return merged


def run_server_side(work: Path, identity: Any, name: str) -> dict[str, Any]:
    """The steps in a kernel of a Jupyter server that runs jupyter_dw as the workbench's
    service account, started (and answering) before them, as a workbench pod's is."""
    work.mkdir()
    runtime_dir = work / "runtime"
    environ = {**pod_environment(identity), "JUPYTER_RUNTIME_DIR": str(runtime_dir)}
    flags = (f"--JupyterDW.service_account_dir={identity.service_account_dir}",)
    server = JupyterServer(work, environ, extra_args=flags)
    spawned = time.time()
    try:
        server.wait_answer("dw/api/queues", 200, 300)
        # What a kernel the server starts inherits (this one is started here instead).
        link = runtime_dir / f"jupyter_dw-{server.port}.json"
        side = run_side(dw_argv(identity.namespace, name), {**environ, KERNEL_LINK_ENV: str(link)})
    finally:
        server.stop()
    side["server_spawned"] = spawned
    return side


def print_table(results: dict[str, Any]) -> None:
    sides = [s for s in SIDES if s in results]
    print(f"\ncodeflare-sdk {results.get('codeflare_sdk_version') or 'not installed'}")
    for step in STEPS:
        cells = []
        for side in sides:
            f = results[side].get(step, {})
            extra = f" ready->known {f['ready_to_known_ms']} ms" if "ready_to_known_ms" in f else ""
            cells.append(
                f"{side}: {f.get('requests')} requests + {f.get('watches')} watches, "
                f"{f.get('seconds')} s{extra} (rounds {f.get('rounds_seconds')})"
            )
        print(f"{step:14s} " + " | ".join(cells))
    start = results.get("jupyter_dw", {}).get("server_start")
    if start:
        print(
            f"jupyter_dw's server, from its start to the first step ({start['seconds']} s): "
            f"{start['requests']} requests + {start['watches']} watches"
        )
    if "codeflare_sdk_blocked" in results:
        print(f"codeflare-sdk blocked: {results['codeflare_sdk_blocked']}")


if __name__ == "__main__":
    main()
