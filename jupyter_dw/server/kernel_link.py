"""How this server's kernels find it and prove they are its own: a random secret in a file only
this user can read, named by a variable every kernel inherits. The secret opens jupyter_dw's
API only, never the rest of Jupyter (docs/explanation/architecture.md, "Kernels").
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
from pathlib import Path

from ..names import KERNEL_AUTH_SCHEME, KERNEL_LINK_ENV

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
WILDCARDS = frozenset({"", "0.0.0.0", "::", "localhost"})
KERNEL_USER = "jupyter-dw-kernel"
"""The jupyter_server user name of a request made with the kernel secret."""


def kernel_url(ip: str, port: int, base_url: str, tls: bool) -> str:
    """Where a kernel in the same pod reaches the server: loopback unless the server listens
    on one address only."""
    host = LOOPBACK if ip in WILDCARDS else ip
    if ":" in host:
        host = f"[{host}]"
    base = "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"
    return f"{'https' if tls else 'http'}://{host}:{port}{base}"


class KernelLink:
    """The secret and the file that carries it. ``path`` is known at once (kernels inherit
    it); the file is written once the server listens (:meth:`publish`)."""

    def __init__(self, runtime_dir: str, configured_port: int) -> None:
        self.secret = secrets.token_urlsafe(32)
        # Named by the configured port, not the PID: a restarted server rewrites the same
        # file, and kernels that outlived it read its new secret there.
        self.path = Path(runtime_dir) / f"jupyter_dw-{configured_port}.json"
        os.environ[KERNEL_LINK_ENV] = str(self.path)

    def publish(self, url: str, version: str) -> None:
        """Write ``{"url", "version", "secret", "pid"}``, readable by this user only."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        content = {"url": url, "version": version, "secret": self.secret, "pid": os.getpid()}
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(content, out)
        os.replace(temporary, self.path)
        log.info("jupyter_dw: kernels read through this server (%s)", self.path)

    def withdraw(self) -> None:
        """Remove the file and the variable if they are still this server's (a newer server
        may own the name now)."""
        try:
            if json.loads(self.path.read_text()).get("secret") != self.secret:
                return
            self.path.unlink()
        except (OSError, ValueError):
            pass
        if os.environ.get(KERNEL_LINK_ENV) == str(self.path):
            del os.environ[KERNEL_LINK_ENV]

    def authenticates(self, authorization: str | None) -> bool:
        """Whether ``Authorization`` carries this server's kernel secret."""
        scheme, _, given = (authorization or "").partition(" ")
        if scheme != KERNEL_AUTH_SCHEME or not given:
            return False
        return hmac.compare_digest(given.strip().encode(), self.secret.encode())
