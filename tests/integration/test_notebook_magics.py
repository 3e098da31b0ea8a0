"""``%dw`` in IPython's own shell on the real control plane: every subcommand with good and
bad arguments; results are returned (``h = %dw up ...``), errors printed, never raised."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

import jupyter_dw as dw
from tests.integration.clusters_support import make_queue, rayclusters
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster

SIZE = "--worker-cpu 1 --worker-memory 1Gi --head-cpu 1 --head-memory 1Gi"


@pytest.fixture
def shell(kernel):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jupyter_dw")
    assert not kernel.started  # loading the extension contacts nothing
    return ip


def dw_magic(shell, line: str):
    return shell.run_line_magic("dw", line)


def html_in(shell, result) -> str:
    """What the notebook shows: the HTML the formatters %load_ext registered make of it."""
    return shell.display_formatter.format(result)[0]["text/html"]


def test_queues_fit_up_status_list_down(shell, kueue, kube, namespace, capsys):
    queue = make_queue(kueue)
    queues = dw_magic(shell, "queues")
    assert [q.name for q in queues.queues] == [queue.local_queue]
    assert queue.local_queue in html_in(shell, queues)

    fit = dw_magic(shell, f"fit --workers 2 {SIZE}")
    assert fit.verdict == "fits-now"
    big = dw_magic(shell, f"fit --workers 20 {SIZE}")
    assert big.verdict == "never-fits" and big.suggestion.workers == 3
    assert "3 workers would start now" in html_in(shell, big)

    handle = dw_magic(shell, f"up demo --workers 1 {SIZE} --wait")
    assert isinstance(handle, dw.RayClusterHandle) and handle.name == "demo"
    progress = capsys.readouterr().out
    assert "demo: ready, 1/1 workers ready" in progress

    status = dw_magic(shell, "status demo")
    assert status.state == "ready" and "ready" in html_in(shell, status)
    listing = dw_magic(shell, "list")
    assert [c.name for c in listing.clusters] == ["demo"]
    assert dw_magic(shell, "status").clusters[0].state == "ready"

    watch = dw_magic(shell, "watch demo")
    assert isinstance(watch, dw.ClusterStatus) and watch.state == "ready"
    watch.close()

    assert dw_magic(shell, "down demo") is None
    assert "Deleted Ray cluster demo" in capsys.readouterr().out
    left = rayclusters(kube, namespace)
    assert left == [] or left[0]["metadata"].get("deletionTimestamp")


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("", "%dw queues"),
        ("help", "%dw fit"),
        ("bogus", "invalid choice"),
        ("fit --workers many", "invalid int value"),
        ("up", "the following arguments are required: NAME"),
        ("fit --workers 2 --worker-memory lots", "worker_memory"),
        ("fit --workers 2 --queue nope", "queue"),
        ("status no-such-cluster", "No RayCluster named 'no-such-cluster'"),
        ("down no-such-cluster", "No RayCluster named 'no-such-cluster'"),
        ("down Bad.Name", "Invalid RayCluster name"),
    ],
)
def test_bad_arguments_print_usage_or_the_reason_not_a_traceback(
    shell, kueue, kube, namespace, capsys, line, says
):
    make_queue(kueue)
    assert dw_magic(shell, line) is None
    out = capsys.readouterr()
    assert says in out.out, out
    assert "Traceback" not in out.out + out.err
    assert rayclusters(kube, namespace) == []
