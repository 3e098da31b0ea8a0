"""A client of Ray's Jobs REST API (Ray 2.60), with the standard library only.
So it works in a kernel without Ray. Blocking; the token is in no URL, error or log line. The
endpoints it calls: docs/explanation/security.md.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

from ..domain.ray_auth import RayToken
from .errors import JobNotFound, RayAuthRefused, RayError, RayRejected, RayUnreachable

DEFAULT_TIMEOUT = 30.0
_ERROR_TEXT = 600
"""Characters of a Ray error body kept in an error (Ray answers tracebacks)."""


class RayJobsClient:
    """Ray's Jobs API of one cluster: ``base_url`` is its dashboard root (no trailing slash)."""

    def __init__(
        self,
        base_url: str,
        token: RayToken | None,
        cluster: str,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.cluster = cluster
        self.timeout = timeout
        self._token = token

    def __repr__(self) -> str:
        auth = "token" if self._token is not None else "none"
        return f"RayJobsClient({self.base_url!r}, auth={auth})"

    @property
    def token(self) -> RayToken | None:
        """The token it sends (None: the cluster has no auth)."""
        return self._token

    def headers(self) -> dict[str, str]:
        """The headers every request carries (the token's, when the cluster has one)."""
        return {"Authorization": self._token.header()} if self._token is not None else {}

    @property
    def tail_url(self) -> str:
        """``ws(s)://.../api/jobs/`` (a job id and ``/logs/tail`` follow)."""
        scheme, rest = self.base_url.split("://", 1)
        return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/api/jobs/"

    # -- the API --------------------------------------------------------------------------

    def list_jobs(self) -> Any:
        return self._json("GET", "/api/jobs/")

    def job(self, job_id: str) -> Any:
        return self._json("GET", f"/api/jobs/{quote(job_id, safe='')}", job_id=job_id)

    def logs(self, job_id: str) -> str:
        answer = self._json("GET", f"/api/jobs/{quote(job_id, safe='')}/logs", job_id=job_id)
        return str(answer.get("logs") or "") if isinstance(answer, dict) else ""

    def submit(self, body: dict[str, Any]) -> str:
        """The new job's submission id."""
        answer = self._json("POST", "/api/jobs/", body)
        if not isinstance(answer, dict) or not isinstance(answer.get("submission_id"), str):
            raise RayError(f"Ray's answer to a job submission on {self.cluster} is unreadable")
        return answer["submission_id"]

    def stop(self, job_id: str) -> bool:
        path = f"/api/jobs/{quote(job_id, safe='')}/stop"
        answer = self._json("POST", path, {}, job_id=job_id)
        return bool(answer.get("stopped")) if isinstance(answer, dict) else False

    def cluster_status(self) -> Any:
        """The dashboard's ``GET /api/cluster_status``: GCS key-value reads, cheap; its
        ``data.clusterStatus.loadMetricsReport.usage`` is the logical load."""
        return self._json("GET", "/api/cluster_status")

    def alive_actors(self) -> int | None:
        """How many actors are alive (Ray's state API); None when the answer has no count.

        Ray filters after it truncates to ``limit`` and counts every actor, dead ones too, in
        ``total``: the count of live ones is ``num_filtered``, right only when the limit
        covers every actor (Ray 2.60 checked: a finished job's supervisor stays listed,
        dead)."""
        query = "filter_keys=state&filter_predicates=%3D&filter_values=ALIVE&limit=10000"
        answer = self._json("GET", f"/api/v0/actors?{query}")
        result = (
            ((answer or {}).get("data") or {}).get("result") if isinstance(answer, dict) else None
        )
        alive = result.get("num_filtered") if isinstance(result, dict) else None
        return alive if isinstance(alive, int) else None

    def package_exists(self, package: str) -> bool:
        try:
            self._call("GET", f"/api/packages/gcs/{quote(package, safe='')}")
        except JobNotFound:
            return False
        return True

    def upload_package(self, package: str, data: bytes) -> None:
        self._call("PUT", f"/api/packages/gcs/{quote(package, safe='')}", data, raw=True)

    # -- transport --------------------------------------------------------------------------

    def _json(self, method: str, path: str, body: Any = None, job_id: str | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        raw = self._call(method, path, data, job_id=job_id)
        try:
            return json.loads(raw or b"null")
        except ValueError as err:
            raise RayError(
                f"Ray's answer to {method} {path} on {self.cluster} is not JSON", str(err)
            ) from None

    def _call(
        self,
        method: str,
        path: str,
        data: bytes | None = None,
        job_id: str | None = None,
        raw: bool = False,
    ) -> bytes:
        headers = self.headers()
        if data is not None:
            headers["Content-Type"] = "application/octet-stream" if raw else "application/json"
        request = urllib.request.Request(
            self.base_url + path, data=data, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as err:
            text = err.read().decode(errors="replace")[-_ERROR_TEXT:].strip()
            raise self.refusal(err.code, text, method, path, job_id) from None
        except (TimeoutError, urllib.error.URLError, OSError) as err:
            cause = getattr(err, "reason", err)
            raise RayUnreachable(
                f"The Ray head of cluster {self.cluster} did not answer",
                f"{method} {self.base_url}{path}: {cause}",
                "Its head must be reachable from here (the head Service's cluster DNS name in "
                "a workbench pod). Elsewhere, set JupyterDW.ray_dashboard_url to where it is.",
            ) from None

    def refusal(
        self, status: int, text: str, method: str, path: str, job_id: str | None
    ) -> RayError:
        where = f"{method} {path} on cluster {self.cluster}"
        if status in (401, 403):
            return RayAuthRefused(
                f"Ray refused the request's credentials ({status})",
                f"{where}: {text or 'no reason given'}",
                "The cluster's token comes from its KubeRay-made Secret; if the cluster was "
                "re-created, try again.",
            )
        if status == 404:
            missing = f"Ray job {job_id!r}" if job_id else "The requested object"
            return JobNotFound(
                f"{missing} does not exist on cluster {self.cluster}", text or where, None
            )
        if status == 400:
            return RayRejected(f"Ray refused {where}", text or None, None)
        return RayError(f"Ray answered {status} to {where}", text or None, None)
