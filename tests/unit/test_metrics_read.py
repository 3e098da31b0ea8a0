"""The metrics API read says why it has no answer, in words every surface shows."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_dw.k8s.errors import KubeApiError, KubeForbidden, KubeNotFound
from jupyter_dw.k8s.metrics import read_pod_metrics

NOT_SERVED = "the metrics API (metrics.k8s.io/v1beta1) is not served here"


class _Api:
    def __init__(self, error: Exception | None = None, answer: Any = None) -> None:
        self.error, self.answer = error, answer

    def get(self, path: str, expected: tuple[int, ...] = ()) -> Any:
        assert path == "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods"
        assert set(expected) >= {403, 404}  # answers, not failures to log
        if self.error is not None:
            raise self.error
        return self.answer


@pytest.mark.parametrize(
    "error",
    [
        # What the API server answers for a group nobody serves: plain text, no Status.
        KubeApiError(404, "Kubernetes API error 404 on ...: 404 page not found"),
        KubeNotFound("not found"),
    ],
)
def test_an_api_group_not_served_is_said_so(error: Exception) -> None:
    assert read_pod_metrics(_Api(error), "ns").reason == NOT_SERVED  # type: ignore[arg-type]


def test_other_answers() -> None:
    forbidden = read_pod_metrics(_Api(KubeForbidden("no")), "ns")  # type: ignore[arg-type]
    assert forbidden.items is None and "may not list pods.metrics.k8s.io" in str(forbidden.reason)
    down = read_pod_metrics(_Api(KubeApiError(503, "unavailable")), "ns")  # type: ignore[arg-type]
    assert str(down.reason).startswith("the metrics API failed")
    read = read_pod_metrics(_Api(answer={"items": [{"metadata": {}}]}), "ns")  # type: ignore[arg-type]
    assert read.items == [{"metadata": {}}] and read.reason is None
