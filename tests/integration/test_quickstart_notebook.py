"""``examples/quickstart.ipynb`` runs top to bottom in a real kernel (nbclient) as a workbench
kernel would: the pod's environment and service account, no server extension."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.integration.clusters_support import rayclusters
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster

NOTEBOOK = Path(__file__).parents[2] / "examples" / "quickstart.ipynb"


def test_quickstart_runs_top_to_bottom(identity, kueue, kube, namespace, monkeypatch, tmp_path):
    flavor = kueue.flavor("default")
    cq = kueue.cluster_queue("team-a", {flavor: {"cpu": "8", "memory": "32Gi"}})
    kueue.wait_active("clusterqueues", cq)
    lq = kueue.local_queue("team-a", cq, annotations={"kueue.x-k8s.io/default-queue": "true"})
    kueue.wait_active("localqueues", lq)
    monkeypatch.setenv("JUPYTER_DW_SERVICE_ACCOUNT_DIR", str(identity.service_account_dir))

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=300, resources={"metadata": {"path": str(tmp_path)}}).execute()

    outputs = {
        i: "".join(
            str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
            for o in cell.get("outputs", [])
        )
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
    }
    text = "\n".join(outputs.values())
    assert "never-fits" in text and "7 workers would start now" in text, text
    assert "dashboard: /dw/ray/quickstart/" in text
    assert f"ray://quickstart-head-svc.{namespace}.svc:10001" in text
    assert "'Ready'" in text  # the milestones of the ready cluster
    left = rayclusters(kube, namespace)
    assert left == [] or all(rc["metadata"].get("deletionTimestamp") for rc in left)
