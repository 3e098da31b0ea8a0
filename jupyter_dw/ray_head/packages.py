"""A local ``working_dir`` shipped to a Ray cluster as Ray's own SDK ships it: zipped (files at
the archive's root), named by its content's hash ``_ray_pkg_<hash>.zip``, uploaded with ``PUT
/api/packages/gcs/<name>`` unless the cluster has it already, and then named in the job's
``runtime_env`` as ``gcs://<name>`` (``ray/_private/runtime_env/packaging.py``).
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from pathlib import Path

from ..domain.errors import InvalidRequest
from .jobs_api import RayJobsClient

PACKAGE_PREFIX = "_ray_pkg_"
MAX_PACKAGE_BYTES = 500 * 1024 * 1024
"""Ray's own limit on a package (``GCS_STORAGE_MAX_SIZE``, 512 MiB), with some room."""
SKIPPED_DIRS = frozenset({".git", "__pycache__", ".ipynb_checkpoints"})
REMOTE_SCHEMES = ("gcs://", "s3://", "gs://", "https://", "http://", "file://")


def is_remote(working_dir: str) -> bool:
    """Whether ``working_dir`` is a URI Ray fetches itself (nothing to upload)."""
    return working_dir.startswith(REMOTE_SCHEMES)


def zip_directory(directory: Path) -> bytes:
    """The directory's files, at the archive's root, in a stable order (same content, same
    bytes, same name)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for root, dirs, files in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            for name in sorted(files):
                path = Path(root) / name
                info = zipfile.ZipInfo(str(path.relative_to(directory)), (1980, 1, 1, 0, 0, 0))
                info.external_attr = (path.stat().st_mode & 0o777) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def upload_working_dir(client: RayJobsClient, working_dir: str) -> str:
    """``gcs://_ray_pkg_<hash>.zip`` for local directory ``working_dir``, uploaded to the
    cluster unless it has it already; a remote URI is returned as it is."""
    if is_remote(working_dir):
        return working_dir
    directory = Path(working_dir).expanduser()
    if not directory.is_dir():
        problem = f"{working_dir!r} is not a directory here"
        raise InvalidRequest(
            "Invalid working_dir", problem, "Give a local directory or a remote URI.",
            {"working_dir": problem},
        )  # fmt: skip
    data = zip_directory(directory)
    if len(data) > MAX_PACKAGE_BYTES:
        problem = f"{working_dir!r} zips to {len(data) >> 20} MiB, more than Ray accepts"
        raise InvalidRequest(
            "working_dir too large", problem, "Leave data out; read it from storage instead.",
            {"working_dir": problem},
        )  # fmt: skip
    package = f"{PACKAGE_PREFIX}{hashlib.sha1(data).hexdigest()}.zip"
    if not client.package_exists(package):
        client.upload_package(package, data)
    return f"gcs://{package}"
