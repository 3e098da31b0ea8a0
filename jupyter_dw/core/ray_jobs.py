"""Ray jobs on the namespace's clusters, for every surface: list, read, submit, stop, stream.
The head's address and token are found here; no surface ever sees the token
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ..domain.cluster_state import head_ready
from ..domain.ray_auth import RayEndpoint, RayToken, TokenUnavailable, ray_auth_of
from ..domain.ray_endpoints import NoAddress, client_address, dashboard_address
from ..domain.ray_jobs import (
    JobList,
    JobLogs,
    JobStopped,
    RayJob,
    clip_log,
    job_id_error,
    job_list,
    plain_log,
)
from ..domain.usage import RayLoad, ray_load
from ..k8s.session import KubeSession
from ..names import CLIENT_PORT
from ..ray_head.errors import ClusterNotReady, RayAuthRefused, RayError, RayTokenUnavailable
from ..ray_head.jobs_api import RayJobsClient
from .clusters import ClusterService, check_cluster_name
from .errors import InvalidRequest, no_ray_client_on_worker
from .ray_token import ray_token

ENDPOINT_TTL = 5.0
"""Seconds a cluster's address and token are reused before the cluster and its Secret are
read again (the same as the dashboard proxy's)."""
LOAD_CLIENT_KEEP = 600.0
"""Seconds the usage sampler reuses a cluster's address and token (one Secret read per
cluster per 10 minutes, not per sample); a refusal reads them again at once."""
SUBMIT_FIELDS = frozenset({"entrypoint", "runtime_env", "working_dir", "metadata", "submission_id"})


def check_job_id(job_id: Any) -> str:
    """``job_id`` if it can be a Ray job's id in a URL, else :class:`InvalidRequest`."""
    problem = job_id_error(job_id)
    if problem is not None:
        raise InvalidRequest(
            "Invalid Ray job id", problem, "Take the id from the cluster's job list.",
            {"job": problem},
        )  # fmt: skip
    return str(job_id)


class RayJobService:
    """Ray jobs of the session's namespace's clusters (blocking calls, except :meth:`tail`)."""

    def __init__(
        self,
        session: KubeSession,
        clusters: ClusterService,
        dashboard_template: str = "",
        dashboard_port: int = 8265,
        client_template: str = "",
        request_timeout: float = 30.0,
    ) -> None:
        self.session = session
        self.clusters = clusters
        self.dashboard_template = dashboard_template
        self.dashboard_port = dashboard_port
        self.client_template = client_template
        self.request_timeout = request_timeout
        self._lock = threading.Lock()
        self._clients: dict[str, tuple[float, str, RayJobsClient]] = {}

    # -- reaching a head ---------------------------------------------------------------------

    def client(self, name: str, keep: float | None = None) -> RayJobsClient:
        """The Jobs API client of cluster ``name``: its head must be up; one made less than
        ``keep`` seconds ago (default :data:`ENDPOINT_TTL`) for the same cluster is reused.
        Raises ``KubeNotFound``, :class:`ClusterNotReady`, :class:`RayTokenUnavailable`,
        ``KubeForbidden`` (``get secrets``) or :class:`RayError` (no usable address)."""
        check_cluster_name(name)
        return self._client_of(name, self._ready_cluster(name), keep)

    def _client_of(
        self, name: str, raycluster: Mapping[str, Any], keep: float | None
    ) -> RayJobsClient:
        """:meth:`client` for ``raycluster``, a RayCluster whose head is up."""
        uid = str((raycluster.get("metadata") or {}).get("uid") or "")
        with self._lock:
            made, seen_uid, cached = self._clients.get(name, (0.0, "", None))
        keep = ENDPOINT_TTL if keep is None else keep
        if cached is not None and seen_uid == uid and time.monotonic() - made < keep:
            return cached
        # A cluster MultiKueue sent to a worker: the worker's address, or RunsOnWorker.
        on_worker = self.clusters.worker_dashboard_base(dict(raycluster))
        try:
            base = on_worker or dashboard_address(
                self.dashboard_template,
                self.dashboard_port,
                name,
                self.session.namespace,
                raycluster,
            )
        except NoAddress as err:
            raise _no_address(name, err) from None
        # The token Secret of a cluster on a worker is the worker's: its gateway authenticates.
        token = None if on_worker else self.token(raycluster)
        client = RayJobsClient(base, token, name, self.request_timeout)
        now = time.monotonic()
        with self._lock:
            # A client older than any caller keeps one is never used again: without this, a
            # deleted cluster's would stay for good (the soak's clusters come and go).
            self._clients = {
                other: entry for other, entry in self._clients.items() if now - entry[0] < keep
            }
            self._clients[name] = (now, uid, client)
        return client

    @property
    def clients_held(self) -> int:
        """Jobs API clients cached (at most those made within the last ``keep``)."""
        with self._lock:
            return len(self._clients)

    def endpoint(self, name: str) -> RayEndpoint:
        """Where a kernel's own Ray clients (Ray Client, Ray's ``JobSubmissionClient``) reach
        cluster ``name``'s head, and its token. Raises as :meth:`client`."""
        client = self.client(name)
        return RayEndpoint(name, client.base_url, client.token)

    def client_address(self, name: str) -> str:
        """The ``ray://`` address of cluster ``name``'s Ray Client server (head up); a cluster
        on a MultiKueue worker has none here (:class:`RunsOnWorker`)."""
        raycluster = self._ready_cluster(check_cluster_name(name))
        where = self.clusters.placement_of(raycluster)
        if where is not None and where.worker_cluster is not None:
            raise no_ray_client_on_worker(name, where.worker_cluster)
        try:
            return client_address(
                self.client_template, CLIENT_PORT, name, self.session.namespace, raycluster
            )
        except NoAddress as err:
            raise _no_address(name, err) from None

    def token(self, raycluster: Mapping[str, Any]) -> RayToken | None:
        """What the cluster's Ray checks in ``Authorization: Bearer``: the token from its
        Secret, or with Kubernetes-delegated auth this identity's own Kubernetes token (see
        :func:`~jupyter_dw.core.ray_token.ray_token`); None when it has no auth."""
        if not ray_auth_of(raycluster).sends_token:
            return None
        name = str((raycluster.get("metadata") or {}).get("name") or "")
        try:
            return ray_token(self.session, dict(raycluster))
        except TokenUnavailable as err:
            raise RayTokenUnavailable(
                f"The Ray token of cluster {name} cannot be used",
                str(err),
                "The cluster uses Ray token authentication; KubeRay makes its Secret when it "
                "accepts the cluster (check its state). A Secret of that name owned by anything "
                "else is never used: delete it and the cluster to start over.",
            ) from None

    def _ready_cluster(self, name: str) -> dict[str, Any]:
        info = self.clusters.get(name)  # KubeNotFound when there is none
        if not info.snapshot.head_ready:
            raise ClusterNotReady(
                f"The Ray head of cluster {name} is not up yet",
                f"the cluster is {info.state}"
                + (f" ({info.reason}: {info.message})" if info.reason and info.message else ""),
                "Wait until it is ready (h.wait_async() or the sidebar), then try again.",
                info.state,
            )
        raycluster = self.session.cached_ray_cluster(name)
        return dict(raycluster) if raycluster is not None else dict(self.session.ray_cluster(name))

    # -- jobs ----------------------------------------------------------------------------------

    def list(self, name: str) -> JobList:
        """The cluster's submitted jobs, newest first."""
        return job_list(name, self.client(name).list_jobs())

    def load(self, name: str) -> RayLoad:
        """What the cluster's Ray says of its own load: three cheap calls (cluster status,
        jobs, live actors counted). The usage sampler's, every period: the RayCluster is the
        watch cache's (no request, no record built), its token the Secret's as
        :meth:`client` reads it, kept :data:`LOAD_CLIENT_KEEP`. Raises
        :class:`ClusterNotReady` (none cached, or its head not ready), or as :meth:`client`."""
        raycluster = self.session.cached_ray_cluster(check_cluster_name(name))
        if raycluster is None or not head_ready(raycluster):
            raise ClusterNotReady(
                f"The Ray head of cluster {name} is not up yet",
                "KubeRay does not say its head is ready" if raycluster else "no such RayCluster",
                "Wait until it is ready.",
                "unknown",
            )
        try:
            return self._load(self._client_of(name, raycluster, LOAD_CLIENT_KEEP))
        except RayAuthRefused:
            # The token changed (a new Secret, a rotated identity): read it again, once.
            with self._lock:
                self._clients.pop(name, None)
            return self._load(self._client_of(name, raycluster, None))

    @staticmethod
    def _load(client: RayJobsClient) -> RayLoad:
        return ray_load(client.cluster_status(), client.list_jobs(), client.alive_actors())

    def get(self, name: str, job_id: str) -> RayJob:
        """One job (``JobNotFound`` when the cluster has none of that id)."""
        answer = self.client(name).job(check_job_id(job_id))
        if not isinstance(answer, Mapping):
            raise RayError(f"Ray's answer about job {job_id} on {name} is unreadable")
        return RayJob.from_ray(answer)

    def logs(self, name: str, job_id: str) -> JobLogs:
        """The job's log so far (the end of it when very long)."""
        text, truncated = clip_log(plain_log(self.client(name).logs(check_job_id(job_id))))
        return JobLogs(name, job_id, text, truncated)

    def stop(self, name: str, job_id: str) -> JobStopped:
        """Ask Ray to stop the job; ``stopped`` is False when it had ended already."""
        return JobStopped(name, job_id, self.client(name).stop(check_job_id(job_id)))

    def submit(self, name: str, request: Mapping[str, Any]) -> RayJob:
        """Submit ``{"entrypoint", "runtime_env"?, "working_dir"?, "metadata"?,
        "submission_id"?}`` to cluster ``name``; a local ``working_dir`` is uploaded first.
        Returns the job as Ray has it just after."""
        from ..ray_head.packages import upload_working_dir

        body = _submission(request)
        client = self.client(name)
        working_dir = body.pop("working_dir", None)
        if working_dir is not None:
            runtime_env = dict(body.get("runtime_env") or {})
            runtime_env["working_dir"] = upload_working_dir(client, working_dir)
            body["runtime_env"] = runtime_env
        submission_id = client.submit(body)
        answer = client.job(submission_id)
        return RayJob.from_ray(answer if isinstance(answer, Mapping) else {})

    async def tail(self, name: str, job_id: str, client: RayJobsClient) -> AsyncIterator[str]:
        """The job's log as it is written (see :mod:`jupyter_dw.ray_head.log_tail`); ``client``
        from :meth:`client`, got off the event loop."""
        from ..ray_head.log_tail import tail_logs

        async for chunk in tail_logs(client, check_job_id(job_id)):
            yield plain_log(chunk)


def _no_address(name: str, err: NoAddress) -> RayError:
    return RayError(
        f"The Ray head of cluster {name} has no usable address",
        str(err),
        "Check the RayCluster's status.head.serviceName, or set JupyterDW.ray_dashboard_url "
        "(and ray_client_url) to where its head is.",
    )


def _invalid(field: str, problem: str) -> InvalidRequest:
    return InvalidRequest("Invalid job submission", problem, None, {field: problem})


def _submission(request: Mapping[str, Any]) -> dict[str, Any]:
    """Ray's ``JobSubmitRequest`` body from a request, each field checked (nothing sent when
    one is wrong)."""
    if not isinstance(request, Mapping):
        raise _invalid("request", "must be a JSON object")
    unknown = sorted(set(request) - SUBMIT_FIELDS)
    if unknown:
        raise _invalid("request", f"unknown field(s) {', '.join(map(str, unknown))}")
    entrypoint = request.get("entrypoint")
    if not isinstance(entrypoint, str) or not entrypoint.strip():
        raise _invalid("entrypoint", "must be a shell command, e.g. 'python train.py'")
    body: dict[str, Any] = {"entrypoint": entrypoint}
    runtime_env = request.get("runtime_env")
    if runtime_env is not None:
        if not isinstance(runtime_env, Mapping):
            raise _invalid("runtime_env", "must be a mapping (Ray's runtime_env)")
        body["runtime_env"] = dict(runtime_env)
    metadata = request.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise _invalid("metadata", "must map strings to strings")
        body["metadata"] = dict(metadata)
    working_dir = request.get("working_dir")
    if working_dir is not None:
        if not isinstance(working_dir, str) or not working_dir:
            raise _invalid("working_dir", "must be a local directory or a remote URI")
        body["working_dir"] = working_dir
    submission_id = request.get("submission_id")
    if submission_id is not None:
        body["submission_id"] = check_job_id(submission_id)
    return body
