"""What would fit now: the largest worker count with which the same cluster (or a RayJob's
cluster, its submitter counted) would be admitted at once, asked of
:func:`~jupyter_dw.domain.fit.assess_fit`. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from jupyter_dw.domain import fit_words as words
from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.fit import FITS_NOW, FitVerdict, assess_fit
from jupyter_dw.domain.flavor_assigner import PodSetRequest, pod_sets_for_spec
from jupyter_dw.domain.kueue_model import ClusterQueueQuota, LocalQueueInfo
from jupyter_dw.domain.priorities import Ahead
from jupyter_dw.domain.quota import QuotaTree, format_amount
from jupyter_dw.domain.raycluster_manifest import WORKER_GROUP_NAME
from jupyter_dw.domain.scheduling import FlavorTraits


@dataclass(frozen=True)
class Suggestion:
    """A smaller cluster (or a RayJob's smaller cluster) that would be admitted now: the same
    head and per-worker sizes with ``workers`` workers (``requests``: its totals in Kueue's
    units, the head and a RayJob's submitter included)."""

    workers: int
    requests: Mapping[str, Decimal]
    message: str

    def to_json(self) -> dict[str, Any]:
        """``{"workers", "requests", "message"}``, amounts as Kubernetes quantity strings."""
        return {
            "workers": self.workers,
            "requests": {r: format_amount(r, q) for r, q in self.requests.items()},
            "message": self.message,
        }


def largest_fitting(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest n in ``low..high`` for which ``fits(n)``, given that ``low`` counts as
    fitting (it is returned when nothing above does) and that fitting only gets easier as n
    falls: a binary search, O(log(high - low)) calls."""
    while low < high:  # invariant: low fits, high + 1 does not
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def suggest(
    spec: ValidatedClusterSpec,
    cluster_queue: ClusterQueueQuota | None,
    tree: QuotaTree | None,
    ahead: int | Ahead | None = None,
    *,
    local_queue: LocalQueueInfo | None = None,
    flavors: Mapping[str, FlavorTraits] | None = None,
    sidecar_counted: bool = True,
) -> Suggestion | None:
    """The largest worker count N >= 1 (below ``spec.workers``) for which the same cluster
    would fit now (see :func:`suggest_workers`)."""
    return suggest_workers(
        spec.workers,
        lambda n: pod_sets_for_spec(spec.with_workers(n), sidecar_counted=sidecar_counted),
        cluster_queue,
        tree,
        ahead,
        local_queue=local_queue,
        flavors=flavors,
    )


def suggest_workers(
    workers: int,
    pod_sets_with: Callable[[int], Sequence[PodSetRequest]],
    cluster_queue: ClusterQueueQuota | None,
    tree: QuotaTree | None,
    ahead: int | Ahead | None = None,
    *,
    local_queue: LocalQueueInfo | None = None,
    flavors: Mapping[str, FlavorTraits] | None = None,
) -> Suggestion | None:
    """The largest worker count N >= 1 (below ``workers``) for which the pod sets Kueue would
    count with N workers, ``pod_sets_with(N)`` (a cluster's head and workers; a RayJob's also
    its submitter), would fit now; None when none does, quota is hidden, or the queue is
    ``StrictFIFO`` with pending workloads ahead (there nothing starts before them, whatever
    its size). The message names the other pod sets counted ("with the head and the
    submitter").

    Fitting only gets easier with fewer workers, so a binary search over N asks
    :func:`assess_fit` O(log N) times.
    """
    if tree is None or cluster_queue is None or workers <= 1:
        return None
    if cluster_queue.strict_fifo and (ahead.count if isinstance(ahead, Ahead) else ahead):
        return None

    def verdict(n: int) -> FitVerdict:
        return assess_fit(
            pod_sets_with(n), cluster_queue, tree, ahead, local_queue=local_queue, flavors=flavors
        )

    low = largest_fitting(0, workers - 1, lambda n: verdict(n).verdict == FITS_NOW)
    if low == 0:
        return None
    found = verdict(low)
    counted = [p.name for p in pod_sets_with(low) if p.name != WORKER_GROUP_NAME]
    message = words.suggestion(low, found.requests, counted)
    return Suggestion(low, dict(found.requests), message)
