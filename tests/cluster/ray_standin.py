"""A real Ray head standing in for the Ray of every RayCluster of a namespace (``make demo``, the
quickstart test): KWOK pods run no Ray, so jobs submitted to a demo cluster run here.

Three parts, stopped together:
- a Ray head on 127.0.0.1 with token authentication (:mod:`.ray_head`, a token of its own);
- a gateway that routes ``/<cluster>/...`` to it (:mod:`.ray_gateway`): the product reaches it
  through ``ray_dashboard_url = http://127.0.0.1:<gateway>/{name}``, the documented shape of
  dashboards behind a gateway that routes by path, so the product's code path is the real one
  (it counts the requests it relays per cluster: :attr:`RayStandIn.requests`);
- a token keeper: KubeRay makes each cluster's token Secret (label ``ray.io/cluster``, owned
  by the cluster) with a random token; the keeper sets it to the head's, so the product reads
  the token it must send where it always does. KubeRay keeps an existing Secret's data, and
  the Secret stays KubeRay's, so the product's owner check still holds.

What it does not stand in for: Ray Client (``ray://``, ``h.ray_init``) routes by host, not by
path, so it is not offered; and one head serves every cluster, so the demo's jobs share it.
"""

from __future__ import annotations

import base64
import contextlib
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import urllib3
from kubernetes import client, watch

from .ray_gateway import RequestCount, ray_gateway
from .ray_head import ray_head

TOKEN_KEY = "auth_token"  # KubeRay's key in the Secret
SECRET_LABEL = "ray.io/cluster"
WATCH_SECONDS = 5  # how often the keeper's watch ends, so that stopping it takes at most this


@dataclass(frozen=True)
class RayStandIn:
    head_port: int
    gateway_port: int
    token: str
    requests: RequestCount = field(default_factory=RequestCount, compare=False)
    """The requests the gateway received, per cluster name."""

    @property
    def dashboard_template(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}/{{name}}"

    @property
    def secret_value(self) -> str:
        """The token as a Secret's ``data`` holds it (base64)."""
        return _encoded(self.token)

    def settings_env(self) -> dict[str, str]:
        """The product's settings (``JUPYTER_DW_*``) that aim it, and its kernels, here."""
        return {"JUPYTER_DW_RAY_DASHBOARD_URL": self.dashboard_template}


@contextlib.contextmanager
def ray_standin(api: client.ApiClient, namespace: str) -> Iterator[RayStandIn]:
    """Start the head, its gateway and the token keeper for ``namespace``; stop all three."""
    token = secrets.token_urlsafe(32)
    requests = RequestCount()
    with (
        ray_head(token) as head_port,
        ray_gateway(head_port, requests) as gateway_port,
        keep_tokens(api, namespace, token),
    ):
        yield RayStandIn(head_port, gateway_port, token, requests)


def holds_token(secret: client.V1Secret, token: str) -> bool:
    return (secret.data or {}).get(TOKEN_KEY) == _encoded(token)


def _encoded(token: str) -> str:
    return base64.b64encode(token.encode()).decode()


@contextlib.contextmanager
def keep_tokens(api: client.ApiClient, namespace: str, token: str) -> Iterator[None]:
    """While in the block, every RayCluster token Secret of ``namespace`` holds ``token``."""
    core = client.CoreV1Api(api)
    stop = threading.Event()

    def keep() -> None:
        while not stop.is_set():
            try:
                for event in watch.Watch().stream(
                    core.list_namespaced_secret,
                    namespace,
                    label_selector=SECRET_LABEL,
                    timeout_seconds=WATCH_SECONDS,
                ):
                    secret = event["object"]
                    if event["type"] in ("ADDED", "MODIFIED") and not holds_token(secret, token):
                        core.patch_namespaced_secret(
                            secret.metadata.name,
                            namespace,
                            {"data": {TOKEN_KEY: _encoded(token)}},
                        )
                    if stop.is_set():
                        return
            except (client.ApiException, urllib3.exceptions.HTTPError, OSError):
                stop.wait(1)  # a deleted Secret, an API server restart: watch again

    thread = threading.Thread(target=keep, name="ray-token-keeper", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=WATCH_SECONDS * 3)
