"""The core's results as HTML in IPython, registered with IPython's formatter registry.
Types named by module and class, so registering imports neither the core nor the display
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any, NamedTuple


class HtmlFormatter(NamedTuple):
    """Show instances of ``module.type_name`` as ``function(obj)`` of ``display_module``."""

    module: str
    type_name: str
    display_module: str
    function: str


HTML_FORMATTERS = (
    HtmlFormatter("jupyter_dw.core.queue_results", "QueueList", ".display", "queues_html"),
    HtmlFormatter("jupyter_dw.core.workload_results", "WorkloadList", ".display", "workloads_html"),
    HtmlFormatter("jupyter_dw.core.cluster_results", "ClusterList", ".display", "clusters_html"),
    HtmlFormatter("jupyter_dw.core.cluster_results", "ClusterInfo", ".display", "cluster_html"),
    HtmlFormatter("jupyter_dw.core.cluster_results", "FitResult", ".display", "fit_html"),
    HtmlFormatter("jupyter_dw.domain.ray_jobs", "JobList", ".job_display", "jobs_html"),
    # A RayJob's or TrainJob's record (every kind's subclasses it: IPython looks up the MRO).
    HtmlFormatter("jupyter_dw.domain.job_kind", "JobInfo", ".display", "kind_job_html"),
)


def drawer(formatter: HtmlFormatter) -> Callable[[Any], str]:
    """The function that draws ``formatter``'s type, its module imported when first called."""

    def draw(obj: Any) -> str:
        module = importlib.import_module(formatter.display_module, __package__)
        html: str = getattr(module, formatter.function)(obj)
        return html

    return draw


def current_shell() -> Any | None:
    """The running IPython shell, None outside one (IPython is never imported here: a plain
    ``python`` process that never loaded it has no shell to register with)."""
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)  # None while IPython is importing
    return get_ipython() if get_ipython is not None else None


def register(shell: Any | None = None) -> None:
    """Show the core's results as HTML in ``shell`` (default: the running IPython; nothing
    outside one). Idempotent."""
    shell = shell if shell is not None else current_shell()
    if shell is None:
        return
    html = shell.display_formatter.formatters["text/html"]
    for formatter in HTML_FORMATTERS:
        html.for_type_by_name(formatter.module, formatter.type_name, drawer(formatter))
