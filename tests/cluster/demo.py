"""Demo queues for ``make demo``: two teams' ClusterQueues in one cohort, GPUs in one of them;
and the demo's JupyterLab user settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .kubeapi import AdminApi

DEMO_NAMESPACE = "default"


def demo_objects(api_version: str) -> list[dict[str, Any]]:
    """ResourceFlavors, ClusterQueues sharing a cohort, and LocalQueues in ``default``."""
    group = f"kueue.x-k8s.io/{api_version}"
    cohort_key = "cohortName" if api_version == "v1beta2" else "cohort"

    def cluster_queue(name: str, cpu: str, memory: str, gpus: str) -> dict[str, Any]:
        return {
            "apiVersion": group,
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {},
                cohort_key: "demo",
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "demo-default",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": cpu},
                                    {"name": "memory", "nominalQuota": memory},
                                    {"name": "nvidia.com/gpu", "nominalQuota": gpus},
                                ],
                            }
                        ],
                    }
                ],
            },
        }

    def local_queue(name: str, cq: str, default: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": DEMO_NAMESPACE}
        if default:
            meta["annotations"] = {"kueue.x-k8s.io/default-queue": "true"}
        return {
            "apiVersion": group,
            "kind": "LocalQueue",
            "metadata": meta,
            "spec": {"clusterQueue": cq},
        }

    return [
        {"apiVersion": group, "kind": "ResourceFlavor", "metadata": {"name": "demo-default"}},
        cluster_queue("demo-team-a", cpu="8", memory="32Gi", gpus="0"),
        cluster_queue("demo-team-b", cpu="4", memory="16Gi", gpus="2"),
        local_queue("team-a", "demo-team-a", default=True),
        local_queue("team-b", "demo-team-b"),
    ]


def apply_demo_queues(api: AdminApi, api_version: str) -> list[str]:
    """Create or update the demo queues; returns what was applied, as kind/name."""
    applied = []
    for obj in demo_objects(api_version):
        api.apply(obj)
        applied.append(f"{obj['kind']}/{obj['metadata']['name']}")
    return applied


DEMO_SETTINGS: dict[str, dict[str, Any]] = {
    # The Distributed Workloads panel shown when the quickstart opens (a demo-only setting).
    "jupyter-dw/plugin": {"openOnStartup": True},
    # JupyterLab 4 asks "Would you like to get notified about official Jupyter news?" while
    # this is "none" (its default), in a toast over the quickstart: the demo answers "no".
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},
}
"""The demo's JupyterLab user settings: plugin (``<package>/<plugin>``) → values."""


def write_demo_settings(settings_dir: Path) -> list[Path]:
    """Write :data:`DEMO_SETTINGS` into ``settings_dir`` (JupyterLab's
    ``--LabApp.user_settings_dir``); returns the files written."""
    written = []
    for plugin, values in DEMO_SETTINGS.items():
        path = settings_dir / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values, indent=2) + "\n")
        written.append(path)
    return written
