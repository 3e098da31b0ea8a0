"""``jupyter dw`` (also ``python -m jupyter_dw``): ``doctor`` and ``rbac``.
For workbench image maintainers; a surface over :mod:`jupyter_dw.core.doctor` with no tornado or
jupyter_server import, so it runs wherever the package is installed.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import TextIO

from ._version import __version__
from .core.doctor import Check, DoctorReport, Subject, render_rbac, run_doctor
from .core.errors import NEEDED_PERMISSIONS

PROG = "jupyter dw"
EXAMPLE_ROLE = "jupyter-dw"
EXAMPLE_CLUSTER_ROLE = "jupyter-dw-cluster-reader"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (2 for a usage error)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command == "doctor":
        _log_to_stderr(args.verbose)
        return doctor(args.json, args.namespace, args.context)
    return rbac(args.namespace, args.service_account, args.required_only)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="jupyter_dw for workbench image maintainers: check a workbench's access "
        "to Kueue and KubeRay, and the RBAC it needs.",
    )
    parser.add_argument("--version", action="version", version=f"jupyter_dw {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    doc = commands.add_parser(
        "doctor",
        help="check the API server, Kueue, KubeRay, queues and every permission",
        description="Check, from the identity jupyter_dw uses (the pod's service account, "
        "else the kubeconfig), that the API server answers, which Kueue and KubeRay API "
        "versions are served, that Kueue's visibility API answers, which LocalQueues the "
        "namespace has, and every permission each feature needs. Prints the RBAC that "
        "grants what is missing. Exit status: 0 when every required check passes, else 1.",
    )
    doc.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    doc.add_argument("--namespace", help="namespace to check (default: as jupyter_dw picks it)")
    doc.add_argument("--context", help="kubeconfig context outside a pod (default: current)")
    doc.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also log every Kubernetes call that failed (on stderr)",
    )
    rb = commands.add_parser(
        "rbac",
        help="print the least-privilege Role and optional ClusterRole as YAML",
        description="Print the Role (required) and ClusterRole (optional: quota, headroom, "
        "priorities, admission checks) jupyter_dw needs, with bindings for one service "
        "account. Without --namespace/--service-account the YAML has ${NAMESPACE} and "
        "${SERVICE_ACCOUNT} placeholders (fill them in with envsubst).",
    )
    rb.add_argument("--namespace", default="${NAMESPACE}", help="the workbench's namespace")
    rb.add_argument(
        "--service-account",
        default="${SERVICE_ACCOUNT}",
        help="the workbench's service account",
    )
    rb.add_argument(
        "--required-only", action="store_true", help="leave out the optional ClusterRole"
    )
    return parser


# -- doctor ----------------------------------------------------------------------------------


def doctor(
    as_json: bool = False,
    namespace: str | None = None,
    context: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """``jupyter dw doctor``: run the checks, print them, return 0 or 1."""
    out = out or sys.stdout
    err = err or sys.stderr
    progress = _ProgressLine(err)
    try:
        report = run_doctor(namespace=namespace, kube_context=context, progress=progress)
    finally:
        progress.done()
    if as_json:
        json.dump(report.to_json(), out, indent=2)
        out.write("\n")
    else:
        out.write(format_report(report))
    return report.exit_code


def _log_to_stderr(verbose: bool) -> None:
    """The table already says what failed: log lines (one per failed Kubernetes call) only
    with ``--verbose``, and then on stderr."""
    logger = logging.getLogger("jupyter_dw")
    if verbose:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.setLevel(logging.INFO)
    else:
        handler = logging.NullHandler()  # not Python's last-resort stderr printer either
    logger.addHandler(handler)


class _ProgressLine:
    """One status line on ``stream`` while checks run: rewritten in place on a terminal, one
    line per step otherwise (CI logs). Never on stdout, so ``--json`` stays clean."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())

    def __call__(self, message: str) -> None:
        text = f"{PROG} doctor: {message}..."
        if self.tty:
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()


def format_report(report: DoctorReport) -> str:
    """The table, a verdict, hints for what failed, and the RBAC fix."""
    lines = [
        f"{PROG} doctor: namespace {report.namespace or '?'}, identity {report.identity or '?'}",
    ]
    if report.api_server:
        lines.append(f"  API server {report.api_server}; {report.credentials}")
    lines.append("")
    rows = [("STATUS", "CHECK", "FOUND / UNLOCKS")]
    for check in report.checks:
        rows.append((check.status, _check_name(check), _check_text(check)))
    width = [max(len(row[i]) for row in rows) for i in range(2)]
    for status, name, text in rows:
        lines.append(f"  {status:<{width[0]}}  {name:<{width[1]}}  {text}".rstrip())
    lines.append("")
    failing = [c for c in report.checks if c.failing]
    optional = [c for c in report.checks if c.status == "optional-missing"]
    if failing:
        lines.append(f"NOT READY: {len(failing)} required check(s) failed:")
        for check in failing:
            lines.append(f"  - {check.name}: {check.detail}")
            if check.hint:
                lines.append(f"    {check.hint}")
    else:
        lines.append("READY: every required check passed.")
    if optional:
        features = sorted({c.unlocks for c in optional})
        lines.append(
            f"{len(optional)} optional check(s) missing; without them jupyter_dw cannot: "
            + "; ".join(features)
            + "."
        )
        for check in optional:
            if check.kind != "permission" and check.hint:
                lines.append(f"  - {check.name}: {check.hint}")
    if report.fix:
        lines += [
            "",
            "To grant what is missing, a cluster administrator applies this YAML "
            "(kubectl apply -f FILE):",
            "",
            report.fix.rstrip("\n"),
        ]
    return "\n".join(lines) + "\n"


def _check_name(check: Check) -> str:
    if check.kind == "permission":
        return f"{check.name} ({check.scope})"
    return check.name


def _check_text(check: Check) -> str:
    if check.kind == "permission":
        return check.unlocks
    return check.detail


# -- rbac ------------------------------------------------------------------------------------


def rbac(
    namespace: str = "${NAMESPACE}",
    service_account: str = "${SERVICE_ACCOUNT}",
    required_only: bool = False,
    out: TextIO | None = None,
) -> int:
    """``jupyter dw rbac``: print the least-privilege RBAC; returns 0."""
    out = out or sys.stdout
    out.write(example_rbac(namespace, service_account, optional=not required_only))
    return 0


def example_rbac(namespace: str, service_account: str, *, optional: bool = True) -> str:
    """The Role (every required permission) and, with ``optional``, the ClusterRole (every
    optional one), bound to ``service_account`` in ``namespace``."""
    subject = Subject("ServiceAccount", service_account, namespace)
    required = [p for p in NEEDED_PERMISSIONS if p.required]
    extra = [p for p in NEEDED_PERMISSIONS if not p.required]
    text = render_rbac(required, namespace, subject, role_name=EXAMPLE_ROLE)
    if optional:
        text += "---\n" + render_rbac(
            extra, namespace, subject, cluster_role_name=EXAMPLE_CLUSTER_ROLE
        )
    return text


if __name__ == "__main__":
    sys.exit(main())
