"""The history in the terminal: per series, its runs as a sparkline, its changes with their commit range and
size, its outliers, and where the set's version changed.

Text from the store (backend labels, set names, identities) goes through `terminal_line`
(harness/report/escape.py): a label cannot add a line or move the cursor.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.history.drift import Drift
from harness.history.trend import Trend
from harness.report.escape import terminal_line
from harness.report.verdict import plural

SPARK = "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"
SPARK_RUNS = 60  # the sparkline shows this many runs at most (the newest)


def render_trends(trends: Sequence[Trend]) -> str:
    """Every series, one block each, separated by a blank line."""
    return "\n\n".join(trend_text(trend) for trend in trends) + "\n" if trends else ""


def trend_text(trend: Trend) -> str:
    points = trend.points
    kind = "runs" if trend.key.kind == "run" else "accepted baselines"
    dates = f", {points[0].time[:10]} .. {points[-1].time[:10]}" if points and points[0].time and points[-1].time else ""
    lines = [f"{terminal_line(trend.key.label())}: {plural(len(points), 'run') if kind == 'runs' else len(points)}"
             f"{'' if kind == 'runs' else ' ' + kind}{dates}"]
    if not points:
        return lines[0]
    shown = [p.value for p in points[-SPARK_RUNS:]]
    lines.append(f"  {trend.value_text(shown[0])} {sparkline(shown)} {trend.value_text(shown[-1])}"
                 f"  (min {trend.value_text(min(shown))}, max {trend.value_text(max(shown))}"
                 f"{'' if len(points) <= SPARK_RUNS else f', the last {SPARK_RUNS} runs'})")
    for number, stretch in enumerate(trend.stretches):
        if number:
            lines.append(f"  set version changed at {terminal_line(stretch.name(0))}: "
                         f"not compared across ({terminal_line(stretch.points[0].comparable)})")
        for change in stretch.analysis.changes:
            ci = "" if change.ci is None else f" (95% CI {trend.ci_text(change.ci)})"
            lines.append(f"  change: {trend.size_text(change.size)}{ci}, {trend.value_text(change.before)} -> "
                         f"{trend.value_text(change.after)}, in {terminal_line(stretch.commit_range(change))}")
        for outlier in stretch.analysis.outliers:
            state = "the latest run, off its level so far" if outlier.latest else "outlier, back to its level after"
            lines.append(f"  {state}: {terminal_line(stretch.name(outlier.index))} "
                         f"{trend.size_text(outlier.size)} ({trend.value_text(outlier.value)})")
    if not any(s.analysis.changes or s.analysis.outliers for s in trend.stretches):
        lines.append("  no change point")
    return "\n".join(lines)


def render_drifts(drifts: Sequence[Drift]) -> str:
    """One line per figure looked at: DRIFT (over the limit) or ok, and the move over the window."""
    return "".join(f"{'DRIFT' if drift.drifted else 'ok   '} {terminal_line(drift.key.backend)}: "
                   f"{terminal_line(drift.message())}\n" for drift in drifts)


def sparkline(values: Sequence[float]) -> str:
    """One block character per value, scaled from the lowest to the highest (all alike: the middle)."""
    low, high = min(values), max(values)
    if high - low < 1e-12:
        return SPARK[3] * len(values)
    return "".join(SPARK[min(len(SPARK) - 1, int((v - low) / (high - low) * len(SPARK)))] for v in values)

