"""``dw.JobView(job)``: one Ray job, live: its state, run time, message and log, with Stop.
The log streams on the kernel's own loop; the token is never in the widget's state
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import anywidget
from traitlets import Bool, Dict, Int, Unicode

from ..core.errors import DWError
from ..domain.ray_jobs import RayJob, clip_log, failure_reason
from .jobs import STATUS_POLL_SECONDS, RayJobHandle
from .runtime import _current_loop
from .widgets import esm

STATUS_SECONDS = 1.0
"""How often the state is read while the job runs (Ray has no stream of it)."""
WIDGET_LOG_CHARS = 50_000
"""The end of the log a widget holds (the whole log: ``job.logs()``)."""


class JobView(anywidget.AnyWidget):
    """A Ray job, live. Synced traits carry Ray's field names (``status``, ``message``,
    ``start_time``, ``end_time``), plus ``log`` (its end), ``error`` and ``failure``.
    ``close()`` stops following it."""

    _esm = esm("job_view.js")

    cluster = Unicode().tag(sync=True)
    submission_id = Unicode().tag(sync=True)
    entrypoint = Unicode("").tag(sync=True)
    command = Unicode("").tag(sync=True)
    """The entrypoint as the user wrote it (the shell's quoting taken off): what is shown."""
    status = Unicode("PENDING").tag(sync=True)
    message = Unicode(None, allow_none=True).tag(sync=True)
    start_time = Int(None, allow_none=True).tag(sync=True)
    end_time = Int(None, allow_none=True).tag(sync=True)
    log = Unicode("").tag(sync=True)
    log_truncated = Bool(False).tag(sync=True)
    failure = Unicode(None, allow_none=True).tag(sync=True)
    """When the job FAILED or was STOPPED: Ray's message and the last lines of its log."""
    error = Dict(default_value=None, allow_none=True).tag(sync=True)
    """What went wrong reaching the job (``{"error", "reason", "hint", "code"}``)."""
    following = Bool(False).tag(sync=True)

    def __init__(self, job: RayJobHandle, **kwargs: Any) -> None:
        super().__init__(cluster=job.cluster, submission_id=job.submission_id, **kwargs)
        self.job = job
        self.on_msg(self._on_frontend_message)
        if job._last is not None:
            self._show(job._last)
        self.following = True
        self._task: asyncio.Task[None] | None = _current_loop().create_task(self._follow())

    def close(self) -> None:
        """Stop following the job and close the widget."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        super().close()

    # -- following ---------------------------------------------------------------------------

    async def _follow(self) -> None:
        try:
            self._show(await asyncio.to_thread(self.job.status))
            ticker = asyncio.ensure_future(self._tick())
            try:
                async for chunk in self.job.tail():
                    self._append(chunk)
                    if self.status == "PENDING":
                        self._show(await asyncio.to_thread(self.job.status))
            finally:
                ticker.cancel()
            job = await asyncio.to_thread(self.job.status)
            while not job.terminal:  # the stream broke off before the end
                await asyncio.sleep(STATUS_POLL_SECONDS)
                job = await asyncio.to_thread(self.job.status)
            if job.status != "SUCCEEDED":
                self.failure = failure_reason(job, await asyncio.to_thread(self.job.logs))
            self._show(job)
        except DWError as err:
            self.error = err.to_json()
        finally:
            self.following = False

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(STATUS_SECONDS)
            with contextlib.suppress(DWError):
                job = await asyncio.to_thread(self.job.status)
                if not job.terminal:  # the end is shown once the log is complete
                    self._show(job)

    def _show(self, job: RayJob) -> None:
        with self.hold_sync():
            self.entrypoint = job.entrypoint
            self.command = job.command
            self.status = job.status
            self.message = job.message
            self.start_time = job.start_time
            self.end_time = job.end_time

    def _append(self, chunk: str) -> None:
        text, cut = clip_log(self.log + chunk, WIDGET_LOG_CHARS)
        with self.hold_sync():
            self.log = text
            self.log_truncated = self.log_truncated or cut

    def _on_frontend_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("action") == "stop":
            _current_loop().create_task(self._stop())

    async def _stop(self) -> None:
        try:
            await asyncio.to_thread(self.job.stop)
        except DWError as err:
            self.error = err.to_json()
