"""Kueue queues, quota and Ray clusters inside Jupyter."""

from __future__ import annotations

from typing import Any

from ._version import __version__

__all__ = ["__version__"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Entry point for jupyter_server: the ``JupyterDW`` extension app."""
    # Imported here so `import jupyter_dw` stays light in kernels (no jupyter_server).
    from .server.app import JupyterDW

    return [{"module": "jupyter_dw", "app": JupyterDW}]
