"""Every label, annotation, port, API group and kind name jupyter_dw uses, spelled once.

Kueue's and KubeRay's names are theirs (checked against Kueue v0.19.2 and KubeRay v1.6.2);
the ``jupyter-dw/`` ones are ours. Everything else imports them from here, so a rename is one
edit and a reader finds every contract with another controller in one place.
"""

from __future__ import annotations

# -- API groups and versions ---------------------------------------------------------------

KUEUE_GROUP = "kueue.x-k8s.io"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
RAY_GROUP = "ray.io"
RAY_VERSION = "v1"
RAYCLUSTER_API_VERSION = f"{RAY_GROUP}/{RAY_VERSION}"
TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"
"""Kubeflow Trainer v2's API (TrainJob, ClusterTrainingRuntime, TrainingRuntime), checked
against Trainer v2.2.1, the version Kueue v0.19.2 integrates."""

# -- kinds ---------------------------------------------------------------------------------

RAYCLUSTER_KIND = "RayCluster"
RAYJOB_KIND = "RayJob"
TRAINJOB_KIND = "TrainJob"
CLUSTER_TRAINING_RUNTIME_KIND = "ClusterTrainingRuntime"
TRAINING_RUNTIME_KIND = "TrainingRuntime"
WORKLOAD_KIND = "Workload"
LOCAL_QUEUE_KIND = "LocalQueue"
CLUSTER_QUEUE_KIND = "ClusterQueue"
COHORT_KIND = "Cohort"
RESOURCE_FLAVOR_KIND = "ResourceFlavor"
WORKLOAD_PRIORITY_CLASS_KIND = "WorkloadPriorityClass"
ADMISSION_CHECK_KIND = "AdmissionCheck"
MULTIKUEUE_CONFIG_KIND = "MultiKueueConfig"
MULTIKUEUE_CLUSTER_KIND = "MultiKueueCluster"
POD_KIND = "Pod"

MULTIKUEUE_CONTROLLER = f"{KUEUE_GROUP}/multikueue"
"""The ``controllerName`` of an AdmissionCheck run by MultiKueue (the manager's Kueue copies the
Workload to worker clusters and the first to admit it runs the job); also the
``spec.managedBy`` of a job it dispatches, which the manager's own controllers then leave
alone."""

# -- Kueue's labels and annotations ---------------------------------------------------------

QUEUE_LABEL = f"{KUEUE_GROUP}/queue-name"
"""Sends a job (a RayCluster here) to a LocalQueue of its namespace."""
JOB_UID_LABEL = f"{KUEUE_GROUP}/job-uid"
"""Kueue puts it on a Workload: the ``metadata.uid`` of the job it was made for."""
PRIORITY_CLASS_LABEL = f"{KUEUE_GROUP}/priority-class"
"""Chooses a WorkloadPriorityClass for a job."""
ELASTIC_JOB_ANNOTATION = f"{KUEUE_GROUP}/elastic-job"
"""Marks a job whose size may change after admission (ElasticJobsViaWorkloadSlices)."""
ELASTIC_JOB_SCHEDULING_GATE = f"{KUEUE_GROUP}/elastic-job"
"""The scheduling gate Kueue's webhook puts on an elastic job's pod templates (only with the
feature gate ElasticJobsViaWorkloadSlices on); Kueue lifts it on pods its admission covers."""
ELASTIC_PROBE_PREFIX = "jupyter-dw-elastic-probe-"
"""The name of the RayCluster the elastic-jobs probe dry-runs (a random suffix follows): an
audit log tells the probe from a create's own dry run by it."""
WORKLOAD_SLICE_REPLACEMENT_ANNOTATION = f"{KUEUE_GROUP}/workload-slice-replacement-for"
"""On a Workload slice made by a scale-up: ``<namespace>/<name>`` of the slice it replaces."""
WORKLOAD_SLICE_REPLACED_REASON = "WorkloadSliceReplaced"
"""The ``Finished`` reason of a slice replaced by a newer admitted one."""
DEFAULT_QUEUE_ANNOTATION = f"{KUEUE_GROUP}/default-queue"
"""OpenShift AI / CodeFlare convention: the LocalQueue annotated ``"true"`` is the default."""
DEFAULT_QUEUE_NAME = "default"
"""Upstream Kueue convention (``LocalQueueDefaulting``): a LocalQueue named ``default``."""
KUEUE_MUTATING_RAYCLUSTER_WEBHOOK = "mraycluster.kb.io"
"""Kueue's mutating webhook for RayClusters (``failurePolicy: Fail``): KubeRay has none of
this name, so a failed call to it means Kueue's webhook server is down."""
KUEUE_VALIDATING_RAYCLUSTER_WEBHOOK = "vraycluster.kb.io"
"""Kueue's validating webhook for RayClusters; KubeRay's own validating webhook has the same
name, so on its own it does not tell whose server is down."""

