"""Objects the test bed installs: CRDs, webhooks and the visibility APIService of Kueue,
KubeRay's CRDs, Kubeflow Trainer's and JobSet's CRDs, webhooks and configuration, the PyTorch
ClusterTrainingRuntime, KWOK's stages, usage and metrics configuration and fake nodes,
metrics-server's RBAC and APIService.

Everything is read from the Go module cache of the pinned versions and adapted for processes
on 127.0.0.1: webhook ``service`` references become ``url`` references with our CA bundle.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from .versions import Versions

# Only webhooks for these API groups are registered: Kueue serves many integrations, and a
# webhook whose CRD is absent (or that intercepts core pods) only adds ways to fail.
_WEBHOOK_GROUPS = {"kueue.x-k8s.io", "ray.io", "batch"}
TRAINER_GROUP = "trainer.kubeflow.org"
JOBSET_GROUP = "jobset.x-k8s.io"
TRAINJOB_FRAMEWORK = "trainer.kubeflow.org/trainjob"
TORCH_RUNTIME = "torch-distributed"
"""The test bed's one ClusterTrainingRuntime (PyTorch), named as Trainer's own manifests do."""
POD_COMPLETE_DELAY_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"
"""KWOK's annotation for how long a Job's pod runs before it completes (KWOK's 'general'
pod-complete stage reads it; the test bed adds the same delay to the 'fast' stage it uses)."""
TRAINING_POD_RUNS_FOR = "20s"
"""How long the PyTorch runtime's pods run on KWOK: "running" is observable, then completion."""
KUEUE_NAMESPACE = "kueue-system"
FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
USAGE_CPU_ANNOTATION = "kwok.x-k8s.io/usage-cpu"
USAGE_MEMORY_ANNOTATION = "kwok.x-k8s.io/usage-memory"
"""A KWOK pod's CPU and memory usage per container (quantities), as metrics.k8s.io reports
them: KWOK's own ``usage-from-annotation`` ClusterResourceUsage reads them (default 1m, 1Mi)."""
RESOURCE_METRICS_PATH_ANNOTATION = "metrics.k8s.io/resource-metrics-path"
"""Where metrics-server scrapes a node's resource metrics instead of ``/metrics/resource``."""
METRICS_SERVER_USER = "metrics-server"
"""The user metrics-server authenticates as (its client certificate's common name)."""
METRICS_SERVER_NAMESPACE = "kube-system"


# libyaml's loader: the CRDs are megabytes of YAML, ten times slower to parse in pure Python.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load(path: Path) -> Any:
    return yaml.load(path.read_text(), Loader=_Loader)


def _load_all(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.load_all(path.read_text(), Loader=_Loader) if doc]


def _ca_bundle(ca_pem: bytes) -> str:
    return base64.b64encode(ca_pem).decode()


def kueue_crds(versions: Versions, webhook_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """Kueue's CRDs, with the conversion webhook Kueue's own kustomization enables."""
    crd_dir = versions.source("kueue") / "config" / "components" / "crd"
    kustomization = _load(crd_dir / "kustomization.yaml")
    converted = set()
    for patch in kustomization.get("patches") or []:
        for doc in _load_all(crd_dir / patch["path"]):
            if doc.get("spec", {}).get("conversion", {}).get("strategy") == "Webhook":
                converted.add(doc["metadata"]["name"])
    crds = []
    for resource in kustomization["resources"]:
        crd = _load(crd_dir / resource)
        if crd["metadata"]["name"] in converted:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {
                        "url": f"{webhook_url}/convert",
                        "caBundle": _ca_bundle(ca_pem),
                    },
                    "conversionReviewVersions": ["v1"],
                },
            }
        crds.append(crd)
    return crds


