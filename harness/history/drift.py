"""Slow drift: a figure that moved more than the limit over the last accepted baselines, each step green.

A team that accepts a 1.5-point drop five times has lost 7.5 points and never seen a red gate:
each re-baseline was compared with the one before. The drift gate compares the newest accepted
baseline with the oldest of a window (the last `baselines` accepted ones, or those of the last
`days` with the one in force when the window opened) and warns, or fails by policy, when the
figure fell by more than `limit_points` (by default the gate's own drop limit: what fails in one
step warns over several). The window holds only baselines of the set's current version
(revision, corpus, k): a new revision starts the series again. docs/history.md, "Slow drift".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import groupby

from harness.gating.gates import FLOAT_SLACK, FRACTION
from harness.gating.policy import DEFAULT_DRIFT_BASELINES, GatePolicy
from harness.history.store import BASELINE, OVERALL, HistoryStore, Point, SeriesKey
from harness.records import GateResult
from harness.report.document import Report, exit_code_for
from harness.report.verdict import points

DRIFT_GATE = "drift"


@dataclass(frozen=True)
class DriftPolicy:
    """How far a figure may move over which window of accepted baselines, and whether that fails."""

    limit_points: float = GatePolicy().drop_limit_points
    baselines: int | None = DEFAULT_DRIFT_BASELINES  # the last N accepted baselines ...
    days: float | None = None                        # ... or those of the last D days (then baselines is None)
    fails: bool = False

    @classmethod
    def of(cls, policy: GatePolicy) -> DriftPolicy:
        """The gate policy's `drift` section (its limit defaults to the policy's drop limit)."""
        return cls(limit_points=policy.drop_limit_points if policy.drift_limit_points is None
                   else policy.drift_limit_points,
                   baselines=None if policy.drift_days is not None else policy.drift_baselines,
                   days=policy.drift_days, fails=policy.drift_fails)

    @classmethod
    def recorded(cls, policy: Mapping[str, object]) -> DriftPolicy:
        """The drift settings of the policy a report records (`GatePolicy.to_dict`); a report written
        before the policy had a `drift` section gets the defaults with its drop limit."""
        drift = policy.get("drift")
        drift = drift if isinstance(drift, Mapping) else {}
        limit = drift.get("limit_points")
        if not isinstance(limit, (int, float)):
            limit = policy.get("drop_limit_points")
        days, baselines = drift.get("days"), drift.get("baselines")
        days = days if isinstance(days, (int, float)) else None
        return cls(limit_points=limit if isinstance(limit, (int, float)) else cls.limit_points,
                   baselines=None if days is not None else
                   baselines if isinstance(baselines, int) else DEFAULT_DRIFT_BASELINES,
                   days=days, fails=drift.get("fails") is True)

    def window_text(self) -> str:
        return f"the last {self.days:g} days" if self.days is not None else f"the last {self.baselines} baselines"


@dataclass(frozen=True)
class Drift:
    """A window of accepted baselines of one figure, oldest first, and whether it drifted too far."""

    key: SeriesKey
    window: tuple[Point, ...]
    policy: DriftPolicy

    @property
    def change(self) -> float:
        return self.window[-1].value - self.window[0].value

    @property
    def drifted(self) -> bool:
        """Fell by more than the limit (the gates' rounding rule: an exact limit passes)."""
        return -self.change > self.policy.limit_points / 100 + FLOAT_SLACK

    def message(self) -> str:
        """`memory recall@10 moved -3.0 points over 6 accepted baselines since 2026-11-02 (0.800 -> 0.770;
        largest step -0.6); limit over the last 10 baselines: 2.0 points`."""
        first, last = self.window[0], self.window[-1]
        since = f" since {first.time[:10]}" if first.time else ""
        largest = max((b.value - a.value for a, b in zip(self.window, self.window[1:])), key=abs)
        return (f"{self.key.set_name} {self.key.metric} moved {points(self.change)} points over {len(self.window)} "
                f"accepted baselines{since} ({first.value:.3f} -> {last.value:.3f}; largest step {points(largest)}); "
                f"limit over {self.policy.window_text()}: {self.policy.limit_points:.1f} points")

    def gate(self) -> GateResult:
        over = self.drifted
        return GateResult(set_name=self.key.set_name, gate=DRIFT_GATE, passed=not (over and self.policy.fails),
                          warning=over and not self.policy.fails, message=self.message(), metric=self.key.metric,
                          baseline=self.window[0].value, current=self.window[-1].value,
                          limit=self.policy.limit_points / 100, unit=FRACTION)


def window(accepted: Sequence[Point], policy: DriftPolicy) -> tuple[Point, ...]:
    """The accepted baselines the policy looks over: of the newest's set version, the last `baselines`
    of them, or those of the last `days` (by the newest's time) and the one in force before them."""
    if not accepted:
        return ()
    newest = accepted[-1]
    same = [list(points) for _, points in groupby(accepted, key=lambda point: point.comparable)][-1]  # its version
    if policy.days is None:
        return tuple(same[-(policy.baselines or 1):])
    if newest.time is None:
        return tuple(same[-1:])
    opened = (datetime.fromisoformat(newest.time) - timedelta(days=policy.days)).isoformat(timespec="seconds")
    first_inside = next(i for i, point in enumerate(same) if point.time is not None and point.time >= opened)
    return tuple(same[max(0, first_inside - 1):])  # the newest is inside; the one before the window was in force


def drifts(store: HistoryStore, backend: str, set_names: Sequence[str], metrics: Sequence[str],
           policy: DriftPolicy) -> list[Drift]:
    """The drift of each set's overall `metrics` over its accepted baselines in `store` (the backend's),
    for every set and metric with at least two baselines in the window."""
    found = []
    for set_name in set_names:
        for metric in metrics:
            key = SeriesKey(BASELINE, backend, set_name, OVERALL, metric)
            points = window(store.series(key), policy)
            if len(points) >= 2:
                found.append(Drift(key, points, policy))
    return found


def with_drift_gates(report: Report, found: Sequence[Drift]) -> Report:
    """The report with one drift gate per figure looked at, and its exit code decided again (a
    drift fails the run only under a failing policy)."""
    if not found or report.error is not None:
        return report
    gates = report.gates + tuple(drift.gate() for drift in found)
    return dataclasses.replace(report, gates=gates, exit_code=exit_code_for(None, gates))
