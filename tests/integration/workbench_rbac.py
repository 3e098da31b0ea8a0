"""The RBAC a data scientist's workbench typically has, for the tests to grant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

KUEUE = "kueue.x-k8s.io"
RAY_RULE_VERBS = ["get", "list", "watch", "create", "delete", "patch"]
RAYJOB_VERBS = ["get", "list", "watch", "create", "delete"]


def namespace_rules(
    ray_verbs: Sequence[str] = RAY_RULE_VERBS, *, stop: bool = False
) -> list[dict[str, Any]]:
    """What a workbench typically may do in its namespace (Kueue's batch-user role, Ray
    clusters with ``ray_verbs``, RayJobs, reading pods and events, getting Ray's token Secrets);
    ``stop`` adds ``patch workloads``, which stop and resume need and the batch-user role
    lacks."""
    rules: list[dict[str, Any]] = [
        {
            "apiGroups": [KUEUE],
            "resources": ["localqueues", "workloads"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["visibility.kueue.x-k8s.io"],
            "resources": ["localqueues/pendingworkloads"],
            "verbs": ["get"],
        },
        {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": list(ray_verbs)},
        {"apiGroups": ["ray.io"], "resources": ["rayjobs"], "verbs": RAYJOB_VERBS},
        {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs"], "verbs": RAYJOB_VERBS},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["list", "watch"]},
    ]
    if stop:
        rules.append({"apiGroups": [KUEUE], "resources": ["workloads"], "verbs": ["patch"]})
    return rules


# The optional ClusterRole that reveals quota.
CLUSTER_READ_RULES = [
    {
        "apiGroups": [KUEUE],
        "resources": ["clusterqueues", "cohorts", "resourceflavors"],
        "verbs": ["get", "list", "watch"],
    }
]

# Reading pods' CPU and memory use (metrics.k8s.io, served by metrics-server). Not in
# namespace_rules(): a workbench has it only where an administrator grants it.
METRICS_READ_RULES = [
    {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["get", "list"]}
]
