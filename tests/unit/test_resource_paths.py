"""Kubernetes paths are built in one place, which refuses segments that would change the path."""

from __future__ import annotations

import pytest

from jupyter_dw.k8s.errors import InvalidRequest
from jupyter_dw.k8s.resources import RAY_CLUSTER


def test_kubernetes_paths_refuse_dot_and_empty_segments():
    for bad in ("", ".", "..", "a/..", "a/b"):
        with pytest.raises(InvalidRequest):
            RAY_CLUSTER.path("team", bad)
        with pytest.raises(InvalidRequest):
            RAY_CLUSTER.path(bad, "ok")
    assert RAY_CLUSTER.path("team", "ok") == "/apis/ray.io/v1/namespaces/team/rayclusters/ok"
