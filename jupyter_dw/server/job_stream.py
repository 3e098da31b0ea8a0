"""Ray jobs on the events socket: what one socket asked to follow, and the messages about it.
``watch_jobs`` in, ``jobs`` and ``job_logs`` out, bounded per socket. The protocol:
docs/explanation/architecture.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..core.errors import DWError
from ..domain.ray_jobs import MAX_LOG_CHARS

log = logging.getLogger(__name__)

MAX_CLUSTERS = 8
POLL_SECONDS = 1.0
MAX_CHUNK_CHARS = MAX_LOG_CHARS
"""A first chunk (the log so far) longer than this is cut to its end."""

Send = Callable[[dict[str, Any]], Awaitable[None]]
Blocking = Callable[..., Awaitable[Any]]


class JobWatches:
    """One socket's job lists and log stream."""

    def __init__(self, core: Any, run_blocking: Blocking, send: Send) -> None:
        self._core = core
        self._run_blocking = run_blocking
        self._send = send
        self._lists: dict[str, asyncio.Task[None]] = {}
        self._logs: tuple[tuple[str, str], asyncio.Task[None]] | None = None
        self._refusals: list[asyncio.Task[None]] = []

    def update(self, message: Any) -> None:
        """Apply a ``watch_jobs`` message (anything malformed is ignored, as before)."""
        clusters = message.get("clusters") if isinstance(message, dict) else None
        if not isinstance(clusters, list):
            return
        wanted = list(dict.fromkeys(c for c in clusters if isinstance(c, str)))
        refused, wanted = wanted[MAX_CLUSTERS:], wanted[:MAX_CLUSTERS]
        for name in set(self._lists) - set(wanted):
            self._lists.pop(name).cancel()
        for name in wanted:
            if name not in self._lists:
                self._lists[name] = asyncio.ensure_future(self._follow_list(name))
        if refused:
            self._refusals.append(asyncio.ensure_future(self._refuse(refused)))
        logs = message.get("logs")
        target = (
            (logs["cluster"], logs["job"])
            if isinstance(logs, dict)
            and isinstance(logs.get("cluster"), str)
            and isinstance(logs.get("job"), str)
            else None
        )
        if self._logs is not None and self._logs[0] != target:
            self._logs[1].cancel()
            self._logs = None
        if target is not None and self._logs is None:
            self._logs = (target, asyncio.ensure_future(self._follow_logs(*target)))

    def stop(self) -> None:
        """The socket closed: stop everything."""
        for task in self._lists.values():
            task.cancel()
        self._lists.clear()
        for task in self._refusals:
            task.cancel()
        if self._logs is not None:
            self._logs[1].cancel()
            self._logs = None

    async def _refuse(self, names: list[str]) -> None:
        for name in names:
            await self._send(_too_many(name))

    async def _follow_list(self, name: str) -> None:
        last: str | None = None
        while True:
            try:
                answer = await self._run_blocking(self._core.jobs.list, name)
                message = {"type": "jobs", "cluster": name, "jobs": answer.to_json()["jobs"]}
                message["error"] = None
            except DWError as err:
                message = {"type": "jobs", "cluster": name, "jobs": None, "error": err.to_json()}
            text = json.dumps(message, sort_keys=True)
            if text != last:
                last = text
                await self._send(message)
            await asyncio.sleep(POLL_SECONDS)

    async def _follow_logs(self, name: str, job: str) -> None:
        jobs = self._core.jobs
        reset = True
        try:
            client = await self._run_blocking(jobs.client, name)
            async for chunk in jobs.tail(name, job, client):
                text = chunk[-MAX_CHUNK_CHARS:] if reset else chunk
                await self._send(_logs(name, job, text, reset, False, None))
                reset = False
            await self._send(_logs(name, job, "", reset, True, None))
        except DWError as err:
            await self._send(_logs(name, job, "", reset, True, err.to_json()))
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a bug: say so on this stream, keep the socket
            log.exception("jupyter_dw: the log stream of %s/%s failed", name, job)
            failure = DWError("The log stream failed", f"{type(err).__name__}: {err}")
            with contextlib.suppress(Exception):
                await self._send(_logs(name, job, "", reset, True, failure.to_json()))


def _logs(
    cluster: str, job: str, text: str, reset: bool, end: bool, error: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "type": "job_logs",
        "cluster": cluster,
        "job": job,
        "text": text,
        "reset": reset,
        "end": end,
        "error": error,
    }


def _too_many(name: str) -> dict[str, Any]:
    error = DWError(
        f"Not following the jobs of {name}",
        f"one socket follows the jobs of at most {MAX_CLUSTERS} clusters",
        "Follow fewer clusters at once.",
    ).to_json()
    return {
        "type": "jobs",
        "cluster": name,
        "jobs": None,
        "error": {**error, "code": "too_many_clusters"},
    }
