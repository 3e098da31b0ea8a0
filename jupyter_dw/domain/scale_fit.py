"""Will a scale-up of an elastic Ray cluster be admitted now? And which sizes may be asked for.
The fit of the difference, in the flavor the admitted slice holds, as Kueue does. Pure
(docs/explanation/kueue-mapping.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from jupyter_dw.domain.fit import FITS_NOW, FitVerdict, assess_fit
from jupyter_dw.domain.fit_suggestion import largest_fitting
from jupyter_dw.domain.flavor_assigner import HEAD_POD_SET, PodSetRequest
from jupyter_dw.domain.json_decode import decode_fields, decode_key
from jupyter_dw.domain.kueue_model import ClusterQueueQuota, LocalQueueInfo
from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.domain.priorities import Ahead
from jupyter_dw.domain.quantity import QuantityError, parse_quantity
from jupyter_dw.domain.quota import QuotaTree
from jupyter_dw.domain.scheduling import FlavorTraits, Toleration


def _amounts(resources: Mapping[str, Any]) -> dict[str, Decimal]:
    """A container's requests (limits stand in for a request not given, as in Kubernetes)."""
    requests = dict(_map(resources.get("limits")))
    requests.update(_map(resources.get("requests")))
    found: dict[str, Decimal] = {}
    for name, raw in requests.items():
        try:
            found[str(name)] = parse_quantity(raw)
        except QuantityError:
            continue  # the API server accepted it; an unreadable amount is not ours to judge
    return found


def worker_pod_set(raycluster: Mapping[str, Any], count: int) -> PodSetRequest | None:
    """``count`` workers of the RayCluster's first worker group as one Kueue pod set: its
    containers' requests summed, with its tolerations and node selector (None without a
    worker group)."""
    groups = _map(raycluster.get("spec")).get("workerGroupSpecs")
    if not isinstance(groups, list) or not groups:
        return None
    group = _map(groups[0])
    pod = _map(_map(group.get("template")).get("spec"))
    per_pod: dict[str, Decimal] = {}
    for container in pod.get("containers") or []:
        for name, amount in _amounts(_map(_map(container).get("resources"))).items():
            per_pod[name] = per_pod.get(name, Decimal(0)) + amount
    tolerations = tuple(
        Toleration.from_object(t) for t in pod.get("tolerations") or [] if isinstance(t, Mapping)
    )
    selector = {str(k): str(v) for k, v in _map(pod.get("nodeSelector")).items()}
    name = str(group.get("groupName") or "workers")
    return PodSetRequest(name, count, per_pod, tolerations, selector)


@dataclass(frozen=True)
class ScaleFit:
    """The fit of a scale-up from ``from_workers`` to ``to_workers``: ``verdict`` is the
    difference's fit in the held flavor, ``starts_now`` the most workers (above
    ``from_workers``) that would be admitted now (None when no scale-up would)."""

    verdict: FitVerdict
    from_workers: int
    to_workers: int
    starts_now: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        """The REST ``ScaleFit`` shape: the verdict's numbers, this sentence, the sizes."""
        keep = ("verdict", "reason", "requests", "headroom", "max_obtainable", "flavors")
        verdict = self.verdict.to_json()
        return {
            **{key: verdict[key] for key in keep},
            "message": self.message,
            "from": self.from_workers,
            "to": self.to_workers,
            "starts_now": self.starts_now,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScaleFit:
        """What :meth:`to_json` made. Its ``verdict`` has the numbers the JSON keeps; what it
        leaves out (the verdict's own sentence, the assignment, what is ahead, the queues and
        admission checks) is empty: a reader has this fit's ``message`` instead."""
        verdict = decode_fields(
            FitVerdict,
            data,
            message="",
            assignment={},
            ahead=None,
            queue=None,
            cluster_queue=None,
        )
        counts = {
            "from_workers": decode_key(int, data, "from"),
            "to_workers": decode_key(int, data, "to"),
        }
        return decode_fields(cls, data, verdict=verdict, **counts)


def held_flavors(pod_set_flavors: Mapping[str, Mapping[str, str]], pod_set: str) -> set[str]:
    """The flavors the admitted slice holds for ``pod_set`` (any worker pod set's when that
    one is not listed: Kueue names pod sets after the worker groups)."""
    own = pod_set_flavors.get(pod_set)
    if own:
        return set(own.values())
    return {f for name, fl in pod_set_flavors.items() if name != HEAD_POD_SET for f in fl.values()}


def assess_scale_up(
    workers: PodSetRequest,
    from_workers: int,
    to_workers: int,
    held: set[str],
    cluster_queue: ClusterQueueQuota | None,
    tree: QuotaTree | None,
    ahead: Ahead | None = None,
    *,
    local_queue: LocalQueueInfo | None = None,
    flavors: Mapping[str, FlavorTraits] | None = None,
) -> ScaleFit:
    """Fit ``to_workers - from_workers`` more workers (``workers`` gives one worker's
    requests and placement) in the ``held`` flavors, and find the largest size that would be
    admitted now (a binary search: fewer workers only fit more easily)."""

    def verdict(target: int) -> FitVerdict:
        delta = replace(workers, count=max(0, target - from_workers))
        only = {workers.name: held} if held else None
        return assess_fit(
            [delta],
            cluster_queue,
            tree,
            ahead,
            local_queue=local_queue,
            flavors=flavors,
            only_flavors=only,
        )

    found = verdict(to_workers)
    starts_now: int | None = to_workers if found.verdict == FITS_NOW else None
    if starts_now is None and to_workers - from_workers > 1 and tree is not None:
        # from_workers "fits": nothing more is asked for.
        low = largest_fitting(
            from_workers, to_workers - 1, lambda n: verdict(n).verdict == FITS_NOW
        )
        starts_now = low if low > from_workers else None
    return ScaleFit(
        found, from_workers, to_workers, starts_now, _sentence(found, to_workers, starts_now, held)
    )


def _sentence(found: FitVerdict, to_workers: int, starts_now: int | None, held: set[str]) -> str:
    where = f" in flavor {', '.join(sorted(held))}" if held else ""
    head = {
        "fits-now": f"{to_workers} workers: fits now{where}",
        "must-wait": f"{to_workers} workers: must wait{where}",
        "never-fits": f"{to_workers} workers: can never fit{where}",
        "unknown": f"{to_workers} workers: cannot be judged",
    }[found.verdict]
    sentence = f"{head} ({found.message.rstrip('.')})"
    if found.verdict != FITS_NOW and starts_now is not None:
        sentence += f"; {starts_now} would start now"
    return sentence + "."
