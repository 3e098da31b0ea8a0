"""Credentials for the API server: the pod's service account, else a kubeconfig like kubectl.
The rotated token is re-read when its file changes and after a 401; never logged
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .errors import KubeConfigError

if TYPE_CHECKING:
    # The Kubernetes client is ~1,000 modules (about 0.3 s to import on an idle machine):
    # imported where credentials are loaded, on the session's start thread, never while the
    # Jupyter server loads the extension.
    from kubernetes import client

log = logging.getLogger(__name__)

DEFAULT_SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_KUBECONFIG = "~/.kube/config"
# Watches hold one pooled connection each; leave room for requests next to them.
MIN_CONNECTION_POOL = 16

SERVICE_HOST_ENV_NAME = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV_NAME = "KUBERNETES_SERVICE_PORT"
"""What the kubelet sets in every pod: where the API server is."""

CredentialSource = Literal["service_account", "kubeconfig"]


@dataclass
class Credentials:
    """A ready ``kubernetes.client.Configuration`` plus where it came from.

    ``namespace`` is the service account's namespace file, or the kubeconfig context's
    namespace (``default`` when the context names none, as kubectl does). ``description``
    says where the credentials were read from, for ``GET context`` and error messages.
    """

    configuration: client.Configuration
    source: CredentialSource
    namespace: str | None
    description: str
    _reload: Callable[[], None] = field(repr=False, default=lambda: None)

    def reload(self) -> None:
        """Re-read the token now (after a 401: the token may have rotated under us)."""
        self._reload()

    def api_client(self) -> client.ApiClient:
        """A new ``ApiClient`` on these credentials."""
        from kubernetes import client

        return client.ApiClient(self.configuration)


class _TokenFile:
    """A token file re-read when it changes (kubelet rotation) or when forced (after a 401)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._signature: tuple[int, int, int] | None = None
        self._token = ""

    def current(self, force: bool = False) -> str:
        """The token, re-read if the file changed since the last read or if ``force``."""
        st = self._path.stat()  # follows the kubelet's ..data symlink to the real file
        signature = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            if force or signature != self._signature:
                token = self._path.read_text().strip()
                if not token:
                    raise KubeConfigError(
                        "The service-account token file is empty",
                        str(self._path),
                        "The kubelet writes it when the pod starts; check the pod's "
                        "automountServiceAccountToken setting.",
                    )
                self._token, self._signature = token, signature
            return self._token


def load_credentials(
    service_account_dir: str | os.PathLike[str] | None = None,
    kube_context: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Credentials:
    """Credentials from the service-account directory if it holds a token and the pod
    environment names the API server, else from ``KUBECONFIG`` / ``~/.kube/config``.

    ``kube_context`` picks a kubeconfig context (default: the current one); it is ignored
    in-cluster. Raises :class:`KubeConfigError` saying what was tried.
    """
    env = os.environ if environ is None else environ
    sa_dir = Path(service_account_dir or DEFAULT_SERVICE_ACCOUNT_DIR)
    in_pod = bool(env.get(SERVICE_HOST_ENV_NAME)) and bool(env.get(SERVICE_PORT_ENV_NAME))
    if in_pod and (sa_dir / "token").is_file():
        return _service_account_credentials(sa_dir, env)
    tried = (
        f"no service-account token in {sa_dir}"
        if in_pod
        else f"{SERVICE_HOST_ENV_NAME}/{SERVICE_PORT_ENV_NAME} are not set (not in a pod)"
    )
    return _kubeconfig_credentials(kube_context, env, tried)


def _service_account_credentials(sa_dir: Path, env: Mapping[str, str]) -> Credentials:
    from kubernetes import client
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    cfg = client.Configuration()
    token_path = sa_dir / "token"
    loader = InClusterConfigLoader(
        token_filename=str(token_path),
        cert_filename=str(sa_dir / "ca.crt"),
        try_refresh_token=False,  # our own hook below re-reads on change and on demand
        environ=env,
    )
    try:
        loader.load_and_set(cfg)  # validates host/port, token and CA; sets host and CA
    except ConfigException as err:
        raise KubeConfigError(
            "The pod's service account cannot be used",
            f"{err} (directory {sa_dir})",
            "Check that the service-account token is mounted into the pod.",
        ) from err
    token = _TokenFile(token_path)

    def refresh(configuration: client.Configuration) -> None:
        # Called by the client before every request: cheap stat, re-read only on change.
        configuration.api_key["authorization"] = f"Bearer {token.current()}"

    def reload() -> None:
        cfg.api_key["authorization"] = f"Bearer {token.current(force=True)}"

    refresh(cfg)
    cfg.refresh_api_key_hook = refresh
    _widen_pool(cfg)
    namespace_file = sa_dir / "namespace"
    namespace = namespace_file.read_text().strip() if namespace_file.is_file() else None
    return Credentials(
        configuration=cfg,
        source="service_account",
        namespace=namespace or None,
        description=f"service account token in {sa_dir}",
        _reload=reload,
    )


def _kubeconfig_credentials(
    kube_context: str | None, env: Mapping[str, str], tried: str
) -> Credentials:
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    # Read KUBECONFIG now: the client's own default is frozen when it is first imported.
    config_file = env.get("KUBECONFIG") or os.path.expanduser(DEFAULT_KUBECONFIG)

    def load(cfg: client.Configuration) -> None:
        config.load_kube_config(
            config_file=config_file,
            context=kube_context,
            client_configuration=cfg,
            persist_config=False,
        )

    cfg = client.Configuration()
    try:
        load(cfg)
        contexts, current = config.list_kube_config_contexts(config_file=config_file)
    except (ConfigException, OSError, ValueError) as err:
        raise KubeConfigError(
            "No Kubernetes credentials found",
            f"{tried}; kubeconfig {config_file}: {err}",
            "Run the server in a pod with a service account, or point KUBECONFIG at a "
            "kubeconfig file (and optionally set JupyterDW.kube_context).",
        ) from err
    chosen = next((c for c in contexts if c.get("name") == kube_context), None) or current
    context_name = chosen.get("name", "")
    namespace = (chosen.get("context") or {}).get("namespace") or "default"

    def reload() -> None:
        fresh = client.Configuration()
        load(fresh)
        cfg.api_key = fresh.api_key
        cfg.refresh_api_key_hook = fresh.refresh_api_key_hook

    _widen_pool(cfg)
    return Credentials(
        configuration=cfg,
        source="kubeconfig",
        namespace=namespace,
        description=f"kubeconfig {config_file}, context {context_name!r}",
        _reload=reload,
    )


def _widen_pool(cfg: client.Configuration) -> None:
    cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize or 0, MIN_CONNECTION_POOL)
