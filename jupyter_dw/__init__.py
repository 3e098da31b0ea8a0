"""Kueue queues, quota and Ray clusters inside Jupyter."""

from ._version import __version__

__all__ = ["__version__"]
