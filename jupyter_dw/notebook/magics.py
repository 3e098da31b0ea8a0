"""``%dw``: the Python API as one line magic (``%load_ext jupyter_dw``).

Each subcommand returns its object, so ``h = %dw up demo --workers 2`` works and the result
displays richly. Bad arguments print a usage line and what was wrong; Kubernetes errors print
the error, its reason and the hint; neither is a traceback.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import Any

from ..core.errors import DWError, InvalidRequest
from .formatters import register as register_html

HELP = """%dw queues                      LocalQueues with quota and headroom
%dw workloads [--queue Q] [--kind Kind.group]
                                 every Workload in the queues (any job: Job.batch,
                                 RayCluster.ray.io, ...): state, position, quota held
%dw fit [--queue Q] --workers N --worker-cpu C --worker-memory M [--worker-gpu G]
        [--min-workers N --max-workers N] [--head-cpu C] [--head-memory M]
        [--toleration KEY[=VALUE][:EFFECT]]...
        [--node-selector k=v[,k=v]] [--priority CLASS]
                                 would it fit now? (and what would)
%dw up NAME [same options] [--image I [--ray-version V]] [--wait] [--ephemeral]
                                 submit a Ray cluster through Kueue
%dw status [NAME]                one cluster's state, or every cluster's
%dw watch NAME                   a live status widget
%dw down NAME                    delete a cluster
%dw scale NAME N|auto [--dry-run]
                                 pin an elastic cluster at N workers (auto: the Ray
                                 autoscaler decides again); a scale-up is fitted first
%dw stop NAME                    stop a cluster, keeping it: its pods go, its quota is
                                 freed, its spec stays
%dw resume NAME                  queue a stopped cluster again, at the size it had
%dw list                         the namespace's Ray clusters
%dw job NAME [--working-dir DIR] -- COMMAND...
                                 run COMMAND on cluster NAME as a Ray job; a live view
%dw jobs NAME                    the Ray jobs of cluster NAME
%dw rayjob fit|submit NAME [size options] [--mode K8sJobMode|SidecarMode] -- COMMAND...
                                 a RayJob: COMMAND on a cluster of its own, through Kueue
%dw rayjob status [NAME]         one RayJob's state (Kueue's, then KubeRay's), or all
%dw rayjob delete NAME           delete a RayJob (its cluster follows)
%dw trainjob fit|submit NAME --runtime R [--queue Q] [--priority P] [--nodes N]
        [--cpu C] [--memory M] [--gpu G] [--image I] [-- COMMAND...]
                                 a TrainJob (Kubeflow Trainer) on runtime R, through Kueue
%dw trainjob status [NAME]       one TrainJob's state (Kueue's, then Trainer's), or all
%dw trainjob delete NAME         delete a TrainJob (its JobSet and pods follow)
%dw help                         this text"""


class UsageError(Exception):
    """Arguments that do not parse; the message says which."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"usage: %dw {self.prog.split()[-1]} ...: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        raise UsageError(message or "")


def _size_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queue")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--min-workers", dest="min_workers", type=int)
    parser.add_argument("--max-workers", dest="max_workers", type=int)
    parser.add_argument("--worker-cpu", dest="worker_cpu")
    parser.add_argument("--worker-memory", dest="worker_memory")
    parser.add_argument("--worker-gpu", dest="worker_gpu", type=int)
    parser.add_argument("--head-cpu", dest="head_cpu")
    parser.add_argument("--head-memory", dest="head_memory")
    parser.add_argument("--toleration", dest="tolerations", action="append")
    parser.add_argument("--node-selector", dest="node_selector")
    parser.add_argument("--priority")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="%dw", add_help=False)
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    commands.add_parser("queues", add_help=False)
    workloads = commands.add_parser("workloads", add_help=False)
    workloads.add_argument("--queue")
    workloads.add_argument("--kind")
    _size_options(commands.add_parser("fit", add_help=False))
    up = commands.add_parser("up", add_help=False)
    up.add_argument("name")
    _size_options(up)
    up.add_argument("--image")
    up.add_argument("--ray-version", dest="ray_version")
    up.add_argument("--wait", action="store_true")
    up.add_argument("--ephemeral", action="store_true")
    commands.add_parser("status", add_help=False).add_argument("name", nargs="?")
    commands.add_parser("watch", add_help=False).add_argument("name")
    commands.add_parser("down", add_help=False).add_argument("name")
    scale = commands.add_parser("scale", add_help=False)
    scale.add_argument("name")
    scale.add_argument("workers", help="a whole number, or 'auto' for the Ray autoscaler")
    scale.add_argument("--dry-run", action="store_true")
    commands.add_parser("stop", add_help=False).add_argument("name")
    commands.add_parser("resume", add_help=False).add_argument("name")
    commands.add_parser("list", add_help=False)
    job = commands.add_parser("job", add_help=False)
    job.add_argument("name")
    job.add_argument("--working-dir", dest="working_dir")
    job.add_argument("entrypoint", nargs=argparse.REMAINDER)
    commands.add_parser("jobs", add_help=False).add_argument("name")
    for word in _KIND_REQUESTS:  # %dw rayjob ..., %dw trainjob ...
        kind = commands.add_parser(word, add_help=False)
        kind.add_argument("action", choices=("fit", "submit", "status", "delete"))
        kind.add_argument("name", nargs="?")
        kind.add_argument("rest", nargs=argparse.REMAINDER)
    commands.add_parser("help", add_help=False)
    return parser


