"""``python -m tests.cluster up|down|status|kubeconfig|build|demo-queues``: drive the local
control plane. ``demo-settings DIR`` writes the demo's JupyterLab user settings into DIR.
``demo-run -- COMMAND...`` runs COMMAND (the demo's JupyterLab) with a real Ray head standing
in for the demo clusters' Ray (:mod:`.ray_standin`), stopped when COMMAND ends."""

from __future__ import annotations

import argparse
import sys

from .controlplane import LocalCluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster", description=__doc__)
    parser.add_argument(
        "command",
        choices=[
            "up",
            "down",
            "status",
            "kubeconfig",
            "build",
            "demo-queues",
            "demo-settings",
            "demo-run",
        ],
    )
    parser.add_argument(
        "argv", nargs=argparse.REMAINDER, help="demo-run: -- COMMAND...; demo-settings: DIR"
    )
    parser.add_argument("--kueue", help="Kueue version (default: DW_KUEUE_VERSION or pinned)")
    args = parser.parse_args(argv)
    if args.command == "demo-settings":  # no cluster needed
        from pathlib import Path

        from .demo import write_demo_settings

        if len(args.argv) != 1:
            parser.error("demo-settings takes one argument: the settings directory")
        for path in write_demo_settings(Path(args.argv[0])):
            print(f"wrote {path}")
        return 0
    from .versions import Versions

    cluster = LocalCluster(versions=Versions.selected(args.kueue))
    if args.command == "build":
        cluster.build()
    elif args.command == "up":
        state = cluster.up()
        print(f"kube-apiserver {state.apiserver}; versions {state.versions}")
        print(f"export KUBECONFIG={state.kubeconfig}")
    elif args.command == "down":
        cluster.down()
        print("stopped")
    elif args.command == "status":
        state = cluster.state()
        healthy = cluster.is_healthy(state)
        print("running" if healthy else ("unhealthy" if state else "not running"))
        if state:
            for name, pid in state.pids.items():
                print(f"  {name}: pid {pid}")
        return 0 if healthy else 1
    elif args.command == "demo-queues":
        state = cluster.state()
        if state is None or not cluster.is_healthy(state):
            print("no running cluster: run `make cluster-up`", file=sys.stderr)
            return 1
        from .demo import apply_demo_queues
        from .kubeapi import AdminApi

        api_version = "v1beta2" if cluster.versions.kueue_serves_v1beta2 else "v1beta1"
        for applied in apply_demo_queues(AdminApi(state.kubeconfig), api_version):
            print(f"applied {applied}")
    elif args.command == "demo-run":
        state = cluster.state()
        if state is None or not cluster.is_healthy(state):
            print("no running cluster: run `make cluster-up`", file=sys.stderr)
            return 1
        command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        return _run_with_ray(state.kubeconfig, command)
    elif args.command == "kubeconfig":
        state = cluster.state()
        if state is None:
            print("no cluster: run `make cluster-up`", file=sys.stderr)
            return 1
        print(state.kubeconfig)
    return 0


def _run_with_ray(kubeconfig: str, command: list[str]) -> int:
    """``command`` with the demo namespace's Ray stand-in and its settings in the environment."""
    import os
    import signal
    import subprocess

    from kubernetes import config

    from .demo import DEMO_NAMESPACE
    from .ray_standin import ray_standin

    print("starting a local Ray head for the demo clusters (the first time builds its venv)")
    api = config.new_client_from_config(config_file=kubeconfig)
    with ray_standin(api, DEMO_NAMESPACE) as ray:
        print(f"Ray {ray.dashboard_template} (token auth; jobs of every demo cluster run there)")
        child = subprocess.Popen(command, env={**os.environ, **ray.settings_env()})
        # A SIGTERM ends the child first, so that the Ray head is stopped on the way out.
        signal.signal(signal.SIGTERM, lambda *_: child.terminate())
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue  # Ctrl-C reaches the child too: it decides when it ends, then Ray stops


if __name__ == "__main__":
    sys.exit(main())
