"""``%dw``: the Python API as one line magic (``%load_ext jupyter_dw``).

Each subcommand returns its object, so ``h = %dw up demo --workers 2`` works and the result
displays richly. Bad arguments print a usage line and what was wrong; Kubernetes errors print
the error, its reason and the hint; neither is a traceback.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import textwrap
from collections.abc import Callable
from typing import Any

from ..core.errors import DWError, InvalidRequest
from .formatters import register as register_html


class UsageError(Exception):
    """Arguments that do not parse; the message says which."""


WIDTH = 80
"""Help text width: the same in a kernel (no terminal) and on the documentation's page."""


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=WIDTH, max_help_position=32)


class _Parser(argparse.ArgumentParser):
    """No ``-h`` of argparse's (it would exit the kernel): :func:`run` answers ``--help``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("add_help", False)
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        command = "" if self.prog == "%dw" else f" {self.prog.split()[-1]}"
        raise UsageError(f"usage: %dw{command} ...: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        raise UsageError(message or "")


def _size_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--queue", metavar="Q", help="LocalQueue (default: the namespace's default queue)"
    )
    parser.add_argument("--workers", type=int, metavar="N", help="number of Ray workers")
    parser.add_argument(
        "--min-workers",
        dest="min_workers",
        type=int,
        metavar="N",
        help="with --max-workers: an elastic cluster the Ray autoscaler sizes in that range",
    )
    parser.add_argument(
        "--max-workers", dest="max_workers", type=int, metavar="N", help="see --min-workers"
    )
    parser.add_argument(
        "--worker-cpu", dest="worker_cpu", metavar="C", help="CPU per worker (500m, 2)"
    )
    parser.add_argument(
        "--worker-memory", dest="worker_memory", metavar="M", help="memory per worker (8Gi)"
    )
    parser.add_argument(
        "--worker-gpu", dest="worker_gpu", type=int, metavar="G", help="GPUs per worker"
    )
    parser.add_argument("--head-cpu", dest="head_cpu", metavar="C", help="CPU of the head")
    parser.add_argument("--head-memory", dest="head_memory", metavar="M", help="memory of the head")
    parser.add_argument(
        "--toleration",
        dest="tolerations",
        action="append",
        metavar="KEY[=VALUE][:EFFECT]",
        help="a toleration of the head and workers (repeat for more)",
    )
    parser.add_argument(
        "--node-selector",
        dest="node_selector",
        metavar="K=V[,K=V]",
        help="node labels the head and workers need",
    )
    parser.add_argument(
        "--priority", metavar="CLASS", help="a WorkloadPriorityClass (Kueue's priority)"
    )


def _ray_cluster_options(parser: argparse.ArgumentParser, image: str) -> None:
    """A Ray cluster's options: its size, then its ``image`` (what it is the image of) and
    the image's Ray version."""
    _size_options(parser)
    parser.add_argument("--image", metavar="I", help=image)
    parser.add_argument(
        "--ray-version",
        dest="ray_version",
        metavar="V",
        help="the image's Ray version, when its tag does not say it",
    )


def _command(
    commands: Any, name: str, summary: str, description: str = ""
) -> argparse.ArgumentParser:
    sentence = f"{summary[0].upper()}{summary[1:]}."
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=f"{sentence} {description}".rstrip()
    )
    return parser


