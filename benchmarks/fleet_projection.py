"""From a few measured fleet sizes to many: each cost as a fixed part plus a part per
workbench (a least-squares line through the measured points, the plane without workbenches
among them), and that line read at the size asked (bench_fleet.py). Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    """``fixed + per_workbench * n``, fitted through ``points`` ((n, measured) pairs)."""

    fixed: float
    per_workbench: float
    points: tuple[tuple[float, float], ...]
    per_workbench_se: float | None
    """The slope's standard error (None with two points: a line through them is exact)."""

    def at(self, workbenches: float) -> float:
        return self.fixed + self.per_workbench * workbenches

    def at_most(self, workbenches: float) -> float:
        """:meth:`at` with the slope two standard errors higher: a slope lost in the noise of
        a few points is read as the most it could be, not as the little it measured."""
        margin = 2 * self.per_workbench_se if self.per_workbench_se is not None else 0.0
        return self.fixed + (self.per_workbench + margin) * workbenches

    @property
    def within_noise(self) -> bool:
        """Whether the slope is smaller than two of its standard errors."""
        se = self.per_workbench_se
        return se is not None and abs(self.per_workbench) < 2 * se

    @property
    def worst_residual(self) -> float:
        """The largest distance of a measured point from the line (how straight it is)."""
        return max(abs(y - self.at(x)) for x, y in self.points)


def fit(points: Sequence[tuple[float, float]]) -> Line:
    """The least-squares line through ``points``; at least two distinct sizes are needed."""
    if len({x for x, _ in points}) < 2:
        raise ValueError(f"a line needs two fleet sizes at least, got {sorted(points)}")
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    fixed = mean_y - slope * mean_x
    se = None
    if n > 2:
        squares = sum((y - fixed - slope * x) ** 2 for x, y in points)
        se = math.sqrt(squares / (n - 2) / spread)
    return Line(fixed, slope, tuple(points), se)


def per_change(window_total: float, idle_rate: float, seconds: float, changes: int) -> float:
    """What each change cost on top of idling: a churn window's total (CPU seconds, events,
    requests) less what the same seconds cost idle (``idle_rate`` per second), per change."""
    if changes <= 0:
        raise ValueError("a churn window without changes says nothing per change")
    return (window_total - idle_rate * seconds) / changes
