"""``examples/quickstart.ipynb`` runs top to bottom in a real kernel (nbclient) as a workbench
kernel would: the pod's environment and service account, no server extension. Its job runs on
real Ray: KWOK pods run none, so a local Ray head with token auth stands in for the cluster's
(:mod:`tests.cluster.ray_standin`, the same stand-in ``make demo`` uses), reached through the
``ray_dashboard_url`` template and authenticated with the token of the cluster's own Secret.

The run, with its outputs, is the documentation's quickstart tutorial
(``docs/tutorials/quickstart.ipynb``, rendered as stored: the docs build executes nothing)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from kubernetes import client
from nbclient import NotebookClient

from tests.cluster.fixtures import watch_until
from tests.cluster.ray_standin import TOKEN_KEY, ray_standin
from tests.integration.clusters_support import rayclusters
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster

NOTEBOOK = Path(__file__).parents[2] / "examples" / "quickstart.ipynb"
DOCS_RUN = Path(__file__).parents[2] / "docs" / "tutorials" / "quickstart.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CLUSTER = "quickstart"


def test_quickstart_runs_top_to_bottom(identity, kueue, kube, namespace, monkeypatch, tmp_path):
    flavor = kueue.flavor("default")
    cq = kueue.cluster_queue("team-a", {flavor: {"cpu": "8", "memory": "32Gi"}})
    kueue.wait_active("clusterqueues", cq)
    lq = kueue.local_queue("team-a", cq, annotations={"kueue.x-k8s.io/default-queue": "true"})
    kueue.wait_active("localqueues", lq)
    monkeypatch.setenv("JUPYTER_DW_SERVICE_ACCOUNT_DIR", str(identity.service_account_dir))

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    with ray_standin(kube, namespace) as ray:
        for key, value in ray.settings_env().items():
            monkeypatch.setenv(key, value)
        runner = NotebookClient(
            notebook, timeout=300, resources={"metadata": {"path": str(tmp_path)}}
        )
        with runner.setup_kernel():
            for index, cell in enumerate(notebook.cells):
                if "h.submit_job(" in cell.source:
                    # The stand-in's keeper gives the cluster's Secret the head's token; the job
                    # cell runs once it holds it (a condition, not a race with the keeper).
                    watch_until(
                        client.CoreV1Api(kube).list_namespaced_secret,
                        lambda s: s.get("data", {}).get(TOKEN_KEY) == ray.secret_value,
                        namespace=namespace,
                        field_selector=f"metadata.name={CLUSTER}",
                        what="the cluster's token Secret holding the Ray head's token",
                    )
                runner.execute_cell(cell, index)
        runner.set_widgets_metadata()
        saved = tmp_path / "quickstart-run.ipynb"
        nbformat.write(notebook, saved)

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
    assert f"dashboard: /dw/ray/{CLUSTER}/" in text
    assert f"ray://{CLUSTER}-head-svc.{namespace}.svc:10001" in text
    assert "'Ready'" in text  # the milestones of the ready cluster
    # The job ran on real Ray: its tasks' answer came back in the log, and it is listed.
    assert "SUCCEEDED - sum of squares: 285" in text, text
    listed = next(
        i for i, cell in enumerate(notebook.cells) if cell.source == "%dw jobs quickstart"
    )
    assert "SUCCEEDED" in outputs[listed] and "python -c" in outputs[listed], outputs[listed]
    # The token is in neither the cells' outputs nor the widgets' saved state: not in the file.
    assert ray.token not in saved.read_text()
    nbformat.write(for_docs(notebook, namespace), DOCS_RUN)
    assert ray.token not in DOCS_RUN.read_text()
    left = rayclusters(kube, namespace)
    assert left == [] or all(rc["metadata"].get("deletionTimestamp") for rc in left)


DOCS_NAMESPACE = "my-project"
"""The namespace the docs' run shows, for the test's own (a fresh name each run)."""


def for_docs(notebook: nbformat.NotebookNode, namespace: str) -> nbformat.NotebookNode:
    """The run as the docs show it, offline: no widget state or views (they would need the
    widgets' JavaScript from a CDN; each view keeps its text), no execution timings, and the
    test's namespace named as a reader's would be."""
    shown = nbformat.reads(
        nbformat.writes(notebook).replace(namespace, DOCS_NAMESPACE), as_version=4
    )
    shown.metadata.pop("widgets", None)
    for cell in shown.cells:
        cell.metadata.pop("execution", None)
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
    return shown
