"""Fixtures for every test: the local control plane and its helpers (tests/cluster/fixtures.py)."""

pytest_plugins = ["tests.cluster.fixtures"]
