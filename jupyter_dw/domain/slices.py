"""An elastic Ray cluster as Kueue sees it: a chain of Workload slices, and the change in flight.
The admitted slice, the pending one replacing it and the :class:`ScaleChange`, picked out as
Kueue's ``normalizeActiveSlices`` does. Pure. Kueue's slices: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jupyter_dw.domain.json_decode import decode_fields, decode_key
from jupyter_dw.domain.lenient import mapping as _map
from jupyter_dw.domain.lenient import text as _text
from jupyter_dw.names import (
    AUTOSCALER_CONTAINER_NAME,
    WORKLOAD_SLICE_REPLACED_REASON,
    WORKLOAD_SLICE_REPLACEMENT_ANNOTATION,
)

HEAD_POD_SET = "head"
"""Kueue's pod-set name for a RayCluster's head; every other pod set is a worker group."""

ScaleState = Literal["queued", "admitted", "scaling-down"]
RequestedBy = Literal["user", "autoscaler"]

Object = Mapping[str, Any]


def condition(workload: Object | None, kind: str) -> Mapping[str, Any] | None:
    """The Workload's condition of type ``kind`` (None when it has none)."""
    for found in _map(_map(workload).get("status")).get("conditions") or []:
        if isinstance(found, Mapping) and found.get("type") == kind:
            return found
    return None


def is_true(workload: Object | None, kind: str) -> bool:
    """Whether the Workload's condition ``kind`` is True."""
    return (condition(workload, kind) or {}).get("status") == "True"


def true_since(workload: Object | None, kind: str) -> str | None:
    """When condition ``kind`` turned True (None when it is not True or has no time)."""
    found = condition(workload, kind)
    if found is None or found.get("status") != "True":
        return None
    return _text(found.get("lastTransitionTime"))


def words(workload: Object | None, kind: str) -> tuple[str | None, str | None]:
    """``(reason, message)`` of condition ``kind``."""
    found = condition(workload, kind) or {}
    return _text(found.get("reason")), _text(found.get("message"))


def name_of(workload: Object | None) -> str | None:
    """The Workload's name."""
    return _text(_map(_map(workload).get("metadata")).get("name"))


def _key(workload: Object) -> str:
    metadata = _map(workload.get("metadata"))
    return f"{_text(metadata.get('namespace')) or ''}/{_text(metadata.get('name')) or ''}"


def replaces(workload: Object) -> str | None:
    """``<ns>/<name>`` of the slice this one replaces (None: not a scale-up's slice)."""
    annotations = _map(_map(workload.get("metadata")).get("annotations"))
    return _text(annotations.get(WORKLOAD_SLICE_REPLACEMENT_ANNOTATION))


def worker_count(workload: Object | None) -> int | None:
    """Workers a slice asks for: the sum of its worker pod sets' ``count`` (every pod set but
    the head); None without pod sets."""
    pod_sets = _map(_map(workload).get("spec")).get("podSets")
    if not isinstance(pod_sets, list):
        return None
    total = 0
    for pod_set in pod_sets:
        pod_set = _map(pod_set)
        count = pod_set.get("count")
        if pod_set.get("name") != HEAD_POD_SET and isinstance(count, int):
            total += max(0, count)
    return total


def _finished(workload: Object) -> bool:
    return is_true(workload, "Finished")


def _deleting(workload: Object) -> bool:
    return _text(_map(workload.get("metadata")).get("deletionTimestamp")) is not None


def _age(workload: Object) -> tuple[str, str]:
    metadata = _map(workload.get("metadata"))
    return _text(metadata.get("creationTimestamp")) or "", _text(metadata.get("name")) or ""


@dataclass(frozen=True)
class SliceChain:
    """The Workloads of one job, read as Kueue's slices.

    ``current`` is the Workload the cluster's state is read from: the admitted slice when one
    holds quota, else the newest live one (a cluster not admitted yet, or not elastic: its
    only Workload). ``pending`` is a scale-up's slice waiting for quota (replacing
    ``admitted``). ``first`` is the chain's first slice (its admission is the cluster's
    first). ``slices`` are all of them, oldest first, replaced ones included.
    """

    current: Object | None = None
    admitted: Object | None = None
    pending: Object | None = None
    first: Object | None = None
    slices: tuple[Object, ...] = ()

    @property
    def workers_admitted(self) -> int | None:
        """Workers whose quota the admitted slice holds (None before the first admission)."""
        return worker_count(self.admitted) if self.admitted is not None else None

    def replaced_by(self, workload: Object) -> Object | None:
        """The slice that replaces ``workload`` (None if none does)."""
        key = _key(workload)
        return next((w for w in self.slices if replaces(w) == key), None)

    def find(self, key: str | None) -> Object | None:
        """The slice named ``<ns>/<name>``."""
        return next((w for w in self.slices if key and _key(w) == key), None)

    def live(self) -> list[Object]:
        """Slices neither ``Finished`` (replaced ones are) nor being deleted, oldest first:
        the ones that hold quota or wait for it, which a stop deactivates."""
        return [w for w in self.slices if not _finished(w) and not _deleting(w)]

    def scale_ups(self) -> list[Object]:
        """Slices made by scale-ups (each replaces an older one), oldest first."""
        return [w for w in self.slices if replaces(w)]


