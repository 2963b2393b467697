"""A series of the store, analysed: its comparable stretches, each with its change points and outliers.

What `history` shows in the terminal and on its HTML page. A series is cut where the set's
version changed (revision, corpus or k): values on either side measure different things, so no
change is looked for across the cut. Quality figures are analysed with their per-query values
(overall scope); latency figures and other scopes with the run values alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from harness.history.changepoints import Analysis, Change, analyse
from harness.history.store import LATENCY_FIGURES, OVERALL, HistoryStore, Point, SeriesKey


@dataclass(frozen=True)
class Stretch:
    """Runs of one set version, oldest first, and what the analysis found in them."""

    points: tuple[Point, ...]
    analysis: Analysis

    def commit_range(self, change: Change) -> str:
        """`abc1234..def5678`: the commits after the last run at the old level up to the first at the new
        one (git's range syntax: what `bisect` or `git log` takes); times where a run has no commit."""
        return f"{self.name(change.last_before)}..{self.name(change.first_after)}"

    def name(self, index: int) -> str:
        """The run at `index` as a range names it: its commit, abbreviated as git does; its time without one."""
        point = self.points[index]
        if point.git_commit:
            return point.git_commit[:12]
        return point.time[:16].replace("T", " ") if point.time else f"run {point.run}"


@dataclass(frozen=True)
class Trend:
    key: SeriesKey
    stretches: tuple[Stretch, ...]
    total: int = 0  # the series' runs in the store (more than its points when cut to the last N)

    @property
    def points(self) -> list[Point]:
        return [point for stretch in self.stretches for point in stretch.points]

    @property
    def in_ms(self) -> bool:
        """A latency figure (ms); every other figure is a [0, 1] mean, shown in points."""
        return self.key.metric in LATENCY_FIGURES

    def value_text(self, value: float) -> str:
        return f"{value:.2f} ms" if self.in_ms else f"{value:.3f}"

    def size_text(self, size: float, unit: bool = True) -> str:
        """A change in the figure's unit: `−3.0 points` (a [0, 1] mean), `+1.25 ms`; without `unit`, the number."""
        if self.in_ms:
            text, name = f"{size:+.2f}", "ms"
        else:
            value = round(size * 100, 1)
            text, name = "0.0" if value == 0 else f"{value:+.1f}", "points"
        return text.replace("-", "\u2212") + (f" {name}" if unit else "")

    def ci_text(self, ci: tuple[float, float] | None) -> str:
        """`−3.9 to −1.7 points`, or `-` without a CI."""
        return "-" if ci is None else f"{self.size_text(ci[0], unit=False)} to {self.size_text(ci[1])}"


def trend(store: HistoryStore, key: SeriesKey, *, last: int | None = None, seed: int = 0) -> Trend:
    """The series `key` (its `last` runs when given), cut at set-version changes and analysed."""
    every = store.series(key)
    points = every[-last:] if last is not None else every
    stretches = []
    for _, group in groupby(points, key=lambda point: point.comparable):
        part = list(group)
        per_query = None
        if key.scope == OVERALL and key.metric not in LATENCY_FIGURES:
            found = store.per_query([p.run for p in part], key.set_name, key.metric)
            per_query = [found.get(p.run) for p in part] if found else None
        stretches.append(Stretch(tuple(part), analyse([p.value for p in part], per_query, seed=seed)))
    return Trend(key, tuple(stretches), len(every))
