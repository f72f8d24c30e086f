"""Comparisons of two measured figures, computed: a chapter prints the verdict, its prose points to it.

A verdict compares the medians of two sets of measurements (SM cycles of launches, or the times of
launches alternated pair by pair) and calls them level when they differ by less than the spread the
measurements themselves show: the larger of the two sides' p10-p90 ranges, relative to the median.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

FLOOR = 0.005   # two medians closer than 0.5% are level whatever the spread: the course claims no finer step


def p10_p90(values) -> tuple[float, float]:
    """The 10th and 90th percentiles of ``values``, interpolated within their range (the one value twice where
    there is one)."""
    values = list(values)
    if len(values) == 1:
        return float(values[0]), float(values[0])
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return deciles[0], deciles[-1]


def relative_spread(values) -> float:
    """(p90 - p10) / median of ``values``: how far apart a run's measurements of one thing lie."""
    values = sorted(values)
    if len(values) < 2:
        raise ValueError("a spread needs at least two measurements")
    low, high = p10_p90(values)
    return (high - low) / statistics.median(values)


@dataclass(frozen=True)
class Verdict:
    """``b`` against ``a``: the ratio of their medians (b / a) and the spread it is judged against."""

    a: str
    b: str
    what: str           # what was measured, e.g. "SM cycles at 8192^3"
    median_a: float
    median_b: float
    spread: float       # relative; the larger of the two sides', at least FLOOR

    @property
    def ratio(self) -> float:
        return self.median_b / self.median_a

    @property
    def outcome(self) -> str:
        """"level", "fewer" (b's median is lower by more than the spread) or "more"."""
        if abs(self.ratio - 1) <= self.spread:
            return "level"
        return "fewer" if self.ratio < 1 else "more"

    def __str__(self) -> str:
        change = abs(self.ratio - 1) * 100
        cycles = self.what.startswith("SM cycles")
        if self.outcome == "level":
            said = f"level: {self.b} differs from {self.a} by {change:.1f}%, within the spread of {self.spread:.1%}"
        else:
            amount = ("fewer" if self.outcome == "fewer" else "more") if cycles else \
                ("less" if self.outcome == "fewer" else "more")
            said = (f"{self.b} takes {change:.1f}% {amount} {'cycles' if cycles else 'time'} than {self.a}, beyond "
                    f"the spread of {self.spread:.1%}")
        medians = (f"medians {self.median_a / 1e6:.3f} M and {self.median_b / 1e6:.3f} M" if cycles
                   else f"median ratio {self.ratio:.3f}")
        return f"{self.what}: {said} ({medians})"


def compare(a: str, a_values, b: str, b_values, what: str) -> Verdict:
    """The verdict on two sets of measurements of one quantity (lower is better: cycles, milliseconds)."""
    a_values, b_values = list(a_values), list(b_values)
    spread = max(relative_spread(a_values), relative_spread(b_values), FLOOR)
    return Verdict(a, b, what, statistics.median(a_values), statistics.median(b_values), spread)


def compare_paired(a: str, b: str, ratios, what: str) -> Verdict:
    """The verdict on pairs measured back to back, given each pair's b / a: level when the median ratio lies
    within the ratios' own spread of 1."""
    ratios = list(ratios)
    return Verdict(a, b, what, 1.0, statistics.median(ratios), max(relative_spread(ratios), FLOOR))


def cycles_of(record: dict) -> list[int]:
    """The SM cycles of each logged launch of a bench record (its timing build's, cta_clock.py)."""
    return [launch["cycles"] for launch in record.get("launch_clocks") or ()]


def compare_records(a: dict, b: dict) -> Verdict | None:
    """Two bench records of one shape, compared by their launches' SM cycles; None where either has none."""
    if not cycles_of(a) or not cycles_of(b):
        return None
    shape = f"{a['M']}x{a['N']}x{a['K']}" if len({a["M"], a["N"], a["K"]}) > 1 else f"{a['M']}^3"
    return compare(f"rung {a['rung']}", cycles_of(a), f"rung {b['rung']}", cycles_of(b), f"SM cycles at {shape}")
