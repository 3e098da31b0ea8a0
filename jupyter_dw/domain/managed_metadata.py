"""The metadata of every object jupyter_dw creates for Kueue to admit (a RayCluster, a
TrainJob; a RayJob takes its cluster's): the LocalQueue and priority Kueue reads, and the
labels that find jupyter_dw's objects and a user's again. Pure."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from jupyter_dw.domain.validation import DNS1123_LABEL_MAX_LENGTH, is_label_value
from jupyter_dw.names import (
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    OWNER_ANNOTATION,
    OWNER_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
)


def owner_label_value(identity: str) -> str:
    """A label-safe, deterministic form of ``identity`` for the ``jupyter-dw/owner`` label.

    An identity that is already a valid label value is used as it is. Anything else (``:`` in
    ``system:serviceaccount:ns:name``, ``@`` in an e-mail, more than 63 characters) is made
    readable by replacing invalid characters with ``.`` and suffixed with a hash of the full
    identity, so two identities never share a label value. Use the same function to build the
    selector that lists a user's clusters.
    """
    if identity and is_label_value(identity):
        return identity
    digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
    readable = re.sub(r"[^A-Za-z0-9_.-]+", ".", identity)
    readable = readable[: DNS1123_LABEL_MAX_LENGTH - len(digest) - 1]
    readable = readable.strip("-_.")
    return f"{readable}-{digest}" if readable else digest


def managed_metadata(
    name: str,
    namespace: str,
    queue: str,
    priority: str | None,
    owner: str | None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ``metadata`` of object ``name``: its own ``labels`` (a cluster's), then the
    LocalQueue, jupyter_dw's mark, the WorkloadPriorityClass when one is named, and who
    created it (``owner``: a label to select by, an annotation to read as it was given)."""
    labels = dict(labels or {})
    labels[QUEUE_LABEL] = queue
    labels[MANAGED_BY_LABEL] = MANAGED_BY_VALUE
    if priority:
        labels[PRIORITY_CLASS_LABEL] = priority
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels}
    if owner:
        labels[OWNER_LABEL] = owner_label_value(owner)
        metadata["annotations"] = {OWNER_ANNOTATION: owner}
    return metadata
