"""The core's results are HTML in IPython because the notebook layer registers their drawing
functions with IPython's formatter registry (the core knows no HTML): on ``import jupyter_dw``
inside IPython, and on ``%load_ext jupyter_dw``. Each path runs in a fresh interpreter, so the
shell and the registration are the ones that path makes."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from jupyter_dw.notebook.formatters import HTML_FORMATTERS

# Builds one of each displayed result, shows each through the shell's formatters, and prints
# whether that is exactly what the notebook layer's drawing function makes of it.
SHOW = """
import json
{setup}
from jupyter_dw.core.cluster_results import ClusterInfo, ClusterList
from jupyter_dw.core.queue_results import QueueList
from jupyter_dw.core.workload_results import WorkloadList
from jupyter_dw.domain.cluster_state import cluster_snapshot
from jupyter_dw.domain.kinds import TRAINJOB
from jupyter_dw.domain.ray_jobs import JobList
from jupyter_dw.notebook import display, job_display

info = ClusterInfo(
    cluster_snapshot({{"metadata": {{"name": "rc", "namespace": "ns"}}, "spec": {{}}}}),
    "/dw/ray/rc/", None, (), (),
)
shown = {{}}
for obj, draw in (
    (QueueList("ns", "v1beta2", True, True, ()), display.queues_html),
    (WorkloadList("ns", True, ()), display.workloads_html),
    (ClusterList("ns", True, (info,)), display.clusters_html),
    (info, display.cluster_html),
    (JobList("rc", ()), job_display.jobs_html),
    # A kind's own record class: registered as JobInfo, found through the MRO.
    (TRAINJOB.info({{"metadata": {{"name": "tj"}}}}, None), display.kind_job_html),
):
    data, _ = shell.display_formatter.format(obj)
    shown[type(obj).__name__] = data.get("text/html") == draw(obj)
print(json.dumps(shown))
"""

NEW_SHELL = (
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "shell = InteractiveShell.instance()\n"
)


def shown_as_html(setup: str) -> dict[str, bool]:
    done = subprocess.run(
        [sys.executable, "-c", SHOW.format(setup=setup)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


ALL_SHOWN = {
    "QueueList": True,
    "WorkloadList": True,
    "ClusterList": True,
    "ClusterInfo": True,
    "JobList": True,
    "TrainJobInfo": True,
}


def test_importing_jupyter_dw_in_ipython_shows_results_as_html():
    assert shown_as_html(NEW_SHELL + "import jupyter_dw") == ALL_SHOWN


def test_load_ext_shows_results_as_html():
    # The shell is made after the import here: only %load_ext can have registered anything.
    setup = "import jupyter_dw\n" + NEW_SHELL + "shell.run_line_magic('load_ext', 'jupyter_dw')"
    assert shown_as_html(setup) == ALL_SHOWN


def test_without_registration_a_result_is_not_html():
    # The two tests above would pass if the core drew its own HTML again: this one would not.
    setup = "import jupyter_dw\n" + NEW_SHELL
    assert shown_as_html(setup) == dict.fromkeys(ALL_SHOWN, False)


def test_outside_ipython_importing_jupyter_dw_imports_no_ipython():
    code = "import sys, jupyter_dw; print('IPython' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("formatter", HTML_FORMATTERS, ids=lambda f: f.type_name)
def test_each_registered_type_and_its_drawing_function_exist(formatter):
    # Types are registered by name: a class moved or renamed must fail here, not go plain.
    shown = getattr(importlib.import_module(formatter.module), formatter.type_name)
    assert isinstance(shown, type) and shown.__module__ == formatter.module
    assert not hasattr(shown, "_repr_html_")  # the core knows no HTML
    module = importlib.import_module(formatter.display_module, "jupyter_dw.notebook")
    assert callable(getattr(module, formatter.function))


def test_the_kernel_s_timeline_names_its_time_zone(monkeypatch):
    """A bare clock time in the kernel's zone read as the reader's would be wrong by hours:
    the kernel's HTML names its zone and carries the instant."""
    import time

    from jupyter_dw.domain.milestones import Milestone
    from jupyter_dw.notebook.display import timeline_html

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        html = timeline_html([Milestone("Submitted", "2026-11-26T22:14:47Z")])
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert '<time datetime="2026-11-26T22:14:47Z"' in html
    assert ">17:14:47 EST</time>" in html


def test_the_kernel_s_html_draws_the_timeline_bar_with_the_span_under_way_measured():
    from datetime import datetime, timezone

    from jupyter_dw.domain.milestones import Milestone
    from jupyter_dw.domain.timeline import cluster_timeline
    from jupyter_dw.notebook.display import timeline_bar_html

    timeline = cluster_timeline(
        [
            Milestone("Submitted", "2026-11-27T10:00:00Z"),
            Milestone("QuotaReserved", "2026-11-27T10:00:40Z"),
            Milestone("Admitted", "2026-11-27T10:00:40Z"),
        ],
        "admitted",
        2,
    )
    html = timeline_bar_html(timeline, now=datetime(2026, 11, 27, 10, 1, 0, tzinfo=timezone.utc))
    assert 'title="waiting in the queue 40s"' in html
    assert 'title="starting the head 20s so far"' in html  # measured to now
    assert html.index("waiting in the queue") < html.index("starting the head")
