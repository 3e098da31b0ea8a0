"""A real Ray head on 127.0.0.1, for the tests that need one (the dashboard, Ray's token auth,
Ray jobs) and for ``make demo`` (:mod:`.ray_standin`).

``ray[default]`` from PyPI, in a virtualenv of its own so the product's dependencies stay clean,
built once and kept in ``~/.cache/jupyter-dw/ray-venv-<version>`` (about 80 s and 400 MB on 2
cores); ``DW_RAY_VENV`` points elsewhere.

Every head runs with ``RAY_AUTH_MODE`` pinned (``disabled``, or ``token`` with the token given)
and a private ``HOME`` and temp dir, both removed afterwards: Ray reads a token file from
``~/.ray/auth_token`` and turns token auth on by itself when it finds one, so nothing one test
leaves may switch auth on or off in another.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from .controlplane import free_port

RAY_VERSION = "2.60.0"
RAY_VENV = Path(
    os.environ.get("DW_RAY_VENV", Path.home() / ".cache" / "jupyter-dw" / f"ray-venv-{RAY_VERSION}")
)
START_TIMEOUT = 120.0
READY_PATH = "/api/cluster_status"


class RayHeadFailed(RuntimeError):
    """The Ray head exited or did not answer in time (its log's end is the message)."""


def ray_venv() -> Path:
    """The Ray virtualenv, built when missing (a stamp marks a finished install)."""
    stamp = RAY_VENV / ".installed"
    if stamp.exists():
        return RAY_VENV
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(RAY_VENV)], check=True)
    pip = [str(RAY_VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"ray[default]=={RAY_VERSION}"], check=True)
    stamp.touch()
    return RAY_VENV


def status_of(url: str, headers: dict[str, str] | None = None, method: str = "GET") -> int:
    """The status Ray itself answers ``url`` with (no proxy, no browser)."""
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except OSError:
        return 0


@contextlib.contextmanager
def ray_head(token: str | None = None, client_port: int | None = None) -> Iterator[int]:
    """A Ray head with one CPU, its own ports, ``HOME`` and temp dir; yields the dashboard's
    port. ``token`` None: ``RAY_AUTH_MODE=disabled``; else token auth with that token.
    ``client_port``: Ray Client's port, for a test that connects to it. Stopped afterwards by
    signalling its process group: ``ray stop`` would stop every Ray of this user on the
    machine."""
    venv = ray_venv()
    temp = tempfile.mkdtemp(prefix="dwray-", dir="/tmp")  # short: Ray puts sockets in it
    home = Path(temp) / "home"
    home.mkdir()
    port = free_port()
    command = [
        str(venv / "bin" / "ray"),
        "start",
        "--head",
        "--block",
        "--num-cpus=1",
        "--include-dashboard=true",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={port}",
        f"--port={free_port()}",
        f"--ray-client-server-port={client_port or free_port()}",
        f"--dashboard-agent-listen-port={free_port()}",
        "--min-worker-port=0",
        "--max-worker-port=0",
        "--node-ip-address=127.0.0.1",
        f"--temp-dir={temp}/ray",
        "--disable-usage-stats",
    ]
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("RAY_") and key != "HOME"
    }
    environ.update(HOME=str(home), RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    # Loopback only. ``--node-ip-address=127.0.0.1`` alone is not kept: Ray swaps a loopback
    # node address for the machine's network address (``resolve_ip_for_localhost`` in
    # ray/_private/services.py), and its GCS, raylet, agents and client server then listen on
    # every interface and connect to each other over that address. With this variable off,
    # ``get_node_ip_address`` answers the loopback address (Ray's setting for single-machine
    # Windows and macOS; on Linux it changes nothing else for a head), and every one of them
    # listens and connects on 127.0.0.1 (tests/integration/test_ray_loopback.py samples their
    # sockets; DW_RAY_LOOPBACK=off there shows the sockets without it).
    if os.environ.get("DW_RAY_LOOPBACK", "on") == "on":
        environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    # gRPC's fork handlers off: Ray Client's proxier forks a "specific server" per connection
    # while its gRPC threads run, and with the handlers on, that child now and then dies before
    # it starts ("Other threads are currently calling into gRPC, skipping fork() handlers",
    # then "epoll_wait ... Bad file descriptor"): ray-project/ray#63202. Measured with 100 Ray
    # Client connections to one head each: 4 failed with the handlers on, 0 with them off
    # (tests/cluster/ray_client_starts.py, which sets DW_RAY_GRPC_FORK_SUPPORT=on to compare).
    fork_support = os.environ.get("DW_RAY_GRPC_FORK_SUPPORT", "off") == "on"
    environ["GRPC_ENABLE_FORK_SUPPORT"] = "1" if fork_support else "0"
    # Jobs' ``python`` is the venv's, with Ray, as in a Ray image.
    environ["PATH"] = os.pathsep.join([str(venv / "bin"), environ.get("PATH", "")])
    if token is not None:
        environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    log = Path(temp) / "ray-start.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=environ, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        auth = {"Authorization": f"Bearer {token}"} if token is not None else {}
        while status_of(f"http://127.0.0.1:{port}{READY_PATH}", auth) != 200:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RayHeadFailed(f"the Ray head did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)  # polling the condition: the dashboard answering
        _TEMP_OF_HEAD[port] = Path(temp)
        _PID_OF_HEAD[port] = process.pid
        yield port
    finally:
        _TEMP_OF_HEAD.pop(port, None)
        _PID_OF_HEAD.pop(port, None)
        _stop(process)
        shutil.rmtree(temp, ignore_errors=True)  # Ray's logs, sockets, HOME: nothing is kept


_TEMP_OF_HEAD: dict[int, Path] = {}
"""The temp dir of each running head, by dashboard port (its logs go with it at the end)."""
_PID_OF_HEAD: dict[int, int] = {}
"""The process of each running head's ``ray start --block``, by dashboard port."""


def head_pid(port: int) -> int:
    """The process id of the running head on dashboard ``port``: its ``ray start --block``,
    the leader of a session of its own that every Ray process of the head is started in."""
    return _PID_OF_HEAD[port]


def client_server_logs(port: int) -> str:
    """The end of each Ray Client server's log of the running head on dashboard ``port`` (why
    one did not start), for a failing test's message: a test's failure never reaches the
    fixture that holds the head, and the logs are deleted with it."""
    temp = _TEMP_OF_HEAD.get(port)
    logs = sorted(temp.glob("ray/session_*/logs/ray_client_server*")) if temp else []
    return "".join(
        f"\n--- {log.name} (last 3000 characters)\n{log.read_text(errors='replace')[-3000:]}"
        for log in logs
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to ``ray start --block`` (it stops its processes), then SIGKILL to whatever of
    its process group is left."""
    if process.poll() is None:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=60)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