def _on_cluster(
    commands: Any, name: str, summary: str, description: str = ""
) -> argparse.ArgumentParser:
    """A command about one cluster: its first argument is the cluster's NAME."""
    parser = _command(commands, name, summary, description)
    parser.add_argument("name", metavar="NAME", help="the cluster")
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="%dw",
        description="jupyter_dw in one line: Kueue queues, Ray clusters, RayJobs and "
        "TrainJobs. Each command returns its object (h = %dw up demo --workers 2); "
        "`%dw COMMAND --help` shows one command's options.",
    )
    commands = parser.add_subparsers(
        dest="command", parser_class=_Parser, metavar="COMMAND", title="commands"
    )
    _command(commands, "queues", "LocalQueues with quota and headroom")
    workloads = _command(
        commands,
        "workloads",
        "every Workload in the queues, whatever job owns it",
        "Its state, Kueue's reason, its position while it waits and the quota it holds.",
    )
    workloads.add_argument("--queue", metavar="Q", help="only this LocalQueue's")
    workloads.add_argument(
        "--kind", metavar="KIND.GROUP", help="only this owner kind (Job.batch, RayCluster.ray.io)"
    )
    _size_options(
        _command(
            commands,
            "fit",
            "would a Ray cluster of this size fit now? (and what would)",
            "The verdict Kueue's scheduler would reach: fits-now, must-wait or never-fits, "
            "with the numbers and the largest size that would start now.",
        )
    )
    up = _command(commands, "up", "submit a Ray cluster through Kueue")
    up.add_argument("name", metavar="NAME", help="the cluster's name")
    _ray_cluster_options(up, "the Ray image of head and workers")
    up.add_argument("--wait", action="store_true", help="print progress until it is ready")
    up.add_argument(
        "--ephemeral", action="store_true", help="delete it when this kernel shuts down"
    )
    _command(commands, "status", "one cluster's state, or every cluster's").add_argument(
        "name", nargs="?", metavar="NAME", help="the cluster (default: all)"
    )
    _on_cluster(commands, "watch", "a live status widget of one cluster")
    _on_cluster(commands, "down", "delete a cluster", "Its Workload and pods follow.")
    scale = _on_cluster(
        commands,
        "scale",
        "pin an elastic cluster at N workers",
        "auto gives the size back to the Ray autoscaler; a scale-up is fitted first and "
        "waits for quota as a Kueue workload slice.",
    )
    scale.add_argument("workers", metavar="N|auto", help="a whole number, or 'auto'")
    scale.add_argument(
        "--dry-run", action="store_true", help="only say whether the new size would fit"
    )
    _on_cluster(
        commands,
        "stop",
        "stop a cluster, keeping it",
        "Its Workload is deactivated: its pods go, its quota is freed, its spec stays.",
    )
    _on_cluster(commands, "resume", "queue a stopped cluster again, at the size it had")
    _command(commands, "list", "the namespace's Ray clusters")
    job = _on_cluster(
        commands,
        "job",
        "run COMMAND on a ready cluster as a Ray job",
        "Shows a live view of the job and its log (dw.JobView).",
    )
    job.add_argument(
        "--working-dir", dest="working_dir", metavar="DIR", help="a local directory to upload"
    )
    job.add_argument(
        "entrypoint", nargs=argparse.REMAINDER, metavar="-- COMMAND...", help="what to run"
    )
    _on_cluster(commands, "jobs", "the Ray jobs of a cluster")
    for word in _KIND_REQUESTS:  # %dw rayjob ..., %dw trainjob ...
        summary, _ = _KIND_HELP[word]
        kind = _command(
            commands,
            word,
            summary,
            "fit: would it fit now; submit: create it; status [NAME]: its state, or all; "
            "delete NAME: delete it. The options below are fit's and submit's.",
        )
        kind.add_argument("action", choices=("fit", "submit", "status", "delete"))
        kind.add_argument("name", nargs="?", metavar="NAME", help="the job's name")
        kind.add_argument(
            "rest",
            nargs=argparse.REMAINDER,
            metavar="OPTIONS [-- COMMAND...]",
            help="fit's and submit's options (below), then -- and the command",
        )
    help_ = _command(commands, "help", "this text, or one command's (%dw COMMAND --help)")
    help_.add_argument("topic", nargs="?", metavar="COMMAND")
    return parser


def command_help(name: str | None = None) -> str:
    """``%dw --help`` (every command) or ``%dw NAME --help`` (one command, its options)."""
    parser = _parser()
    commands = _subcommands(parser)
    if name is None:
        lines = [*textwrap.wrap(parser.description or "", WIDTH), ""]
        for sub in commands.values():
            usage = sub.format_usage().removeprefix("usage: ").rstrip()
            lines.append(usage.replace("\n" + " " * len("usage: "), "\n"))
            lines += textwrap.wrap(
                sub.description or "", WIDTH, initial_indent="    ", subsequent_indent="    "
            )
            lines.append("")
        return "\n".join(lines).rstrip() + "\n"
    one = commands.get(name)
    if one is None:
        raise UsageError(f"usage: %dw help COMMAND: no command {name!r}")
    text = one.format_help()
    if name in _KIND_HELP:
        more = _KIND_HELP[name][1]()
        more.usage = argparse.SUPPRESS  # its options only
        text = text.rstrip() + "\n\n" + more.format_help().strip("\n")
    return text.rstrip() + "\n"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