def kueue_webhooks(versions: Versions, webhook_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """Kueue's mutating and validating webhooks for our API groups, reached by URL."""
    manifests = versions.source("kueue") / "config" / "components" / "webhook" / "manifests.yaml"
    configs = []
    for doc in _load_all(manifests):
        hooks = []
        for hook in doc["webhooks"]:
            groups = {g for rule in hook.get("rules", []) for g in rule.get("apiGroups", [])}
            wanted = _WEBHOOK_GROUPS | ({TRAINER_GROUP} if versions.trainjobs else set())
            if not groups or not groups <= wanted:
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": webhook_url + path, "caBundle": _ca_bundle(ca_pem)}
            hooks.append(hook)
        doc["metadata"]["name"] = "kueue-" + doc["metadata"]["name"]
        doc["webhooks"] = hooks
        configs.append(doc)
    return configs


def kueue_visibility(versions: Versions, port: int) -> list[dict[str, Any]]:
    """The visibility APIService(s), backed by an ExternalName Service that points at localhost."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kueue-visibility-server", "namespace": KUEUE_NAMESPACE},
            "spec": {
                "type": "ExternalName",
                "externalName": "localhost",
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            },
        },
    ]
    api_versions = ["v1beta1", "v1beta2"] if versions.kueue_serves_v1beta2 else ["v1beta1"]
    for api_version in api_versions:
        objects.append(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": f"{api_version}.visibility.kueue.x-k8s.io"},
                "spec": {
                    "group": "visibility.kueue.x-k8s.io",
                    "version": api_version,
                    "groupPriorityMinimum": 100,
                    "versionPriority": 100,
                    # Kueue serves a self-signed certificate (as in its own manifests).
                    "insecureSkipTLSVerify": True,
                    "service": {
                        "name": "kueue-visibility-server",
                        "namespace": KUEUE_NAMESPACE,
                        "port": port,
                    },
                },
            }
        )
    return objects


def kueue_config(
    versions: Versions,
    *,
    webhook_port: int,
    cert_dir: Path,
    health_port: int,
    visibility_port: int,
) -> dict[str, Any]:
    """Kueue's manager configuration for a process on loopback with certificates we provide."""
    cfg: dict[str, Any] = {
        "apiVersion": (
            "config.kueue.x-k8s.io/v1beta2"
            if versions.kueue_serves_v1beta2
            else "config.kueue.x-k8s.io/v1beta1"
        ),
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        # "0" turns the metrics endpoint off: nothing here scrapes it.
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "manageJobsWithoutQueueName": False,
        "integrations": {
            "frameworks": [
                "batch/job",
                "ray.io/raycluster",
                "ray.io/rayjob",
                # Only where Trainer's and JobSet's CRDs are installed (Kueue's TrainJob
                # reconciler reads the runtimes at start-up).
                *([TRAINJOB_FRAMEWORK] if versions.trainjobs else []),
            ]
        },
    }
    if versions.kueue_serves_v1beta2:
        cfg["visibilityServer"] = {"bindPort": visibility_port, "bindAddress": "127.0.0.1"}
    else:
        # Elastic RayClusters (workload slices) are alpha and off in Kueue 0.14; beta and on by
        # default since 0.18. The legacy test bed turns the gate on, as an OpenShift AI
        # administrator on 0.14 would to let clusters autoscale.
        cfg["featureGates"] = {"ElasticJobsViaWorkloadSlices": True}
    return cfg


def provisioning_request_crd(versions: Versions) -> dict[str, Any]:
    """The cluster autoscaler's ProvisioningRequest CRD (``autoscaling.x-k8s.io``) at the version
    the pinned Kueue requires. Kueue starts its ProvisioningRequest admission-check controller
    only if this CRD is served when it starts."""
    crd_dir = versions.source("autoscaler-apis") / "config" / "crd"
    return _load(crd_dir / "autoscaling.x-k8s.io_provisioningrequests.yaml")


def kuberay_crds(versions: Versions) -> list[dict[str, Any]]:
    """KubeRay's CRDs (RayCluster, RayJob, RayService, RayCronJob where present)."""
    bases = versions.source("kuberay") / "config" / "crd" / "bases"
    return [_load(path) for path in sorted(bases.glob("ray.io_*.yaml"))]


def kwok_stages(versions: Versions) -> str:
    """KWOK's 'fast' node and pod lifecycle stages, as one multi-document YAML.

    The fast ``pod-complete`` stage (a Job's running pod succeeds) gets the delay KWOK's
    'general' stage reads from :data:`POD_COMPLETE_DELAY_ANNOTATION`, default none: a pod
    without the annotation completes at once, as before."""
    stage_dir = versions.source("kwok") / "kustomize" / "stage"
    files = [
        stage_dir / "node" / "fast" / "node-initialize.yaml",
        stage_dir / "node" / "heartbeat" / "node-heartbeat.yaml",
        *sorted((stage_dir / "pod" / "fast").glob("pod-*.yaml")),
    ]
    documents = []
    for path in files:
        stage = _load(path)
        if stage["metadata"]["name"] == "pod-complete":
            stage["spec"]["delay"] = {
                "durationMilliseconds": 0,
                "durationFrom": {
                    "expressionFrom": f'.metadata.annotations["{POD_COMPLETE_DELAY_ANNOTATION}"]'
                },
            }
        documents.append(yaml.safe_dump(stage, sort_keys=False))
    return "\n---\n".join(documents)


def kwok_metrics(versions: Versions) -> str:
    """KWOK's emulated kubelet resource metrics (its ``Metric`` at
    ``/metrics/nodes/{nodeName}/metrics/resource``) and pod usage from the
    :data:`USAGE_CPU_ANNOTATION` and :data:`USAGE_MEMORY_ANNOTATION` annotations (its
    ``ClusterResourceUsage``), as one multi-document YAML: kwokctl's own metrics set-up."""
    metrics_dir = versions.source("kwok") / "kustomize" / "metrics"
    files = [
        metrics_dir / "resource" / "metrics-resource.yaml",
        metrics_dir / "usage" / "usage-from-annotation.yaml",
    ]
    text = "\n---\n".join(yaml.safe_dump(_load(path), sort_keys=False) for path in files)
    # The names the tests annotate pods with are KWOK's, read here from its own configuration.
    assert USAGE_CPU_ANNOTATION in text and USAGE_MEMORY_ANNOTATION in text, "KWOK renamed them"
    return text


def metrics_server(versions: Versions, port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    """metrics-server's own RBAC (bound to the user :data:`METRICS_SERVER_USER` instead of its
    ServiceAccount: it runs out of cluster with a client certificate) and its
    ``v1beta1.metrics.k8s.io`` APIService, backed by an ExternalName Service that points at
    localhost, verified with our CA (metrics-server serves a certificate of ours)."""
    base = versions.source("metrics-server") / "manifests" / "base"
    objects: list[dict[str, Any]] = []
    for doc in _load_all(base / "rbac.yaml"):
        if doc["kind"] == "ServiceAccount":
            continue
        for subject in doc.get("subjects", []):
            assert subject["kind"] == "ServiceAccount", subject
            subject.clear()
            subject.update(
                {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "User",
                    "name": METRICS_SERVER_USER,
                }
            )
        objects.append(doc)
    service = _load(base / "service.yaml")
    service["spec"] = {
        "type": "ExternalName",
        "externalName": "localhost",
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }
    objects.append(service)
    api_service = _load(base / "apiservice.yaml")
    api_service["spec"].pop("insecureSkipTLSVerify")
    api_service["spec"]["caBundle"] = _ca_bundle(ca_pem)
    api_service["spec"]["service"]["port"] = port
    objects.append(api_service)
    return objects


def trainer_crds(versions: Versions) -> list[dict[str, Any]]:
    """Kubeflow Trainer's CRDs: TrainJob, TrainingRuntime, ClusterTrainingRuntime."""
    crd_dir = versions.source("trainer") / "manifests" / "base" / "crds"
    return [_load(crd_dir / name) for name in _load(crd_dir / "kustomization.yaml")["resources"]]


def jobset_crds(versions: Versions) -> list[dict[str, Any]]:
    """JobSet's CRD. It serves one version (v1alpha2), so its conversion webhook is left out."""
    crd_dir = versions.source("jobset") / "config" / "components" / "crd"
    return [_load(crd_dir / name) for name in _load(crd_dir / "kustomization.yaml")["resources"]]


def _by_url(
    manifests: Path, prefix: str, group: str, webhook_url: str, ca_pem: bytes
) -> list[dict[str, Any]]:
    """The webhooks in ``manifests`` for API ``group`` only (JobSet's pod webhooks, which
    would see every pod of the cluster, are left out), reached by URL."""
    configs = []
    for doc in _load_all(manifests):
        hooks = []
        for hook in doc["webhooks"]:
            groups = {g for rule in hook.get("rules", []) for g in rule.get("apiGroups", [])}
            if groups != {group}:
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": webhook_url + path, "caBundle": _ca_bundle(ca_pem)}
            hooks.append(hook)
        doc["metadata"]["name"] = f"{prefix}-{doc['metadata']['name']}"
        doc["webhooks"] = hooks
        configs.append(doc)
    return configs


def trainer_webhooks(versions: Versions, webhook_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """Trainer's defaulting and validating webhooks (TrainJobs and runtimes), by URL."""
    manifests = versions.source("trainer") / "manifests" / "base" / "webhook" / "manifests.yaml"
    return _by_url(manifests, "trainer", TRAINER_GROUP, webhook_url, ca_pem)


def jobset_webhooks(versions: Versions, webhook_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """JobSet's defaulting and validating webhooks for JobSets, by URL."""
    manifests = versions.source("jobset") / "config" / "components" / "webhook" / "manifests.yaml"
    return _by_url(manifests, "jobset", JOBSET_GROUP, webhook_url, ca_pem)


def trainer_config(*, webhook_port: int, health_port: int) -> dict[str, Any]:
    """Trainer's manager configuration on loopback: its own certificate management off (the
    webhook serves ours from ``$TMPDIR/k8s-webhook-server/serving-certs``), metrics off."""
    return {
        "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
        "kind": "Configuration",
        "health": {
            "healthProbeBindAddress": f"127.0.0.1:{health_port}",
            "readinessEndpointName": "readyz",
            "livenessEndpointName": "healthz",
        },
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": webhook_port, "host": "127.0.0.1"},
        "leaderElection": {"leaderElect": False},
        "certManagement": {"enable": False},
    }


def jobset_config(*, webhook_port: int, health_port: int, cert_dir: Path) -> dict[str, Any]:
    """JobSet's manager configuration on loopback with our certificates, metrics off."""
    return {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
    }


def torch_runtime(versions: Versions) -> dict[str, Any]:
    """Trainer's own ``torch-distributed`` ClusterTrainingRuntime, its pods annotated to run
    for :data:`TRAINING_POD_RUNS_FOR` on KWOK before they complete."""
    path = versions.source("trainer") / "manifests" / "base" / "runtimes" / "torch_distributed.yaml"
    runtime = _load(path)
    assert runtime["metadata"]["name"] == TORCH_RUNTIME, runtime["metadata"]
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = job["template"]["spec"]["template"]
        pod.setdefault("metadata", {}).setdefault("annotations", {})[
            POD_COMPLETE_DELAY_ANNOTATION
        ] = TRAINING_POD_RUNS_FOR
    return runtime


def fake_node(name: str, *, cpu: str, memory: str, gpus: int) -> dict[str, Any]:
    """A KWOK-managed node with CPU, memory and ``nvidia.com/gpu`` capacity, its resource
    metrics served by KWOK (which gives it the InternalIP 127.0.0.1 and its own port as the
    kubelet's: metrics-server scrapes it there)."""
    capacity = {"cpu": cpu, "memory": memory, "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {
                FAKE_NODE_ANNOTATION: "fake",
                RESOURCE_METRICS_PATH_ANNOTATION: f"/metrics/nodes/{name}/metrics/resource",
            },
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                "nvidia.com/gpu.product": "Fake-GPU" if gpus else "none",
            },
        },
        "status": {"capacity": capacity, "allocatable": capacity},
    }
