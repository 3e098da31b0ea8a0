"""Pure domain logic: quantities, quota and headroom, fit verdicts, cluster specs.

Nothing in this package does I/O or imports Kubernetes or Jupyter code.
"""
