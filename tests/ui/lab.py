"""A JupyterLab server as a workbench runs it: a subprocess with the service account's pod
environment (``KUBERNETES_SERVICE_HOST``/``PORT`` and a service-account directory), the
jupyter_dw server extension and the prebuilt sidebar from this checkout's venv. Used by the UI
tests and by benchmarks/bench_sidebar.py.

The server's log goes to a file with the Jupyter token replaced by ``<token>``.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("DW_CHROMIUM", "/usr/bin/chromium")
START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LabServer:
    """``jupyter lab`` on 127.0.0.1 running as ``service_account_dir``'s identity."""

    service_account_dir: Path
    pod_environ: dict[str, str]
    workdir: Path
    log_path: Path
    token: str = field(default_factory=lambda: secrets.token_hex(24))
    port: int = field(default_factory=free_port)
    extra_args: list[str] = field(default_factory=list)
    server_extension: bool = True
    # JupyterLab's announcements plugin (news and update notifications): off unless a test
    # looks at it (no "news?" toast over the screenshots).
    announcements: bool = False
    process: subprocess.Popen[str] | None = None
    _ready: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        config_dir = self.workdir / "config"
        (config_dir / "labconfig").mkdir(parents=True, exist_ok=True)
        # No "news?" toast over the screenshots.
        disabled = {"@jupyterlab/apputils-extension:announcements": not self.announcements}
        (config_dir / "labconfig" / "page_config.json").write_text(
            json.dumps({"disabledExtensions": disabled})
        )
        (config_dir / "jupyter_server_config.json").write_text(
            json.dumps(
                {
                    "ServerApp": {
                        "jpserver_extensions": {
                            "tests.ui.drop_events": True,
                            "tests.ui.core_counters": True,
                        }
                    }
                }
            )
        )
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env.update(self.pod_environ)
        env.update(
            {
                "PYTHONPATH": str(REPO),
                "JUPYTER_CONFIG_DIR": str(config_dir),
                "JUPYTER_RUNTIME_DIR": str(self.workdir / "runtime"),
                "JUPYTER_TOKEN": self.token,
            }
        )
        args = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.workdir}",
            f"--LabApp.user_settings_dir={self.workdir / 'settings'}",
            f"--LabApp.workspaces_dir={self.workdir / 'workspaces'}",
            "--LabApp.expose_app_in_browser=True",
            "--JupyterNotebookApp.expose_app_in_browser=True",  # Notebook 7, same server
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            f"--JupyterDW.service_account_dir={self.service_account_dir}",
        ]
        if os.geteuid() == 0:
            args.append("--allow-root")
        if not self.server_extension:  # the command line wins over every config file
            args.append("--ServerApp.jpserver_extensions=jupyter_dw=False")
        args += self.extra_args
        self.process = subprocess.Popen(
            args,
            cwd=self.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._copy_log, daemon=True).start()
        if not self._ready.wait(START_TIMEOUT) or self.process.poll() is not None:
            self.stop()
            raise RuntimeError(f"jupyter lab did not start; see {self.log_path}")
        # jupyter_server logs its URL before it binds the port (the bind is a callback of its
        # IO loop): a client that connected on the log line alone was refused now and then.
        deadline = time.monotonic() + START_TIMEOUT
        while not _accepts_connections(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"jupyter lab did not listen; see {self.log_path}")
            time.sleep(0.02)  # polling the condition: the port accepting connections

    def _copy_log(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        with self.log_path.open("w") as log:
            for line in self.process.stdout:
                log.write(line.replace(self.token, "<token>"))
                log.flush()
                if f"http://127.0.0.1:{self.port}/" in line:
                    self._ready.set()
        self._ready.set()  # exited: start() notices

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def lab_url(self) -> str:
        """The page that logs the browser in (the token is only in this URL)."""
        return f"{self.url}/lab?token={self.token}"

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """``method {base_url}<path>`` with the token; JSON in and out."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"{self.url}/{path}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as response:
                return response.status, _json_or_text(response.read())
        except urllib.error.HTTPError as err:
            return err.code, _json_or_text(err.read())

    def api_counters(self) -> dict[str, Any]:
        """The extension core's counters (tests/ui/core_counters.py)."""
        status, answer = self.request("GET", "dw-test/counters")
        assert status == 200, (status, answer)
        return dict(answer)

    def api(self, method: str, route: str, body: Any = None) -> Any:
        """``dw/api/<route>``; fails unless 2xx."""
        status, answer = self.request(method, f"dw/api/{route}", body)
        assert 200 <= status < 300, (status, answer)
        return answer


def _json_or_text(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except ValueError:
        return body.decode(errors="replace")


class _StandInPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = (
            "<!doctype html><html><head><title>Ray Dashboard</title></head><body>"
            f"<h1>Ray dashboard stand-in</h1><p id='path'>{self.path}</p></body></html>"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class StandInDashboard:
    """An HTTP server on 127.0.0.1 that stands in for Ray's dashboard (KWOK runs no Ray): the
    Jupyter server's real proxy (``{base_url}dw/ray/<name>/``) is aimed at it with
    :meth:`lab_args`."""

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _StandInPage)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def lab_args(self) -> list[str]:
        return [
            f"--JupyterDW.ray_dashboard_url=http://127.0.0.1:{self.port}/{{namespace}}/{{name}}"
        ]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def workbench_lab(
    workbench,
    dashboard: StandInDashboard | None,
    artifacts: Path,
    tmp_path: Path,
    *extra_args: str,
    rules: list[dict[str, Any]] | None = None,
) -> Iterator[LabServer]:
    """JupyterLab as a data scientist's workbench (may manage Ray clusters and read quota;
    ``rules``: its namespaced RBAC instead of ``namespace_rules()``), its dashboards served by
    ``dashboard`` (None: where ``extra_args`` say); stopped after."""
    identity = workbench(
        rules=namespace_rules() if rules is None else rules, cluster_rules=CLUSTER_READ_RULES
    )
    server = LabServer(
        service_account_dir=identity.service_account_dir,
        pod_environ=identity.environ,
        workdir=tmp_path / "lab",
        log_path=artifacts / "jupyter-server.log",
        extra_args=[*(dashboard.lab_args() if dashboard else []), *extra_args],
    )
    server.workdir.mkdir()
    server.start()
    yield server
    server.stop()


def _accepts_connections(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port`` now."""
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def team_queue(kueue: Any, cpu: str, memory: str = "8Gi") -> None:
    """LocalQueue ``team`` (the namespace's default) into a ClusterQueue ``team`` of ``cpu``
    and ``memory`` in one flavor, both active."""
    flavor = kueue.flavor("default")
    team = kueue.cluster_queue("team", {flavor: {"cpu": cpu, "memory": memory}})
    kueue.wait_active("clusterqueues", team)
    kueue.local_queue("team", team, annotations={"kueue.x-k8s.io/default-queue": "true"})
    kueue.wait_active("localqueues", "team")