# -- KubeRay's labels, ports and names -----------------------------------------------------

RAY_CLUSTER_LABEL = f"{RAY_GROUP}/cluster"
"""KubeRay puts it on every pod and Service of a RayCluster: the cluster's name."""
RAY_NODE_TYPE_LABEL = f"{RAY_GROUP}/node-type"
"""KubeRay puts it on a RayCluster's pods: ``head`` or ``worker``."""
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
"""JobSet puts it on every pod of a JobSet: the JobSet's name, which Kubeflow Trainer gives the
JobSet of a TrainJob (the TrainJob's name)."""
GCS_PORT = 6379
DASHBOARD_PORT = 8265
CLIENT_PORT = 10001
"""Ray Client (``ray://``), what ``ray.init`` connects to from outside the cluster."""
HEAD_PORTS: tuple[tuple[str, int], ...] = (
    ("gcs-server", GCS_PORT),
    ("dashboard", DASHBOARD_PORT),
    ("client", CLIENT_PORT),
)
"""KubeRay's own port names: it looks ports up by these names when it builds the head Service."""
HEAD_SERVICE_SUFFIX = "-head-svc"
"""KubeRay names a cluster's head Service ``<cluster>-head-svc``."""
AUTOSCALER_CONTAINER_NAME = "autoscaler"
"""The Ray autoscaler sidecar KubeRay adds to the head pod of an autoscaling cluster (Kueue
0.19 counts it in the head pod set under this name)."""
GPU_RESOURCE = "nvidia.com/gpu"

# -- ours -----------------------------------------------------------------------------------

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "jupyter-dw"
# Not app.kubernetes.io/created-by: KubeRay already puts that key (value kuberay-operator) on
# the pods and Services it makes, so it would mean two different things.
OWNER_LABEL = "jupyter-dw/owner"
OWNER_ANNOTATION = "jupyter-dw/owner"
IDEMPOTENCY_KEY_ANNOTATION = "jupyter-dw/idempotency-key"
"""The idempotency key of the create request that made a RayCluster: a retried create with the
same key answers with this cluster instead of making a second one or failing with 409."""
AUTOSCALING_MIN_ANNOTATION = "jupyter-dw/autoscaling-min-workers"
"""While a person has pinned an elastic cluster's size (``minReplicas`` raised to N, and
``replicas`` set to N, which the autoscaler may raise later): the ``minReplicas`` of its own
range, given back when the pin is released."""
REQUEST_DIGEST_ANNOTATION = "jupyter-dw/request-digest"
"""SHA-256 of the create request an idempotency key was first sent with."""
STOPPED_BY_ANNOTATION = "jupyter-dw/stopped-by"
"""On a stopped RayCluster: the identity that stopped it (the workbench's Kubernetes user)."""
STOPPED_AT_ANNOTATION = "jupyter-dw/stopped-at"
"""On a stopped RayCluster: when it was stopped (RFC 3339, UTC)."""
STOP_REASON_ANNOTATION = "jupyter-dw/stop-reason"
"""On a stopped RayCluster: why, a JSON object whose ``by`` says what decided (``person``; an
idle rule writes ``idle-rule`` with its figures, e.g. ``idle_seconds`` and ``waiting``)."""


def qualified(name: str, group: str) -> str:
    """``name.group``, as Kubernetes names a resource or a kind with its API group
    (``rayclusters.ray.io``, ``Job.batch``); ``name`` alone in the core group ``""``."""
    return f"{name}.{group}" if group else name


def head_service_name(cluster: str) -> str:
    """KubeRay's default name of a cluster's head Service."""
    return f"{cluster}{HEAD_SERVICE_SUFFIX}"


# -- kernels reading through their Jupyter server (jupyter_dw.server.kernel_link) -------------
KERNEL_LINK_ENV = "JUPYTER_DW_SERVER_LINK"
"""Set by the server extension in its own environment, so every kernel it starts inherits it:
the path of the file with the server's loopback URL and its kernel secret."""
KERNEL_AUTH_SCHEME = "DW-Kernel"
"""``Authorization: DW-Kernel <secret>``: a kernel of this server (jupyter_dw's API only)."""