def slice_chain(workloads: Iterable[Object]) -> SliceChain:
    """Pick the admitted and the pending slice out of one job's Workloads.

    As Kueue (``normalizeActiveSlices``): the admitted slice is the newest live slice with
    quota reserved, not evicted, whose replacement (if any) has no quota yet; the pending
    slice is that replacement. Live means not ``Finished`` and not being deleted.
    """
    ordered = tuple(sorted((w for w in workloads if isinstance(w, Mapping)), key=_age))
    live = [w for w in ordered if not _finished(w) and not _deleting(w)]
    replacements: dict[str, Object] = {}
    for workload in live:
        target = replaces(workload)
        if target is None or is_true(workload, "Evicted"):
            continue
        known = replacements.get(target)
        if known is None or (
            not is_true(known, "QuotaReserved") and is_true(workload, "QuotaReserved")
        ):
            replacements[target] = workload
    admitted: Object | None = None
    for workload in live:
        if is_true(workload, "Evicted") or not is_true(workload, "QuotaReserved"):
            continue
        replacement = replacements.get(_key(workload))
        if replacement is not None and is_true(replacement, "QuotaReserved"):
            continue
        admitted = workload
    if admitted is None:
        admitted = _handing_over(ordered, replacements)
    pending = None
    if admitted is not None:
        candidate = replacements.get(_key(admitted))
        if candidate is not None and not is_true(candidate, "QuotaReserved"):
            pending = candidate
    current = admitted or _newest(ordered, live)
    roots = [w for w in ordered if not replaces(w)]
    first = roots[0] if roots else (ordered[0] if ordered else None)
    return SliceChain(current, admitted, pending, first, ordered)


def _handing_over(ordered: tuple[Object, ...], replacements: dict[str, Object]) -> Object | None:
    """A slice already ``Finished`` as replaced while its replacement has no quota on record
    yet (Kueue 0.14 writes the two in that order): it still speaks for the held quota, until
    the replacement's reservation arrives a moment later."""
    for workload in reversed(ordered):
        replaced = words(workload, "Finished")[0] == WORKLOAD_SLICE_REPLACED_REASON
        if replaced and is_true(workload, "Finished") and _key(workload) in replacements:
            return workload
    return None


def _newest(ordered: tuple[Object, ...], live: list[Object]) -> Object | None:
    """Without an admitted slice: the newest live Workload that is not a scale-up waiting to
    replace another live one, else the newest of all (a finished job's last word)."""
    keys = {_key(w) for w in live}
    candidates = [w for w in live if replaces(w) not in keys]
    if candidates:
        return candidates[-1]
    return ordered[-1] if ordered else None


