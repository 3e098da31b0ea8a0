"""A RayCluster's Ray token: which credential its ``authOptions`` ask for, where it is found,
and when it may be used. Domain rules over one read, so this lives in the core: the session
(``jupyter_dw.k8s``) makes the one ``get`` of the Secret (``KubeSession.get_object``) and
knows its own bearer token; the rules are ``jupyter_dw.domain.ray_auth``'s.
"""

from __future__ import annotations

from ..domain.ray_auth import (
    RayToken,
    TokenUnavailable,
    ray_auth_of,
    token_from_secret,
    token_secret_name,
)
from ..k8s.errors import KubeApiError
from ..k8s.resources import SECRET
from ..k8s.session import KubeSession
from ..k8s.watch_cache import Object


def ray_token(session: KubeSession, raycluster: Object) -> RayToken:
    """The Ray token of ``raycluster`` (``authOptions.mode: token``) from the Secret KubeRay
    made for it: one ``get`` (never a list or watch of Secrets), used only when its controller
    owner is this RayCluster's UID. Raises :class:`TokenUnavailable` (no such Secret yet, owned
    by something else, no token in it) or ``KubeForbidden`` naming ``get secrets``. Blocking.

    A cluster with Kubernetes-delegated auth (``enableK8sTokenAuth``) has no Secret: Ray asks
    the API server about the caller's own Kubernetes token, so the token is the session's
    bearer token (the workbench's identity, whose RBAC Ray then checks)."""
    name = str((raycluster.get("metadata") or {}).get("name") or "")
    if ray_auth_of(raycluster).mode == "k8s":
        own = session.api.bearer_token()
        if own is None:
            raise TokenUnavailable(
                "no_bearer_token",
                f"RayCluster {name} delegates Ray authentication to Kubernetes, which "
                "checks a bearer token; this server authenticates to Kubernetes otherwise "
                "(a client certificate)",
            )
        return RayToken(own)
    secret_name = token_secret_name(name)
    try:
        secret = session.get_object(SECRET, secret_name)
    except KubeApiError as err:
        if err.api_status != 404:
            raise
        raise TokenUnavailable(
            "secret_missing",
            f"no Secret {secret_name} with RayCluster {name}'s token yet: KubeRay makes it "
            "when it accepts the cluster",
        ) from None
    return token_from_secret(secret, raycluster)
