"""A soak's samples as trends (bench_soak.py): after the warm-up, each series (a process's RSS,
threads, open file descriptors) fitted as a straight line over time, its slope per hour with
the slope's standard error (fleet_projection's least squares), and its first (the baseline,
same run), last and largest values. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.fleet_projection import fit

HOUR = 3600.0


def trend(points: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """``points`` ((seconds since the start, value), in time order, the warm-up left out):
    ``start`` (the first: the baseline), ``end``, ``max``, ``slope_per_hour`` and its
    ``slope_se`` (None under three points), and whether the slope is ``within_noise``
    (smaller than two standard errors)."""
    if len(points) < 2:
        raise ValueError(f"a trend needs two samples after the warm-up, got {len(points)}")
    values = [v for _, v in points]
    line = fit([(t / HOUR, v) for t, v in points])
    se = line.per_workbench_se
    return {
        "samples": len(points),
        "start": values[0],
        "end": values[-1],
        "max": max(values),
        "slope_per_hour": round(line.per_workbench, 3),
        "slope_se": round(se, 3) if se is not None else None,
        "within_noise": line.within_noise,
    }


def trends(
    samples: Sequence[Mapping[str, float]], warmup_seconds: float, series: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Each of ``series`` (a key of every sample, besides ``t``: its seconds since the start)
    as a :func:`trend` of the samples taken at or after ``warmup_seconds``."""
    after = [s for s in samples if s["t"] >= warmup_seconds]
    return {name: trend([(s["t"], s[name]) for s in after]) for name in series}
