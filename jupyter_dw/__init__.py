"""Kueue queues, quota and Ray clusters inside Jupyter.

``import jupyter_dw as dw`` gives the notebook API (``dw.queues()``, ``dw.workloads()``,
``dw.fit(...)``, ``dw.submit(...)``, ``dw.cluster(name)``, the widgets). Everything is imported
on first use: importing the package, or ``%load_ext jupyter_dw``, contacts nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__

# Public name -> module that defines it (imported when the name is first used).
_LAZY = {
    "queues": ".notebook.api",
    "workloads": ".notebook.api",
    "fit": ".notebook.api",
    "submit": ".notebook.api",
    "cluster": ".notebook.api",
    "clusters": ".notebook.api",
    "context": ".notebook.api",
    "KernelContext": ".notebook.api",
    "Connection": ".notebook.runtime",
    "ClusterSpec": ".notebook.api",
    "RayClusterHandle": ".notebook.api",
    "DWError": ".core.errors",
    "InvalidSpec": ".core.errors",
    "PermissionDenied": ".notebook.api",
    "NotFound": ".notebook.api",
    "NameTaken": ".notebook.api",
    "NotInstalled": ".notebook.api",
    "Unreachable": ".notebook.api",
    "ClusterFailed": ".notebook.api",
    "WaitTimeout": ".notebook.api",
    "ClusterBuilder": ".notebook.widgets",
    "ClusterStatus": ".notebook.widgets",
    "QueueBoard": ".notebook.widgets",
    "JobView": ".notebook.job_view",
    "RayJobHandle": ".notebook.jobs",
    "RayJobSpec": ".notebook.kinds.rayjob",
    "KubeRayJobHandle": ".notebook.kinds.rayjob",
    "RayJobEnded": ".notebook.kinds.rayjob",
    "rayjob": ".notebook.kinds.rayjob",
    "rayjobs": ".notebook.kinds.rayjob",
    "JobFailed": ".core.errors",
    "ClusterNotReady": ".core.errors",
    "RayUnreachable": ".core.errors",
    "RayTokenUnavailable": ".core.errors",
    "RayNotInstalled": ".core.errors",
    "RayVersionMismatch": ".core.errors",
    "WrongState": ".core.errors",
    "TrainJobSpec": ".notebook.kinds.trainjob",
    "TrainJobHandle": ".notebook.kinds.trainjob",
    "TrainJobEnded": ".notebook.kinds.trainjob",
    "trainjob": ".notebook.kinds.trainjob",
    "trainjobs": ".notebook.kinds.trainjob",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jupyter_dw' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Entry point for jupyter_server: the ``JupyterDW`` extension app."""
    # Imported here so `import jupyter_dw` stays light in kernels (no jupyter_server).
    from .server.app import JupyterDW

    return [{"module": "jupyter_dw", "app": JupyterDW}]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_dw``: registers ``%dw`` and the results' HTML (contacts nothing
    until it is used)."""
    from .notebook.magics import load_ipython_extension as load

    load(ipython)


def _show_results_as_html() -> None:
    # In a kernel, `dw.queues()` is a table without `%load_ext`: the results' HTML is
    # registered with IPython's formatters on import (naming the types, importing nothing
    # heavy; outside IPython it does nothing).
    from .notebook.formatters import register

    register()


_show_results_as_html()
