"""What a workload kind may ask of the core while it parses, fits or makes a job
(:class:`~jupyter_dw.domain.job_kind.Environment`), answered from one session and the cluster
service: each answer read only when a kind asks, once per request."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from ..domain.cluster_spec import SpecError, ValidatedClusterSpec
from ..k8s.errors import KubeApiError
from ..k8s.resources import by_kind
from ..k8s.session import KubeSession
from .clusters import ClusterService
from .errors import InvalidSpec


class CoreEnvironment:
    """One request's :class:`~jupyter_dw.domain.job_kind.Environment`."""

    def __init__(self, session: KubeSession, clusters: ClusterService) -> None:
        self.session = session
        self.clusters = clusters

    @property
    def allowed_images(self) -> tuple[str, ...]:
        return self.clusters.policy.allowed_images

    def parse_cluster(self, request: Mapping[str, Any]) -> ValidatedClusterSpec:
        # The clusters' own parser and policy; the job's parser reports its errors.
        try:
            return self.clusters.validate_spec(request, None, None, None)
        except InvalidSpec as err:
            raise SpecError(err.errors or {}) from err

    def sidecar_counted(self) -> bool:
        return self._sidecar_counted

    @cached_property
    def _sidecar_counted(self) -> bool:
        return self.clusters.elastic.autoscaler_quota().counted

    def auth_options_served(self) -> bool:
        return self.session.discovery.ray_auth_options is not False

    def referenced(self, kind: str, name: str) -> Mapping[str, Any] | None:
        try:
            return self.session.get_object(by_kind(kind), name)
        except KubeApiError as err:
            if err.api_status == 404:
                return None
            raise
