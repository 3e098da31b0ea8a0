"""The wheel carries everything: installed into a fresh virtualenv with no Node.js on PATH,
JupyterLab lists the prebuilt sidebar (``jupyter-dw``) and jupyter_server the server extension
(``jupyter_dw``), both enabled and OK."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupyter_dw

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    result = subprocess.run(
        [str(a) for a in args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = ANSI.sub("", result.stdout + result.stderr)
    assert result.returncode == 0, f"{args} failed ({result.returncode}):\n{output[-3000:]}"
    return output


def without_node(path: str) -> str:
    """``path`` without the directories that hold ``node`` or ``npm``."""
    return os.pathsep.join(
        d
        for d in path.split(os.pathsep)
        if d and not any((Path(d) / x).exists() for x in ("node", "npm"))
    )


def test_wheel_installs_both_extensions_without_node(tmp_path: Path) -> None:
    # Build: hatch-jupyter-builder builds the labextension with npm when it is stale (Node.js
    # is needed here, on the build machine, only).
    dist = tmp_path / "dist"
    # The npm build calls `jupyter labextension build`: this interpreter's scripts on PATH.
    build_env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", dist, REPO,
        env=build_env,
    )  # fmt: skip
    [wheel] = dist.glob("jupyter_dw-*.whl")

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    bin_dir = venv / "bin"
    env = {
        "PATH": os.pathsep.join([str(bin_dir), without_node(os.environ.get("PATH", ""))]),
        "HOME": str(tmp_path / "home"),
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
    }
    assert shutil.which("node", path=env["PATH"]) is None
    assert shutil.which("npm", path=env["PATH"]) is None
    run(bin_dir / "python", "-m", "pip", "install", "-q", wheel, "jupyterlab>=4.2,<5", env=env)

    labextensions = run(bin_dir / "jupyter", "labextension", "list", env=env)
    version = re.escape(jupyter_dw.__version__)
    assert re.search(rf"jupyter-dw v{version} enabled\s+OK", labextensions), labextensions
    assert (venv / "share/jupyter/labextensions/jupyter-dw/install.json").is_file()
    assert (
        venv / "share/jupyter/labextensions/jupyter-dw/schemas/jupyter-dw/plugin.json"
    ).is_file()

    server_extensions = run(bin_dir / "jupyter", "server", "extension", "list", env=env)
    assert re.search(r"jupyter_dw\s+enabled", server_extensions), server_extensions
    assert re.search(rf"jupyter_dw\s+{version}\s+OK", server_extensions), server_extensions

    # The widgets' views ship as files of the package (anywidget renders them), with the
    # build's copy of what they share with the sidebar (static/shared/, git-ignored).
    site = next((venv / "lib").glob("python*/site-packages/jupyter_dw/notebook/static"))
    assert {p.name for p in site.rglob("*.js")} >= {
        "dom.js",
        "status.js",
        "queues.js",
        "workers_bar.js",
        "job_view.js",
        "clock.js",
    }

    # The doctor runs from the wheel (console script and python -m), with no cluster in reach.
    no_cluster = {k: v for k, v in env.items() if not k.startswith("KUBERNETES_")}
    no_cluster.update(KUBECONFIG=str(tmp_path / "no-kubeconfig"))
    helped = run(bin_dir / "jupyter", "dw", "doctor", "--help", env=no_cluster)
    assert "--json" in helped, helped
    done = subprocess.run(
        [str(bin_dir / "python"), "-m", "jupyter_dw", "doctor", "--json"],
        env=no_cluster, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)  # stdout is JSON only; progress is on stderr
    assert report["ok"] is False and report["checks"][0]["name"] == "credentials", report


def test_frontend_and_server_versions_are_one() -> None:
    """The sidebar's handshake compares its package.json version with ``GET version``: both
    must come from one release."""
    package = json.loads((REPO / "labextension" / "package.json").read_text())
    assert package["version"] == jupyter_dw.__version__
