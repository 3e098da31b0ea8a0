"""The sentences of a fit verdict: every word a user reads about whether a workload fits,
made from the reason and numbers :mod:`jupyter_dw.domain.fit` decided. Pure.

Nothing here decides: each function is given what was decided (the totals, the flavors, the
amounts free, missing or in use, the workloads ahead) and only says it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from jupyter_dw.domain.kueue_model import ClusterQueueQuota, LocalQueueInfo
from jupyter_dw.domain.priorities import Ahead
from jupyter_dw.domain.quota import HIDDEN_QUOTA_HINT, format_amount


@dataclass(frozen=True)
class Hold:
    """Why Kueue admits nothing to the queue now: ``what`` (``ClusterQueue`` or
    ``LocalQueue``) named ``name`` is stopped (``detail``: its stopPolicy) or inactive
    (``detail``: its condition's message)."""

    reason: str
    what: str
    name: str
    stopped: bool
    detail: str | None


@dataclass(frozen=True)
class Excess:
    """In ``flavor``: per resource, what a pod set would need and the most it can ever give."""

    flavor: str
    over: tuple[tuple[str, Decimal, Decimal], ...]


def human(resource: str, amount: Decimal | None) -> str:
    """``5 CPU``, ``12Gi memory``, ``3 pods``, ``2 nvidia.com/gpu``."""
    text = format_amount(resource, amount) or "?"
    if resource == "cpu":
        return f"{text} CPU"
    return f"{text} {resource}"


def needs(totals: Mapping[str, Decimal]) -> str:
    if not totals:
        return "Needs no resources"
    return "Needs " + ", ".join(human(r, q) for r, q in totals.items())


def _it(resources: Sequence[str]) -> str:
    return "it" if len(resources) == 1 else "them"


def workloads(ahead: Ahead) -> str:
    """``no workloads``, ``2 workloads``, ``at most 4 workloads (every pending one counted:
    priorities unknown)``."""
    if ahead.count == 0 and ahead.bound != "at-least":
        return "no workloads"
    if ahead.bound == "at-most":
        return f"{ahead.words()} (an upper bound: every pending one counted, priorities unknown)"
    return ahead.words()


def checks_phrase(checks: Sequence[str]) -> str:
    """``admission check X`` or ``admission checks X, Y``."""
    return f"admission check{'s' if len(checks) > 1 else ''} {', '.join(checks)}"


def flavor_phrase(flavors: Mapping[str, str | None]) -> str:
    by_flavor: dict[str, list[str]] = {}
    for resource, flavor in flavors.items():
        if flavor is not None:
            by_flavor.setdefault(flavor, []).append(resource)
    if len(by_flavor) == 1:
        return f"flavor {next(iter(by_flavor))}"
    if not by_flavor:
        return "no flavor"
    return "flavors " + ", ".join(f"{f} ({', '.join(rs)})" for f, rs in by_flavor.items())


def amounts(values: Mapping[str, Decimal]) -> str:
    return ", ".join(human(r, q) for r, q in values.items())


# -- one sentence per verdict ------------------------------------------------------------------


def no_quota_needed() -> str:
    return "Needs no quota: fits now."


def uncovered(
    totals: Mapping[str, Decimal], cq: str, covered: Sequence[str], missing: Sequence[str]
) -> str:
    return (
        f"{needs(totals)}; ClusterQueue {cq} has no quota for "
        f"{', '.join(missing)} (it covers {', '.join(covered) or 'nothing'}), so Kueue "
        "can never admit it. Ask for no "
        f"{' or '.join(missing)}, or use a queue that provides {_it(missing)}."
    )


def cycle(totals: Mapping[str, Decimal], cq: str) -> str:
    return (
        f"{needs(totals)}; the cohort tree of ClusterQueue {cq} has a cycle, "
        "so Kueue admits nothing to it until an administrator removes the cycle."
    )


def no_usable_flavor(
    totals: Mapping[str, Decimal], cq: str, pod_set: str, reasons: Sequence[str]
) -> str:
    return (
        f"{needs(totals)}; no flavor of ClusterQueue {cq} can take pod set "
        f"{pod_set}: {'; '.join(reasons)}. Add the toleration (or change the node "
        "selector) that one of these flavors needs, or use another queue."
    )


def exceeds(
    totals: Mapping[str, Decimal], cq: str, pod_set: str | None, excesses: Sequence[Excess]
) -> str:
    # Name every flavor's excess: the user sees the most each flavor could ever give.
    parts = []
    for excess in excesses:
        needed = ", ".join(human(r, amount) for r, amount, _ in excess.over)
        most = ", ".join(human(r, limit) for r, _, limit in excess.over)
        parts.append(f"flavor {excess.flavor} would need {needed} but can give at most {most}")
    at = "" if pod_set is None else f" (at pod set {pod_set})"
    return (
        f"{needs(totals)}: more than ClusterQueue {cq} can ever give"
        f"{at}, counting nominal quota and all it may borrow: {'; '.join(parts)}. "
        "Ask for fewer or smaller workers."
    )


def free_now(
    totals: Mapping[str, Decimal],
    cq: ClusterQueueQuota,
    lq: LocalQueueInfo | None,
    flavors: Mapping[str, str | None],
    headroom: Mapping[str, Decimal | None],
) -> str:
    """``Needs …; queue Q (ClusterQueue C, flavor F) has … free now``."""
    phrase = flavor_phrase(flavors)
    where = (
        f"queue {lq.name} (ClusterQueue {cq.name}, {phrase})"
        if lq is not None
        else f"ClusterQueue {cq.name} ({phrase})"
    )
    free = ", ".join(human(r, h) for r, h in headroom.items() if h is not None)
    if cq.cohort:
        free += f" counting what cohort {cq.cohort} may lend"
    return f"{needs(totals)}; {where} has {free} free now"


def fits_now(
    free: str, checks: Sequence[str], ahead: Ahead | None, preemptible_before: Sequence[str]
) -> str:
    message = free
    if checks:
        message += (
            f": fits the quota; then waits for capacity from {checks_phrase(checks)} "
            "before Kueue admits it"
        )
    else:
        message += ": fits now"
    if ahead is not None and ahead.count:
        # Fitting does not jump the queue: under StrictFIFO the head of the queue goes first.
        message += f"; {workloads(ahead)} pending ahead may be admitted first"
    if preemptible_before:
        message += (
            f"; but with whenCanPreempt: MayStopSearch Kueue may instead preempt "
            f"lower-priority workloads in flavor {', '.join(preemptible_before)}, which comes "
            "first"
        )
    return message + "."


def waits(
    free: str,
    in_use: Mapping[str, Decimal],
    shortfall: Mapping[str, Decimal],
    ahead: Ahead | None,
    checks: Sequence[str],
) -> str:
    message = free
    if in_use:
        message += f" ({amounts(in_use)} in use)"
    message += f": waits for {amounts(shortfall)}" if shortfall else ": must wait for quota"
    if ahead is not None:
        message += f"; {workloads(ahead)} ahead"
    if checks:
        message += f"; then for capacity from {checks_phrase(checks)}"
    return message + "."


def hold_sentence(hold: Hold) -> str:
    if hold.stopped and hold.what == "ClusterQueue":
        return (
            f"ClusterQueue {hold.name} is stopped (stopPolicy={hold.detail}): Kueue keeps "
            "new workloads pending until an administrator resumes it"
        )
    if hold.stopped:
        return (
            f"LocalQueue {hold.name} is stopped (stopPolicy={hold.detail}): Kueue keeps "
            "new workloads pending until it is resumed"
        )
    why = hold.detail or "no reason given"
    if hold.what == "ClusterQueue":
        return (
            f"ClusterQueue {hold.name} is not active ({why}): Kueue keeps new workloads "
            "pending until it is"
        )
    return f"LocalQueue {hold.name} is not active ({why})"


def held(
    totals: Mapping[str, Decimal],
    hold: Hold,
    fits_once_resumed: bool,
    shortfall: Mapping[str, Decimal],
    ahead: Ahead | None,
) -> str:
    if fits_once_resumed:
        after = "once admissions resume it fits (enough quota is free now)"
    else:
        after = (
            f"even then it waits for {amounts(shortfall)}" if shortfall else "even then it waits"
        )
    message = f"{needs(totals)}; {hold_sentence(hold)}; {after}"
    if ahead is not None:
        message += f"; {workloads(ahead)} ahead"
    return message + "."


def unknown(totals: Mapping[str, Decimal], lq: LocalQueueInfo | None) -> str:
    where = f"queue {lq.name}" if lq is not None else "the queue"
    message = f"{needs(totals)}; whether {where} can take it is unknown. "
    if lq is not None and lq.stopped:
        message += f"LocalQueue {lq.name} is stopped (stopPolicy={lq.stop_policy}). "
    return message + HIDDEN_QUOTA_HINT


def missing_cluster_queue(
    totals: Mapping[str, Decimal], lq: LocalQueueInfo | None, name: str | None
) -> str:
    if lq is not None and not lq.cluster_queue:
        what = f"LocalQueue {lq.name} names no ClusterQueue"
    else:
        what = f"ClusterQueue {name or '(unknown)'} does not exist"
    return (
        f"{needs(totals)}; {what}, so Kueue admits nothing from "
        f"{'queue ' + lq.name if lq is not None else 'this queue'} until an administrator "
        "creates it."
    )


def suggestion(workers: int, totals: Mapping[str, Decimal], counted: Sequence[str]) -> str:
    """``3 workers would start now (… with the head and the submitter)``."""
    started = f"{workers} worker{'s' if workers != 1 else ''}"
    return f"{started} would start now ({amounts(totals)} with the {' and the '.join(counted)})"
