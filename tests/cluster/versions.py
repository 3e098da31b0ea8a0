"""Pinned component versions and where their binaries and manifests live."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
AUTOSCALER_APIS = "k8s.io/autoscaler/cluster-autoscaler/apis"
"""The Go module with the ProvisioningRequest CRD (``config/crd/``)."""


def _versions_env() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def _kubernetes_version() -> str:
    match = re.search(
        r"^require k8s\.io/kubernetes (v\S+)$",
        (HERE / "go" / "kubernetes" / "go.mod").read_text(),
        re.MULTILINE,
    )
    if match is None:
        raise RuntimeError("tests/cluster/go/kubernetes/go.mod does not require k8s.io/kubernetes")
    return match[1]


@cache
def _go_env(name: str) -> str:
    return subprocess.run(
        ["go", "env", name], check=True, capture_output=True, text=True
    ).stdout.strip()


def cache_dir() -> Path:
    """Where built binaries are kept, outside the repo, shared by later runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jupyter-dw" / "bin"


@dataclass(frozen=True)
class Versions:
    """The component versions one cluster runs."""

    kubernetes: str
    kueue: str
    kuberay: str
    kwok: str
    trainer: str
    jobset: str
    metrics_server: str

    @classmethod
    def selected(cls, kueue: str | None = None) -> Versions:
        """The pinned versions; Kueue from ``kueue``, else ``DW_KUEUE_VERSION``, else pinned.

        ``DW_KUEUE_VERSION=legacy`` selects the pinned v1beta1-only release.
        """
        env = _versions_env()
        wanted = kueue or os.environ.get("DW_KUEUE_VERSION") or env["KUEUE_VERSION"]
        if wanted == "legacy":
            wanted = env["KUEUE_LEGACY_VERSION"]
        return cls(
            kubernetes=_kubernetes_version(),
            kueue=wanted,
            kuberay=env["KUBERAY_VERSION"],
            kwok=env["KWOK_VERSION"],
            trainer=env["TRAINER_VERSION"],
            jobset=env["JOBSET_VERSION"],
            metrics_server=env["METRICS_SERVER_VERSION"],
        )

    @property
    def kueue_is_pinned(self) -> bool:
        """Whether Kueue is the pinned release (not the legacy one or another chosen one)."""
        return self.kueue == _versions_env()["KUEUE_VERSION"]

    def binary(self, component: str) -> Path:
        """Path of a built binary (``kube-apiserver``, ``kueue``, ``ray-operator``, ``kwok``,
        ``trainer-controller-manager``, ``jobset-controller-manager``, ``metrics-server``)."""
        where = {
            "kube-apiserver": f"kubernetes-{self.kubernetes}",
            "kube-controller-manager": f"kubernetes-{self.kubernetes}",
            "kube-scheduler": f"kubernetes-{self.kubernetes}",
            "kueue": f"kueue-{self.kueue}",
            "ray-operator": f"kuberay-{self.kuberay}",
            "kwok": f"kwok-{self.kwok}",
            "trainer-controller-manager": f"trainer-{self.trainer}",
            "jobset-controller-manager": f"jobset-{self.jobset}",
            "metrics-server": f"metrics-server-{self.metrics_server}",
        }[component]
        return cache_dir() / where / component

    def source(self, module: str) -> Path:
        """The Go module cache directory of a pinned module (for CRDs and manifests).

        ``autoscaler-apis`` is the cluster autoscaler's API module (the ProvisioningRequest
        CRD) at the version the pinned Kueue's go.mod requires; build.sh downloads it.
        """
        if module == "autoscaler-apis":
            path, version = AUTOSCALER_APIS, self.kueue_requires(AUTOSCALER_APIS)
        else:
            path, version = {
                "kueue": ("sigs.k8s.io/kueue", self.kueue),
                "kuberay": ("github.com/ray-project/kuberay/ray-operator", self.kuberay),
                "kwok": ("sigs.k8s.io/kwok", self.kwok),
                "trainer": ("github.com/kubeflow/trainer/v2", self.trainer),
                "jobset": ("sigs.k8s.io/jobset", self.jobset),
                "metrics-server": ("sigs.k8s.io/metrics-server", self.metrics_server),
            }[module]
        return Path(_go_env("GOMODCACHE")) / f"{path}@{version}"

    def kueue_requires(self, module: str) -> str:
        """The version of ``module`` the pinned Kueue's go.mod requires."""
        go_mod = (self.source("kueue") / "go.mod").read_text()
        match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", go_mod, re.MULTILINE)
        if match is None:
            raise RuntimeError(f"Kueue {self.kueue}'s go.mod does not require {module}")
        return match[1]

    @property
    def trainjobs(self) -> bool:
        """Whether this bed runs Kubeflow Trainer and JobSet: only beside a Kueue whose TrainJob
        integration is built against the pinned Trainer (0.19.2 requires v2.2.1; 0.14.8
        requires v2.1.0, whose API differs), as build.sh decides."""
        return self.kueue_requires("github.com/kubeflow/trainer/v2") == self.trainer

    @property
    def kueue_serves_v1beta2(self) -> bool:
        """Kueue 0.15 introduced kueue.x-k8s.io/v1beta2; 0.14 serves only v1beta1."""
        major, minor = (int(x) for x in self.kueue.lstrip("v").split(".")[:2])
        return (major, minor) >= (0, 15)
