"""Fixtures for every test: the local control plane and its helpers (tests/cluster/fixtures.py),
and pytest-jupyter's server fixtures (jp_serverapp, jp_fetch, ...)."""

pytest_plugins = [
    "tests.cluster.fixtures",
    "tests.integration.ray_jobs_support",
    "pytest_jupyter.jupyter_server",
]