SIZE_FIELDS = ("queue", "workers", "min_workers", "max_workers", "worker_cpu", "worker_memory",
               "worker_gpu", "head_cpu", "head_memory", "tolerations", "node_selector",
               "priority")  # fmt: skip


def run(line: str, out: Callable[[str], None] | None = None) -> Any:
    """Run one ``%dw`` line; return what it shows (None after a printed error)."""
    out = out or (lambda text: print(text, file=sys.stdout))
    try:
        args = _parser().parse_args(shlex.split(line))
    except (UsageError, ValueError) as err:
        out(f"{err}\n\n{HELP}")
        return None
    if args.command in (None, "help"):
        out(HELP)
        return None
    try:
        return _COMMANDS[args.command](args, out)
    except UsageError as err:
        out(f"{err}\n\n{HELP}")
    except InvalidRequest as err:
        fields = "; ".join(f"{k}: {v}" for k, v in err.errors.items())
        out(f"{err.error}: {fields or err.reason}\n{err.hint or ''}".rstrip())
    except DWError as err:
        reason = f": {err.reason}" if err.reason else ""
        out(f"{err.error}{reason}\n{err.hint or ''}".rstrip())
    return None


def _fields(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def _api() -> Any:
    # Imported on the first command, so %load_ext stays light (no Kubernetes client).
    from . import api

    return api


def _queues(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    return _api().queues()


def _workloads(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    return _api().workloads(queue=args.queue, kind=args.kind)


def _fit(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    return _api().fit(**_fields(args, SIZE_FIELDS))


def _up(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    handle = _api().submit(
        name=args.name,
        image=args.image,
        ray_version=args.ray_version,
        delete_with_kernel=args.ephemeral,
        **_fields(args, SIZE_FIELDS),
    )
    if args.wait:

        def progress(info: Any) -> None:
            where = (
                f" (position {info.position_in_local_queue + 1})"
                if info.position_in_local_queue is not None
                else ""
            )
            out(f"{handle.name}: {info.state}{where}, "
                f"{info.workers_ready}/{info.workers_desired} workers ready")  # fmt: skip

        handle.wait("ready", progress=progress)
    return handle


def _status(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    if args.name:
        return _api().cluster(args.name).status()
    return _api().runtime().core.clusters.list()


def _watch(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    from .widgets import ClusterStatus

    return ClusterStatus(args.name)


def _down(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    _api().RayClusterHandle(args.name).delete()
    out(f"Deleted Ray cluster {args.name}; its Workload and pods follow.")
    return None


def _scale(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    result = _api().RayClusterHandle(args.name).scale(args.workers, dry_run=args.dry_run)
    out(result.message)
    return result.cluster


def _stop(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    info = _api().RayClusterHandle(args.name).stop()
    out(
        f"Stopped Ray cluster {args.name}: Kueue frees its quota and KubeRay removes its pods; "
        f"the cluster is kept (%dw resume {args.name} queues it again)."
    )
    return info


def _resume(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    info = _api().RayClusterHandle(args.name).resume()
    out(f"Resumed Ray cluster {args.name}: it is {info.state} in queue {info.queue}.")
    return info


def _list(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    return _api().runtime().core.clusters.list()


def _job(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    words, working_dir = list(args.entrypoint), args.working_dir
    if "--" in words:  # options given after NAME are before "--": argparse left them here
        split = words.index("--")
        options = _Parser(prog="%dw job", add_help=False)
        options.add_argument("--working-dir", dest="working_dir")
        working_dir = options.parse_args(words[:split]).working_dir or working_dir
        words = words[split + 1 :]
    if not words:
        raise UsageError("usage: %dw job NAME [--working-dir DIR] -- COMMAND...: no command")
    handle = _api().RayClusterHandle(args.name)
    job = handle.submit_job(shlex.join(words), working_dir=working_dir)
    return job.view()


def _jobs(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
    return _api().RayClusterHandle(args.name).list_jobs()


def _rayjob_options() -> argparse.ArgumentParser:
    options = _Parser(prog="%dw rayjob", add_help=False)
    _size_options(options)
    options.add_argument("--image")
    options.add_argument("--ray-version", dest="ray_version")
    options.add_argument("--mode", dest="submission_mode")
    return options


def _kind_command(word: str) -> Callable[[argparse.Namespace, Callable[[str], None]], Any]:
    """``%dw <word> fit|submit NAME ...``, ``status [NAME]`` and ``delete NAME`` of a workload
    kind, alike for every kind; ``fit`` and ``submit`` send :data:`_KIND_REQUESTS`' request."""

    def command(args: argparse.Namespace, out: Callable[[str], None]) -> Any:
        from .kinds import calls_named

        calls = calls_named(word)
        if args.action == "status":
            return calls.get(args.name).status() if args.name else calls.list()
        if not args.name:
            raise UsageError(f"usage: %dw {word} {args.action} NAME ...: no NAME")
        if args.action == "delete":
            calls.handle(args.name).delete()
            out(f"Deleted {calls.kind.kind} {args.name}; {calls.kind.follows}.")
            return None
        request = _KIND_REQUESTS[word](args.name, list(args.rest))
        return calls.fit(request) if args.action == "fit" else calls.submit(request)

    return command


def _options_and_command(
    words: list[str], parser: argparse.ArgumentParser
) -> tuple[argparse.Namespace, list[str]]:
    """``[options] [-- command ...]``: the parsed options and the command's words."""
    split = words.index("--") if "--" in words else len(words)
    return parser.parse_args(words[:split]), words[split + 1 :]


def _rayjob_request(name: str, rest: list[str]) -> dict[str, Any]:
    options, command = _options_and_command(rest, _rayjob_options())
    cluster = _fields(options, (*SIZE_FIELDS, "image", "ray_version"))
    top: dict[str, Any] = {k: cluster.pop(k) for k in ("queue", "priority") if k in cluster}
    return {
        "name": name,
        "entrypoint": shlex.join(command) if command else None,
        "submission_mode": options.submission_mode,
        "cluster": cluster,
        **top,
    }


def _trainjob_options() -> argparse.ArgumentParser:
    options = _Parser(prog="%dw trainjob", add_help=False)
    for flag in ("--runtime", "--queue", "--priority", "--cpu", "--memory", "--gpu", "--image"):
        options.add_argument(flag)
    options.add_argument("--nodes", dest="num_nodes", type=int)
    return options


def _trainjob_request(name: str, rest: list[str]) -> dict[str, Any]:
    options, command = _options_and_command(rest, _trainjob_options())
    resources = {k: getattr(options, k) for k in ("cpu", "memory", "gpu")}
    return {
        "name": name,
        "runtime": options.runtime,
        "queue": options.queue,
        "priority": options.priority,
        "num_nodes": options.num_nodes,
        "resources_per_node": {k: v for k, v in resources.items() if v is not None} or None,
        "command": command or None,
        "image": options.image,
    }


_KIND_REQUESTS: dict[str, Callable[[str, list[str]], dict[str, Any]]] = {
    "rayjob": _rayjob_request,
    "trainjob": _trainjob_request,
}
"""Each workload kind's ``%dw <word>`` request, from NAME and what follows it (options, then
``--`` and a command)."""


_COMMANDS: dict[str, Callable[[argparse.Namespace, Callable[[str], None]], Any]] = {
    "queues": _queues,
    "workloads": _workloads,
    "fit": _fit,
    "up": _up,
    "status": _status,
    "watch": _watch,
    "down": _down,
    "scale": _scale,
    "stop": _stop,
    "resume": _resume,
    "list": _list,
    "job": _job,
    "jobs": _jobs,
    **{word: _kind_command(word) for word in _KIND_REQUESTS},
}


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%dw`` and the results' HTML (nothing contacts Kubernetes until a command
    runs)."""
    register_html(ipython)
    ipython.register_magic_function(lambda line: run(line), magic_kind="line", magic_name="dw")
