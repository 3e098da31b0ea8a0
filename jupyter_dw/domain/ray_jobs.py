"""Ray jobs as every surface shows them, read from Ray's Jobs REST API answers. Pure.
Ray's own field names and states; ``runtime_env`` is never copied
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

JOB_STATES: tuple[str, ...] = ("PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED")
TERMINAL_STATES = frozenset({"STOPPED", "SUCCEEDED", "FAILED"})
"""States a job never leaves (``JobStatus.is_terminal``)."""
TAIL_LINES = 20
"""Lines of a failed job's log its error shows."""
MAX_LOG_CHARS = 200_000
"""The most log text one answer or widget holds (the end is kept): Ray keeps every line."""

_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def job_id_error(job_id: Any) -> str | None:
    """Why ``job_id`` cannot be a Ray job's id in a URL path, or None. Ray's ids are
    ``raysubmit_<16 characters>`` (or a caller's own submission id): letters, digits, ``_``,
    ``-`` and ``.``, never ``.``/``..`` (a path segment an HTTP client would remove)."""
    if not isinstance(job_id, str) or not _JOB_ID.fullmatch(job_id) or set(job_id) == {"."}:
        return (
            "must be 1-128 letters, digits, '_', '-' or '.', starting with a letter or digit "
            "(a Ray submission id such as raysubmit_AbC123)"
        )
    return None


def readable_command(entrypoint: str) -> str:
    """``entrypoint`` with the shell's quoting taken off (see :attr:`RayJob.command`)."""
    try:
        return " ".join(shlex.split(entrypoint))
    except ValueError:  # unbalanced quotes: show it as Ray has it
        return entrypoint


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _items(value: Any) -> list[tuple[Any, Any]]:
    return list(value.items()) if isinstance(value, Mapping) else []


def _ms(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and value > 0 else None


@dataclass(frozen=True)
class RayJob:
    """One Ray job (a submission) of a cluster."""

    submission_id: str
    entrypoint: str
    status: str
    message: str | None = None
    error_type: str | None = None
    start_time: int | None = None
    end_time: int | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    driver_exit_code: int | None = None

    @classmethod
    def from_ray(cls, data: Mapping[str, Any]) -> RayJob:
        """From Ray's ``JobDetails`` JSON (a driver-only job without a submission id gets its
        ``job_id``)."""
        status = _text(data.get("status")) or "PENDING"
        metadata = data.get("metadata")
        message = _text(data.get("message"))
        exit_code = data.get("driver_exit_code")
        return cls(
            submission_id=_text(data.get("submission_id")) or _text(data.get("job_id")) or "",
            entrypoint=_text(data.get("entrypoint")) or "",
            status=status if status in JOB_STATES else "PENDING",
            # Ray quotes a failed job's last log lines in its message, colours and all.
            message=plain_log(message) if message is not None else None,
            error_type=_text(data.get("error_type")),
            start_time=_ms(data.get("start_time")),
            end_time=_ms(data.get("end_time")),
            metadata={str(k): str(v) for k, v in _items(metadata)},
            driver_exit_code=exit_code if isinstance(exit_code, int) else None,
        )

    @property
    def command(self) -> str:
        """The entrypoint as a person wrote it, for display: the shell's quoting taken off
        (``python -c 'print("it'"'"'s")'`` reads ``python -c print("it's")``), the words
        joined by spaces; the entrypoint as it is when it is not a shell command's words."""
        return readable_command(self.entrypoint)

    @property
    def terminal(self) -> bool:
        """Whether the job has ended (it will not change any more)."""
        return self.status in TERMINAL_STATES

    def duration_ms(self, now_ms: int) -> int | None:
        """Run time so far (or in all, once ended); None before it started."""
        if self.start_time is None:
            return None
        end = self.end_time if self.end_time is not None else now_ms
        return max(0, end - self.start_time)

    def to_json(self) -> dict[str, Any]:
        """Ray's own fields (``runtime_env`` left out)."""
        return {
            "submission_id": self.submission_id,
            "entrypoint": self.entrypoint,
            "command": self.command,
            "status": self.status,
            "message": self.message,
            "error_type": self.error_type,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "metadata": dict(self.metadata),
            "driver_exit_code": self.driver_exit_code,
        }


@dataclass(frozen=True)
class JobList:
    """A cluster's Ray jobs, newest first; behaves like a list and looks jobs up by id."""

    cluster: str
    jobs: tuple[RayJob, ...]

    def __iter__(self) -> Iterator[RayJob]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)

    def __getitem__(self, key: int | str) -> RayJob:
        if isinstance(key, str):
            for job in self.jobs:
                if job.submission_id == key:
                    return job
            raise KeyError(key)
        return self.jobs[key]

    def to_json(self) -> dict[str, Any]:
        """``{"cluster", "jobs": [...]}``."""
        return {"cluster": self.cluster, "jobs": [job.to_json() for job in self.jobs]}


def job_list(cluster: str, answer: Any) -> JobList:
    """Ray's ``GET /api/jobs/`` answer as a :class:`JobList` of submissions (driver-only jobs,
    e.g. a Ray Client session, have no submission and are left out), newest first."""
    rows = [
        RayJob.from_ray(row)
        for row in (answer if isinstance(answer, list) else [])
        if isinstance(row, Mapping) and _text(row.get("submission_id"))
    ]
    rows.sort(key=lambda job: (job.start_time or 0, job.submission_id), reverse=True)
    return JobList(cluster, tuple(rows))


@dataclass(frozen=True)
class JobLogs:
    """A job's log as Ray has it (the end kept when longer than :data:`MAX_LOG_CHARS`)."""

    cluster: str
    submission_id: str
    logs: str
    truncated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "submission_id": self.submission_id,
            "logs": self.logs,
            "truncated": self.truncated,
        }


# Terminal control sequences: CSI (colours, cursor moves) and OSC (titles, links), as Ray's
# logger writes them for a terminal (``\x1b[1m\x1b[32mhttp://...\x1b[39m\x1b[22m``).
_TERMINAL_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def plain_log(text: str) -> str:
    """``text`` without terminal control sequences: logs are shown as text in a widget, the
    sidebar and JSON answers, where an escape would show as a stray box and ``[32m``."""
    return _TERMINAL_CONTROL.sub("", text)


def clip_log(text: str, limit: int = MAX_LOG_CHARS) -> tuple[str, bool]:
    """The last ``limit`` characters of ``text`` (from a line start when one is near), and
    whether anything was cut."""
    if len(text) <= limit:
        return text, False
    tail = text[-limit:]
    newline = tail.find("\n")
    if 0 <= newline < 1000:
        tail = tail[newline + 1 :]
    return tail, True


def last_lines(text: str, count: int = TAIL_LINES) -> list[str]:
    """The last ``count`` non-empty lines of a log."""
    return [line for line in text.splitlines() if line.strip()][-count:]


def failure_reason(job: RayJob, logs: str) -> str:
    """Why ``job`` failed, in Ray's words, then the last lines of its log (Ray's message
    often quotes the log already: then it is not repeated)."""
    message = (job.message or f"the job ended {job.status}").strip()
    lines = last_lines(logs)
    if not lines or lines[-1] in message:
        return message
    return message + "\nLast log lines:\n" + "\n".join(lines)


@dataclass(frozen=True)
class JobStopped:
    """The answer of ``POST .../stop``: whether Ray stopped it (False: it had ended)."""

    cluster: str
    submission_id: str
    stopped: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "submission_id": self.submission_id,
            "stopped": self.stopped,
        }