@dataclass(frozen=True)
class ScaleChange:
    """A change of an elastic cluster's size in flight (see ``scale_change``)."""

    state: ScaleState
    from_workers: int
    to_workers: int
    requested_by: RequestedBy
    reason: str | None = None
    message: str | None = None
    position_in_local_queue: int | None = None
    position_in_cluster_queue: int | None = None
    since: str | None = None
    workload: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The REST and events shape (``from``/``to`` for the counts)."""
        return {
            "state": self.state,
            "from": self.from_workers,
            "to": self.to_workers,
            "requested_by": self.requested_by,
            "reason": self.reason,
            "message": self.message,
            "position_in_local_queue": self.position_in_local_queue,
            "position_in_cluster_queue": self.position_in_cluster_queue,
            "since": self.since,
            "workload": self.workload,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScaleChange:
        """What :meth:`to_json` made (``from``/``to``: the counts)."""
        counts = {
            "from_workers": decode_key(int, data, "from"),
            "to_workers": decode_key(int, data, "to"),
        }
        return decode_fields(cls, data, **counts)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def scale_change(
    chain: SliceChain,
    *,
    workers_desired: int,
    workers_running: int,
    workers_ready: int,
    pinned_workers: int | None,
    pending_entry: Mapping[str, Any] | None = None,
) -> ScaleChange | None:
    """The change of size in flight, or None when the cluster is at the size it asks for.

    ``workers_desired`` is what the RayCluster asks for now (its ``replicas``),
    ``workers_running`` its worker pods not being deleted and past Kueue's elastic-job gate,
    ``workers_ready`` those ready.
    ``pending_entry`` is the pending slice's item from the visibility API (its positions).

    - ``queued``: a scale-up's slice waits for quota (Kueue's words from its
      ``QuotaReserved`` condition), or Kueue has not made the slice yet for more workers than
      the admitted slice holds;
    - ``admitted``: a scale-up's slice is admitted and its new workers are not all ready;
    - ``scaling-down``: more worker pods than asked for (KubeRay removes those named in
      ``workersToDelete``; Kueue already freed their quota).

    Nothing before the first admission: that is the cluster's own state.
    """
    admitted = chain.admitted
    held = chain.workers_admitted
    if admitted is None or held is None:
        return None
    pending = _asking_for_more(chain.pending, held)
    if pending is not None or workers_desired > held:
        return _waiting_scale_up(pending, pending_entry, held, workers_desired, pinned_workers)
    if replaces(admitted) and workers_ready < held and workers_desired >= held:
        return _admitted_scale_up(chain, admitted, held, workers_ready, pinned_workers)
    # KubeRay's ready count lags the pods' deletion: the change is over when both agree.
    running = max(workers_running, workers_ready)
    if running > workers_desired:
        return _scale_down(admitted, held, running, workers_desired, pinned_workers)
    return None


def _requested_by(pinned_workers: int | None, target: int) -> RequestedBy:
    """A person asked for ``target`` when the worker group is pinned there, else Ray's
    autoscaler did."""
    return "user" if pinned_workers is not None and pinned_workers == target else "autoscaler"


def _asking_for_more(pending: Object | None, held: int) -> Object | None:
    """The pending slice, unless it asks for no more workers than the admitted one holds."""
    if pending is not None and (worker_count(pending) or 0) <= held:
        # Asked back down to what is held while the slice waited (Kueue 0.14 keeps such a
        # slice pending until its queue changes): nothing more is asked for.
        return None
    return pending


def _waiting_scale_up(
    pending: Object | None,
    pending_entry: Mapping[str, Any] | None,
    held: int,
    workers_desired: int,
    pinned_workers: int | None,
) -> ScaleChange:
    """``queued``: the scale-up's slice waits for quota (with Kueue's words and its positions),
    or Kueue has not made it yet."""
    target = worker_count(pending) if pending is not None else workers_desired
    target = workers_desired if target is None else target
    reason, message = words(pending, "QuotaReserved") if pending is not None else (None, None)
    entry = _map(pending_entry)
    entry_name = _text(_map(entry.get("metadata")).get("name"))
    matches = pending is not None and entry_name == name_of(pending)
    return ScaleChange(
        "queued",
        held,
        target,
        _requested_by(pinned_workers, target),
        reason,
        message,
        _int(entry.get("positionInLocalQueue")) if matches else None,
        _int(entry.get("positionInClusterQueue")) if matches else None,
        _text(_map(_map(pending).get("metadata")).get("creationTimestamp")),
        name_of(pending),
    )


def _admitted_scale_up(
    chain: SliceChain, admitted: Object, held: int, workers_ready: int, pinned_workers: int | None
) -> ScaleChange:
    """``admitted``: the scale-up's slice holds its quota, its new workers are not all ready."""
    before = worker_count(chain.find(replaces(admitted)))
    reason, message = words(admitted, "Admitted")
    return ScaleChange(
        "admitted",
        before if before is not None else workers_ready,
        held,
        _requested_by(pinned_workers, held),
        reason,
        message,
        since=true_since(admitted, "Admitted"),
        workload=name_of(admitted),
    )


def _scale_down(
    admitted: Object, held: int, running: int, workers_desired: int, pinned_workers: int | None
) -> ScaleChange:
    """``scaling-down``: KubeRay removes the worker pods beyond what is asked for (Kueue already
    freed their quota)."""
    return ScaleChange(
        "scaling-down",
        running,
        workers_desired,
        _requested_by(pinned_workers, workers_desired),
        "ScalingDown",
        f"removing {running - workers_desired} of {running} worker pods; "
        f"the quota of {held} workers is held",
        workload=name_of(admitted),
    )


def counts_autoscaler(workload: Object, raycluster: Object | None) -> bool | None:
    """What one Workload tells of whether Kueue counts the Ray autoscaler sidecar in quota:
    True when its head pod set has a container named ``autoscaler`` (Kueue 0.19 adds it),
    False when it is an autoscaling RayCluster's Workload without one (0.14), None when it
    tells nothing (another kind of job, or a cluster that does not autoscale)."""
    pod_sets = _map(workload.get("spec")).get("podSets")
    head = next(
        (
            _map(p)
            for p in (pod_sets if isinstance(pod_sets, list) else [])
            if _map(p).get("name") == HEAD_POD_SET
        ),
        None,
    )
    if head is None:
        return None
    containers = _map(_map(head.get("template")).get("spec")).get("containers") or []
    if any(_map(c).get("name") == AUTOSCALER_CONTAINER_NAME for c in containers):
        return True
    autoscaling = _map(_map(raycluster).get("spec")).get("enableInTreeAutoscaling") is True
    return False if autoscaling else None
