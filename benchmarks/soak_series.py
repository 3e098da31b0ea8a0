"""A soak's samples as trends (bench_soak.py): after the warm-up, each series (a process's RSS,
threads, open file descriptors) fitted as a straight line over time, its slope per hour with
the slope's standard error (fleet_projection's least squares), and its first (the baseline,
same run), last and largest values. Pure: no I/O.

A least-squares slope reads one step as a trend: a kernel's RSS that rose 1.8 MiB once, at
minute 34, and was flat before and after, fitted +4.7 MiB an hour over 34 minutes. So each
trend also gives the median of the slopes between every two samples (Theil and Sen's
estimator, which one step moves little and a steady climb moves as much as least squares)
and the largest rise between two samples, with when: whether memory climbs or stepped once.
"""

from __future__ import annotations

import itertools
import statistics
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
    rise, at = max(
        ((b - a, tb) for (_, a), (tb, b) in itertools.pairwise(points)),
        key=lambda step: step[0],
    )
    return {
        "samples": len(points),
        "start": values[0],
        "end": values[-1],
        "max": max(values),
        "slope_per_hour": round(line.per_workbench, 3),
        "slope_se": round(se, 3) if se is not None else None,
        "within_noise": line.within_noise,
        "median_slope_per_hour": round(median_slope(points) * HOUR, 3),
        "largest_rise": round(max(rise, 0.0), 3),
        "largest_rise_at_seconds": round(at, 1) if rise > 0 else None,
    }


def median_slope(points: Sequence[tuple[float, float]]) -> float:
    """Theil and Sen's slope (per second): the median of the slopes between every two points
    at different times. ~330 samples make ~54,000 pairs: a few tens of milliseconds."""
    slopes = [
        (b - a) / (tb - ta)
        for i, (ta, a) in enumerate(points)
        for tb, b in points[i + 1 :]
        if tb != ta
    ]
    return statistics.median(slopes)


def trends(
    samples: Sequence[Mapping[str, float]], warmup_seconds: float, series: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Each of ``series`` (a key of every sample, besides ``t``: its seconds since the start)
    as a :func:`trend` of the samples taken at or after ``warmup_seconds``."""
    after = [s for s in samples if s["t"] >= warmup_seconds]
    return {name: trend([(s["t"], s[name]) for s in after]) for name in series}
