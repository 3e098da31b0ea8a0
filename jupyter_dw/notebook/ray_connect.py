"""Ray itself in the kernel, for those who have it: Ray Client and ``JobSubmissionClient``.
Both authenticated with the cluster's token; Ray is imported here only, lazily. Why Ray Client's
token goes into this kernel's environment: docs/explanation/security.md.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from typing import Any

from ..core.errors import RayNotInstalled, RayVersionMismatch
from ..domain.ray_auth import RAY_AUTH_MODE_ENV, RAY_AUTH_TOKEN_ENV
from .runtime import runtime

INSTALL_HINT = "pip install 'jupyter-dw[ray]' (or ray[client]=={version}), then restart the kernel."


def _ray(cluster_image_version: str | None) -> Any:
    try:
        import ray
    except ImportError:
        raise RayNotInstalled(
            "Ray is not installed in this kernel",
            "h.ray_init() and h.jobs use Ray's own client",
            INSTALL_HINT.format(version=cluster_image_version or "<the cluster's Ray>"),
        ) from None
    return ray


def installed_ray() -> str | None:
    """The version of the ``ray`` package in this kernel, or None."""
    try:
        return importlib.metadata.version("ray")
    except importlib.metadata.PackageNotFoundError:
        return None


def ray_init(cluster: str, image: str | None, problems: list[str], **kwargs: Any) -> Any:
    """``ray.init("ray://<cluster's client address>", **kwargs)`` with the cluster's token in
    this process's environment. ``problems``: what makes the kernel's Ray or Python differ
    from the image's (:func:`jupyter_dw.notebook.api.version_mismatches`); any is a
    :class:`RayVersionMismatch` before Ray is touched."""
    if problems:
        raise RayVersionMismatch(
            f"This kernel cannot use Ray Client with cluster {cluster}",
            " ".join(problems),
            "Ray Client needs the same Ray and Python versions on both sides: use a kernel "
            f"that matches {image}, or submit work with h.submit_job(...) instead (any version).",
        )
    ray = _ray(None)
    jobs = runtime().core.jobs
    address = jobs.client_address(cluster)
    token = jobs.endpoint(cluster).token
    if token is not None:
        # Ray Client reads these when it builds its channel, and caches the token for the
        # process: one cluster's token per kernel (docs/explanation/security.md).
        os.environ[RAY_AUTH_MODE_ENV] = "token"
        os.environ[RAY_AUTH_TOKEN_ENV] = token.reveal()
    else:
        os.environ.pop(RAY_AUTH_TOKEN_ENV, None)
        os.environ[RAY_AUTH_MODE_ENV] = "disabled"
    _reload_auth(ray)
    return ray.init(address, **kwargs)


def _reload_auth(ray: Any) -> None:
    """Make Ray read ``RAY_AUTH_MODE`` and the token again from the environment just set.

    Ray reads the mode into its config when ``ray`` is imported and caches the token on first
    use, so in a kernel that ran ``import ray`` before ``h.ray_init()`` (the usual order),
    Ray Client would connect without the token, and a token-protected head lets it time out
    ("ray client connection timeout") instead of saying why. Ray 2.60 reloads both this way
    in its own tests (``ray._private.authentication_test_utils.reset_auth_token_state``);
    these are Ray internals, so a Ray without them is left as it is. Never while connected:
    ``ray.init`` then refuses a second connection with its own clear error."""
    if ray.is_initialized():
        return
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def job_submission_client(cluster: str) -> Any:
    """Ray's ``JobSubmissionClient`` for the cluster's head, with ``Authorization: Bearer``
    (the process environment is not touched)."""
    _ray(None)
    from ray.job_submission import JobSubmissionClient

    endpoint = runtime().core.jobs.endpoint(cluster)
    return JobSubmissionClient(endpoint.base_url, headers=endpoint.headers())


_IMAGE_TAG = re.compile(r"(?:^|[/:])ray(?:-ml|-llm)?:(\d+\.\d+\.\d+)(?:-py(\d)(\d+))?")


def version_mismatches(
    image: str | None, kernel_ray: str | None, kernel_python: tuple[int, int]
) -> list[str]:
    """Why ``ray.init`` from this kernel may fail against a cluster running ``image``: Ray
    Client needs the same Ray version and the same Python minor version on both sides."""
    if not image:
        return []
    match = _IMAGE_TAG.search(image)
    if match is None:
        return []
    problems = []
    ray_version, py_major, py_minor = match.groups()
    if kernel_ray is not None and kernel_ray != ray_version:
        problems.append(
            f"This kernel has Ray {kernel_ray}, the cluster runs Ray {ray_version} ({image}): "
            f"ray.init fails across versions; pip install 'ray[client]=={ray_version}'."
        )
    if py_major is not None:
        wanted = (int(py_major), int(py_minor))
        if wanted != kernel_python:
            problems.append(
                f"This kernel runs Python {kernel_python[0]}.{kernel_python[1]}, the cluster "
                f"image Python {wanted[0]}.{wanted[1]}: ray.init needs the same minor version."
            )
    return problems