SIZE_FIELDS = ("queue", "workers", "min_workers", "max_workers", "worker_cpu", "worker_memory",
               "worker_gpu", "head_cpu", "head_memory", "tolerations", "node_selector",
               "priority")  # fmt: skip


def run(line: str, out: Callable[[str], None] | None = None) -> Any:
    """Run one ``%dw`` line; return what it shows (None after a printed error or help)."""
    out = out or (lambda text: print(text, file=sys.stdout))
    try:
        words = shlex.split(line)
        asked = _help_asked(words)
        if asked is not None:
            out(command_help(asked or None))
            return None
        args = _parser().parse_args(words)
    except (UsageError, ValueError) as err:
        out(f"{err}\n\n{_help_for(line)}")
        return None
    if args.command is None:
        out(command_help())
        return None
    try:
        return _COMMANDS[args.command](args, out)
    except UsageError as err:
        out(f"{err}\n\n{command_help(args.command)}")
    except InvalidRequest as err:
        fields = "; ".join(f"{k}: {v}" for k, v in err.errors.items())
        out(f"{err.error}: {fields or err.reason}\n{err.hint or ''}".rstrip())
    except DWError as err:
        reason = f": {err.reason}" if err.reason else ""
        out(f"{err.error}{reason}\n{err.hint or ''}".rstrip())
    return None


def _help_for(line: str) -> str:
    """The help of the command a line names, else the overview."""
    word = line.split()[0] if line.split() else ""
    return command_help(word if word in _subcommands(_parser()) else None)


def _help_asked(words: list[str]) -> str | None:
    """The command whose help the words ask for ("" for the overview), or None: ``help``,
    ``help COMMAND``, ``--help``/``-h`` alone or anywhere before a ``--``."""
    if words and words[0] == "help":
        return words[1] if len(words) > 1 else ""
    before = words[: words.index("--")] if "--" in words else words
    if any(w in ("--help", "-h") for w in before):
        first = before[0] if before and before[0] not in ("--help", "-h") else ""
        return first
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
        options = _Parser(prog="%dw job")
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
    options = _Parser(prog="%dw rayjob")
    _ray_cluster_options(options, "the Ray image of the job's cluster")
    options.add_argument(
        "--mode",
        dest="submission_mode",
        metavar="K8sJobMode|SidecarMode",
        help="how KubeRay submits COMMAND (default K8sJobMode: a submitter pod)",
    )
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
    options = _Parser(prog="%dw trainjob")
    for flag, metavar, text in (
        ("--runtime", "R", "the ClusterTrainingRuntime (torch-distributed, ...)"),
        ("--queue", "Q", "LocalQueue (default: the namespace's default queue)"),
        ("--priority", "CLASS", "a WorkloadPriorityClass (Kueue's priority)"),
        ("--cpu", "C", "CPU per node"),
        ("--memory", "M", "memory per node"),
        ("--gpu", "G", "GPUs per node"),
        ("--image", "I", "the trainer's image (default: the runtime's)"),
    ):
        options.add_argument(flag, metavar=metavar, help=text)
    options.add_argument(
        "--nodes", dest="num_nodes", type=int, metavar="N", help="number of training nodes"
    )
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


_KIND_HELP: dict[str, tuple[str, Callable[[], argparse.ArgumentParser]]] = {
    "rayjob": ("a RayJob: COMMAND on a Ray cluster of its own, through Kueue", _rayjob_options),
    "trainjob": ("a TrainJob (Kubeflow Trainer) on a runtime, through Kueue", _trainjob_options),
}
"""Each workload kind's ``%dw <word> --help``: what it is, and the parser of the options its
``fit`` and ``submit`` take (the same parser its request reads)."""


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
