"""Stop and resume from a notebook on the real control plane: ``h.stop()``/``h.resume()``,
their ``_async`` forms and ``%dw stop|resume NAME``, with the record of who stopped it."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

import jupyter_dw as dw
from tests.integration.clusters_support import make_queue
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

WORKBENCH_RULES = namespace_rules(stop=True)
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES

pytestmark = pytest.mark.cluster

SIZE = {"worker_cpu": "1", "worker_memory": "1Gi", "head_cpu": "1", "head_memory": "1Gi"}


async def test_stop_and_resume_from_the_handle_and_the_magics(kernel, kueue, identity, capsys):
    make_queue(kueue)
    h = dw.submit(name="nb", workers=1, **SIZE)
    await h.wait_async()

    with pytest.raises(dw.WrongState) as refused:
        h.resume()
    assert refused.value.code == "not_stopped" and refused.value.state == "ready"

    stopped = await h.stop_async()
    assert stopped.state == "stopped" and stopped.stopped is not None
    assert stopped.stopped.by == identity.username
    assert stopped.stopped.reason == {"by": "person"}
    with pytest.raises(dw.ClusterFailed, match="is stopped"):
        h.wait(timeout=30)  # never ready by itself: no silent time-out
    with pytest.raises(dw.WrongState) as again:
        h.stop()
    assert again.value.code == "not_admitted"

    resumed = await h.resume_async()
    assert resumed.state in ("queued", "admitted", "starting", "ready")
    assert resumed.stopped is None
    ready = await h.wait_async()
    assert (ready.workers_desired, ready.workers_ready) == (1, 1)

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jupyter_dw")
    info = shell.run_line_magic("dw", "stop nb")
    assert info.state == "stopped"
    assert "Stopped Ray cluster nb" in capsys.readouterr().out
    info = shell.run_line_magic("dw", "resume nb")
    assert info.state != "stopped"
    assert "Resumed Ray cluster nb" in capsys.readouterr().out
    assert shell.run_line_magic("dw", "stop absent") is None  # printed, not raised
    assert "No RayCluster named 'absent'" in capsys.readouterr().out
