"""Which Kueue, Kueue visibility and KubeRay APIs, and which workload kinds
(:mod:`jupyter_dw.domain.kinds`), the cluster serves (asked at start and at every re-check).

Discovery documents are readable by every authenticated identity (the ``system:discovery``
ClusterRole), so this works for the most restricted workbench service account.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from ..domain.job_kind import JobKind
from ..domain.json_decode import decode_key
from ..domain.kinds.rayjob import RAYJOB
from ..domain.kinds.trainjob import TRAINJOB
from .errors import KubeError, NotInstalled
from .resources import (
    COHORT,
    COHORT_VERSIONS,
    JOB_RESOURCES,
    KUEUE_GROUP,
    KUEUE_VERSIONS,
    LOCAL_QUEUE,
    RAY_CLUSTER,
    RAY_GROUP,
    VISIBILITY_GROUP,
    VISIBILITY_VERSIONS,
    Resource,
    ResourceKind,
    kind_resource,
)

if TYPE_CHECKING:
    from .client import KubeApi

log = logging.getLogger(__name__)

KUEUE_HINT = (
    "Ask a cluster administrator to install Kueue (https://kueue.sigs.k8s.io), version 0.9 "
    "or newer, which serves kueue.x-k8s.io v1beta1 or v1beta2."
)
KUBERAY_HINT = (
    "Ask a cluster administrator to install the KubeRay operator "
    "(https://docs.ray.io/en/latest/cluster/kubernetes/), which serves ray.io/v1 RayClusters."
)


@dataclass(frozen=True)
class Discovery:
    """What the API server serves of the APIs jupyter_dw uses.

    ``kueue_version`` is the preferred served version that has LocalQueues (v1beta2 before
    v1beta1), None without Kueue. ``cohort_version`` is where Cohort objects are served (None
    without hierarchical cohorts). ``visibility_version`` is the Kueue visibility API version
    (None when not registered). ``ray_version`` is ``v1`` when RayClusters are served.
    """

    kueue_served: tuple[str, ...] = ()
    kueue_version: str | None = None
    kueue_resources: frozenset[str] = field(default_factory=frozenset)
    cohort_version: str | None = None
    visibility_version: str | None = None
    ray_version: str | None = None
    kinds_served: frozenset[str] = frozenset()
    """The plurals of the workload kinds served (``rayjobs``: KubeRay's RayJob CRD is
    installed; ``trainjobs``: Kubeflow Trainer's TrainJob CRD)."""
    ray_auth_options: bool | None = None
    """Whether the RayCluster schema has ``spec.authOptions`` (KubeRay 1.6 and newer), read from
    the API server's OpenAPI v3 document of ``ray.io/v1``; None when it cannot be told."""

    @property
    def kueue_installed(self) -> bool:
        """True when LocalQueues are served at a version jupyter_dw reads."""
        return self.kueue_version is not None

    @property
    def kuberay_installed(self) -> bool:
        """True when ``ray.io/v1`` RayClusters are served."""
        return self.ray_version is not None

    def kueue(self, kind: ResourceKind) -> Resource | None:
        """``kind`` at the chosen Kueue version (Cohorts at theirs), None if not served."""
        if kind == COHORT:
            return kind.at(self.cohort_version) if self.cohort_version else None
        if self.kueue_version is None or kind.plural not in self.kueue_resources:
            return None
        return kind.at(self.kueue_version)

    def require_kueue(self) -> str:
        """The Kueue version in use, or raise ``NotInstalled("Kueue ...")``."""
        if self.kueue_version is None:
            served = ", ".join(self.kueue_served) or "none"
            raise NotInstalled(
                "Kueue",
                f"the API server serves no LocalQueues in {KUEUE_GROUP} "
                f"(served versions: {served}; jupyter_dw reads {', '.join(KUEUE_VERSIONS)})",
                KUEUE_HINT,
                code="kueue_not_installed",
            )
        return self.kueue_version

    def require_kuberay(self) -> Resource:
        """The RayCluster resource, or raise ``NotInstalled("KubeRay ...")``."""
        if self.ray_version is None:
            raise NotInstalled(
                "KubeRay",
                f"the API server serves no rayclusters in {RAY_GROUP}/v1",
                KUBERAY_HINT,
                code="kuberay_not_installed",
            )
        return RAY_CLUSTER

    def serves(self, kind: JobKind[Any, Any]) -> bool:
        """Whether the workload kind ``kind`` is served (its CRD is installed)."""
        return kind.plural in self.kinds_served

    def require(self, kind: JobKind[Any, Any]) -> Resource:
        """The resource of workload kind ``kind``, or raise ``NotInstalled``."""
        if kind.group == RAY_GROUP:
            # KubeRay's CRDs come with its operator: without RayClusters it is the operator
            # that is missing, which is the answer to give.
            self.require_kuberay()
        resource = kind_resource(kind)
        if not self.serves(kind):
            raise NotInstalled(
                kind.install.what,
                f"the API server serves no {kind.plural} in {kind.group}/{kind.version}",
                kind.install.hint,
                code=kind.install.code,
            )
        return resource

    def loses(self, new: Discovery) -> bool:
        """Whether ``new`` serves less of what this discovery served (an API uninstalled,
        or an API server that has just started and not yet published its CRDs' groups)."""
        return bool(
            self.kueue_resources - new.kueue_resources
            or self.kinds_served - new.kinds_served
            or any(
                getattr(self, name) and not getattr(new, name)
                for name in (
                    "kueue_version",
                    "cohort_version",
                    "visibility_version",
                    "ray_version",
                )
            )
        )

    def to_json(self) -> dict[str, Any]:
        """The ``kueue``, ``kuberay`` and ``trainer`` parts of ``GET context``."""
        return {
            "kueue": {
                "installed": self.kueue_installed,
                "api_version": self.kueue_version,
                "served_versions": list(self.kueue_served),
                "cohorts": self.cohort_version is not None,
                "cohort_api_version": self.cohort_version,
                "visibility_api_version": self.visibility_version,
            },
            "kuberay": {
                "installed": self.kuberay_installed,
                "api_version": self.ray_version,
                "auth_options": self.ray_auth_options,
                "rayjobs": self.serves(RAYJOB),
            },
            "trainer": {
                "installed": self.serves(TRAINJOB),
                "api_version": TRAINJOB.version if self.serves(TRAINJOB) else None,
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Discovery:
        """What :meth:`to_json` made (its ``kueue``, ``kuberay`` and ``trainer`` parts).
        ``kueue_resources``, which Kueue kinds are served, is not in it: a client reading
        through a server asks the server, not Kubernetes, and never needs it."""
        kueue = decode_key(Mapping[str, Any], data, "kueue")
        kuberay = decode_key(Mapping[str, Any], data, "kuberay")
        trainer = decode_key(Mapping[str, Any], data, "trainer")
        served = {RAYJOB.plural: kuberay.get("rayjobs"), TRAINJOB.plural: trainer.get("installed")}
        return cls(
            kueue_served=decode_key(tuple[str, ...], kueue, "served_versions"),
            kueue_version=decode_key(str | None, kueue, "api_version"),
            cohort_version=decode_key(str | None, kueue, "cohort_api_version"),
            visibility_version=decode_key(str | None, kueue, "visibility_api_version"),
            ray_version=decode_key(str | None, kuberay, "api_version"),
            kinds_served=frozenset(plural for plural, yes in served.items() if yes is True),
            ray_auth_options=decode_key(bool | None, kuberay, "auth_options"),
        )


AGGREGATED_DISCOVERY = ",".join(
    (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        "application/json",
    )
)
"""The Accept header asking ``/apis`` for aggregated discovery: every group, version and
resource in one answer (``apidiscovery.k8s.io/v2`` from Kubernetes 1.30, ``v2beta1`` on
1.26-1.29); an older server ignores the media type parameters and answers the plain
``APIGroupList``, so the caller then asks each group version as before."""
_AGGREGATED_VERSIONS = ("apidiscovery.k8s.io/v2", "apidiscovery.k8s.io/v2beta1")


class _Served:
    """What ``/apis`` serves: each group's versions (preferred first) and a version's
    top-level resources, from one aggregated answer or one GET per group version."""

    def __init__(self, api: KubeApi, aggregated: bool = True) -> None:
        self._api = api
        answer = api.get("/apis", accept=AGGREGATED_DISCOVERY if aggregated else "application/json")
        self.aggregated = (
            answer.get("kind") == "APIGroupDiscoveryList"
            and answer.get("apiVersion") in _AGGREGATED_VERSIONS
        )
        self._versions: dict[str, list[str]] = {}
        self._resources: dict[tuple[str, str], frozenset[str]] = {}
        if self.aggregated:
            for group in answer.get("items") or []:
                name = str((group.get("metadata") or {}).get("name") or "")
                versions = [v for v in group.get("versions") or [] if v.get("version")]
                self._versions[name] = [str(v["version"]) for v in versions]
                for version in versions:
                    # Subresources (localqueues/status) are nested in their resource here.
                    self._resources[name, str(version["version"])] = frozenset(
                        str(r["resource"])
                        for r in version.get("resources") or []
                        if r.get("resource")
                    )
        else:
            for group in answer.get("groups") or []:
                self._versions[str(group.get("name"))] = _versions(group)

    def versions(self, group: str) -> list[str]:
        return self._versions.get(group, [])

    def resources(self, group: str, version: str) -> frozenset[str]:
        if not self.aggregated and (group, version) not in self._resources:
            # One GET per group version, however many kinds it holds.
            self._resources[group, version] = _resources(self._api, group, version)
        return self._resources.get((group, version), frozenset())


def discover(api: KubeApi, *, aggregated: bool = True) -> Discovery:
    """Ask the API server which of our APIs it serves: one aggregated discovery GET where the
    server offers it (else one GET per group version we read), and the RayCluster schema's
    OpenAPI index. ``aggregated`` False asks the old way even where aggregated discovery is
    served (to compare both)."""
    served = _Served(api, aggregated)
    kueue_served = served.versions(KUEUE_GROUP)
    kueue_version, kueue_resources = None, frozenset[str]()
    cohort_version = None
    resources_by_version: dict[str, frozenset[str]] = {}
    for version in kueue_served:
        resources_by_version[version] = served.resources(KUEUE_GROUP, version)
    for version in KUEUE_VERSIONS:
        if LOCAL_QUEUE.plural in resources_by_version.get(version, ()):
            kueue_version, kueue_resources = version, resources_by_version[version]
            break
    for version in COHORT_VERSIONS:
        if COHORT.plural in resources_by_version.get(version, ()):
            cohort_version = version
            break
    visibility_served = served.versions(VISIBILITY_GROUP)
    visibility = next((v for v in VISIBILITY_VERSIONS if v in visibility_served), None)
    ray_version = None
    ray_resources = frozenset[str]()
    if RAY_CLUSTER.version in served.versions(RAY_GROUP):
        ray_resources = served.resources(RAY_GROUP, RAY_CLUSTER.version)
        if RAY_CLUSTER.plural in ray_resources:
            ray_version = RAY_CLUSTER.version
    ray_auth_options = ray_auth_options_served(api) if ray_version else None
    kinds_served = frozenset(
        kind.plural
        for kind, _ in JOB_RESOURCES
        if kind.version in served.versions(kind.group)
        and kind.plural in served.resources(kind.group, kind.version)
        # KubeRay's kinds only with the operator's RayClusters (see Discovery.require).
        and (kind.group != RAY_GROUP or ray_version is not None)
    )
    return Discovery(
        kueue_served=tuple(kueue_served),
        kueue_version=kueue_version,
        kueue_resources=kueue_resources,
        cohort_version=cohort_version,
        visibility_version=visibility,
        ray_version=ray_version,
        kinds_served=kinds_served,
        ray_auth_options=ray_auth_options,
    )


RAY_OPENAPI_PATH = f"apis/{RAY_GROUP}/{RAY_CLUSTER.version}"
"""The key of ``ray.io/v1`` in the API server's OpenAPI v3 index (``GET /openapi/v3``)."""
_SCHEMA_ANSWERS: dict[str, bool | None] = {}
"""Answers by the document's hashed URL: the hash is of its content, so a re-check costs only
the small index until the CRD changes."""
_SCHEMA_LOCK = threading.Lock()


def ray_auth_options_served(api: KubeApi) -> bool | None:
    """Whether the served RayCluster schema has ``spec.authOptions``, from the OpenAPI v3
    document of ``ray.io/v1`` (readable by every authenticated identity, like discovery: no
    CRD read permission needed). None when the API server publishes no such document or it
    cannot be read."""
    try:
        index = api.get("/openapi/v3")
        entry = (index.get("paths") or {}).get(RAY_OPENAPI_PATH) or {}
        url = str(entry.get("serverRelativeURL") or "")
        if not url.startswith("/openapi/v3/"):
            return None
        with _SCHEMA_LOCK:
            if url in _SCHEMA_ANSWERS:
                return _SCHEMA_ANSWERS[url]
        parts = urlsplit(url)
        document = api.get(parts.path, parse_qsl(parts.query))
    except KubeError as err:
        log.info("jupyter_dw: cannot read the RayCluster schema (OpenAPI v3): %s", err)
        return None
    answer = _has_auth_options(document)
    with _SCHEMA_LOCK:
        _SCHEMA_ANSWERS[url] = answer
    return answer


def _has_auth_options(document: dict[str, Any]) -> bool | None:
    for schema in ((document.get("components") or {}).get("schemas") or {}).values():
        kinds = schema.get("x-kubernetes-group-version-kind") or []
        if not any(
            k.get("group") == RAY_GROUP and k.get("kind") == RAY_CLUSTER.kind
            and k.get("version") == RAY_CLUSTER.version
            for k in kinds
        ):  # fmt: skip
            continue
        spec = ((schema.get("properties") or {}).get("spec")) or {}
        return "authOptions" in (spec.get("properties") or {})
    return None


def _versions(group: dict[str, Any] | None) -> list[str]:
    if not group:
        return []
    return [str(v.get("version")) for v in group.get("versions") or [] if v.get("version")]


def _resources(api: KubeApi, group: str, version: str) -> frozenset[str]:
    try:
        listing = api.get(f"/apis/{group}/{version}")
    except KubeError as err:
        # Listed in /apis but gone by now (a CRD being removed): it serves nothing.
        if getattr(err, "api_status", None) == 404:
            return frozenset()
        raise
    return frozenset(
        str(r["name"])
        for r in listing.get("resources") or []
        if "/" not in str(r.get("name", ""))  # skip subresources such as localqueues/status
    )
