"""How fast a Ray job's log reaches ``dw.JobView``: job submitted → first log line shown in the
widget, and each log line written → shown, against a real Ray head with token auth, with Ray's
own ``JobSubmissionClient.tail_job_logs`` (in Ray's virtualenv) as the baseline in the same run.

Each job prints ``--lines`` lines, one every 0.2 s, each carrying the wall-clock time it was
written (same machine, same clock). For the widget, a ``JobView`` follows each job on this
process's asyncio loop, as in a kernel; a line is "shown" when the widget's ``log`` trait holds
it (the trait change is what the browser is sent). For the baseline, a script in Ray's venv
submits the same jobs with ``JobSubmissionClient`` and reads ``tail_job_logs``.

Measured here is the path Ray → jupyter_dw → widget: the cluster's head is the local one, so
finding the cluster and reading its token (one Secret GET, kept 5 s) are left out.

Usage: ``.venv/bin/python -m benchmarks.bench_jobs [--jobs 20] [--lines 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import time
from types import SimpleNamespace
from typing import Any

from jupyter_dw.core.ray_jobs import RayJobService
from jupyter_dw.domain.ray_auth import RayToken
from jupyter_dw.notebook.job_view import JobView
from jupyter_dw.notebook.jobs import RayJobHandle
from jupyter_dw.notebook.runtime import set_runtime
from jupyter_dw.ray_head.jobs_api import RayJobsClient
from tests.cluster.ray_head import ray_head, ray_venv
from tests.integration.ray_jobs_support import new_token

LINE = re.compile(r"^L(\d+) (\d+\.\d+)$", re.MULTILINE)


def entrypoint(lines: int) -> str:
    body = (
        f"[(print(f'L{{i}} {{time.time()}}', flush=True), time.sleep(0.2)) for i in range({lines})]"
    )
    return f'python -c "import time; {body}"'


class LocalHead(RayJobService):
    """The job service with the cluster's head at a known address and token."""

    def __init__(self, client: RayJobsClient) -> None:
        super().__init__(session=None, clusters=None)  # type: ignore[arg-type]
        self._client = client

    def client(self, name: str) -> RayJobsClient:
        return self._client


async def widget_run(service: LocalHead, jobs: int, lines: int) -> dict[str, list[float]]:
    first: list[float] = []
    line_lags: list[float] = []
    for _ in range(jobs):
        submitted = time.time()
        job = await asyncio.to_thread(service.submit, "local", {"entrypoint": entrypoint(lines)})
        seen: set[int] = set()
        done = asyncio.Event()
        view = JobView(RayJobHandle("local", job.submission_id, _last=job))

        def on_log(change: Any, seen: set[int] = seen, submitted: float = submitted) -> None:
            now = time.time()
            for match in LINE.finditer(change["new"]):
                index, written = int(match[1]), float(match[2])
                if index not in seen:
                    seen.add(index)
                    if len(seen) == 1:
                        first.append(now - submitted)
                    line_lags.append(now - written)

        def on_following(change: Any, done: asyncio.Event = done) -> None:
            if not change["new"]:
                done.set()

        view.observe(on_log, names="log")
        view.observe(on_following, names="following")
        await asyncio.wait_for(done.wait(), 120)
        assert len(seen) == lines and view.status == "SUCCEEDED", (view.status, view.log)
        view.close()
    return {"first": first, "line": line_lags}


BASELINE = """
import json, re, sys, time, asyncio
from ray.job_submission import JobSubmissionClient
url, token, entrypoint = sys.argv[1], sys.argv[2], sys.argv[5]
jobs, lines = int(sys.argv[3]), int(sys.argv[4])
LINE = re.compile(r"^L(\\d+) (\\d+\\.\\d+)$", re.MULTILINE)
client = JobSubmissionClient(url, headers={"Authorization": f"Bearer {token}"})
first, lags = [], []
async def one():
    submitted = time.time()
    job = client.submit_job(entrypoint=entrypoint)
    seen, text = set(), ""
    async for chunk in client.tail_job_logs(job):
        now = time.time()
        text += chunk
        for m in LINE.finditer(text):
            i, written = int(m[1]), float(m[2])
            if i not in seen:
                seen.add(i)
                if len(seen) == 1:
                    first.append(now - submitted)
                lags.append(now - written)
    assert len(seen) == lines, text
for _ in range(jobs):
    asyncio.run(one())
print(json.dumps({"first": first, "line": lags}))
"""


def baseline_run(port: int, token: str, jobs: int, lines: int) -> dict[str, list[float]]:
    python = str(ray_venv() / "bin" / "python")
    args = [f"http://127.0.0.1:{port}", token, str(jobs), str(lines), entrypoint(lines)]
    done = subprocess.run(
        [python, "-c", BASELINE, *args], capture_output=True, text=True, check=True, timeout=1800
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.0f} ms"


def report(what: str, run: dict[str, list[float]]) -> None:
    first, line = run["first"], run["line"]
    print(
        f"{what:<44} submitted→first line p50 {1000 * statistics.median(first):.0f} ms "
        f"(p95 {ms(first, 0.95)}); written→shown p50 {1000 * statistics.median(line):.0f} ms "
        f"(p95 {ms(line, 0.95)}); {len(first)} jobs, {len(line)} lines"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--lines", type=int, default=5)
    args = parser.parse_args()
    token = new_token()
    with ray_head(token) as port:
        client = RayJobsClient(f"http://127.0.0.1:{port}", RayToken(token), "local")
        service = LocalHead(client)
        previous = set_runtime(SimpleNamespace(core=SimpleNamespace(jobs=service)))  # type: ignore[arg-type]
        try:
            ours = asyncio.run(widget_run(service, args.jobs, args.lines))
        finally:
            set_runtime(previous)
        theirs = baseline_run(port, token, args.jobs, args.lines)
    report("dw.JobView (log trait), Ray Jobs REST + WS", ours)
    report("baseline: Ray's JobSubmissionClient.tail_job_logs", theirs)


if __name__ == "__main__":
    main()
