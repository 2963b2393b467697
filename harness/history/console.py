"""The history in the terminal: per series, its runs as a sparkline, its changes with their commit range and
size, its outliers, and where the set's version changed; the drift lines; a bisection's steps and answer.

Text from the store (backend labels, set names, identities) goes through `terminal_line`
(harness/report/escape.py): a label cannot add a line or move the cursor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness.history.bisect import NO_CHANGE, RANGE, Outcome, Step
from harness.history.drift import Drift
from harness.history.trend import Trend
from harness.report.escape import terminal_line
from harness.report.verdict import points
from harness.text import plural

SPARK = "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"
SPARK_RUNS = 60  # the sparkline shows this many runs at most (the newest)


def render_trends(trends: Sequence[Trend]) -> str:
    """Every series, one block each, separated by a blank line."""
    return "\n\n".join(trend_text(trend) for trend in trends) + "\n" if trends else ""


def trend_text(trend: Trend) -> str:
    points = trend.points
    count = plural(len(points), "run") if trend.key.kind == "run" else f"{len(points)} accepted baselines"
    first, last = (points[0].time, points[-1].time) if points else (None, None)
    dates = f", {first[:10]} .. {last[:10]}" if first and last else ""
    cut = f" (the last {len(points)} of {trend.total})" if trend.total > len(points) else ""
    lines = [f"{terminal_line(trend.key.label())}: {count}{cut}{dates}"]
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


# -- bisect ----------------------------------------------------------------------------------------

FLIPS_SHOWN = 10


def bisect_step_line(step: Step, metric: str) -> str:
    """`a1b2c3d4e5f6 bad        recall@10 -5.0 points vs GOOD (95% CI -7.3 to -2.8)`."""
    moved = "" if step.change is None else (f"{metric} {points(step.change)} points vs GOOD (95% CI "
                                            f"{points(step.ci[0])} to {points(step.ci[1])})" if step.ci else "")
    runs = f", {step.runs} runs" if step.runs > 1 else ""
    note = f" [{terminal_line(step.note)}]" if step.note else ""
    return f"{step.commit[:12]} {step.verdict:<10} {moved}{runs}{note}".rstrip()


def bisect_text(outcome: Outcome, describe: Callable[[str], str]) -> str:
    """The answer: the sets' GOOD -> BAD change, then the first bad commit and the queries it flipped, the
    range it is in, or that no change is detectable and how large one would have to be."""
    lines = []
    for change in outcome.sets:
        detectable = "" if change.detectable is None else f"; detectable: {100 * change.detectable:.1f} points"
        lines.append(f"{terminal_line(change.name)}: {outcome.metric} {points(change.change)} points GOOD -> BAD "
                     f"(95% CI {points(change.ci[0])} to {points(change.ci[1])}, p={change.p_value:.3g}, "
                     f"{change.queries} queries{detectable}){': affected' if change.affected else ''}")
    if outcome.verdict == NO_CHANGE:
        sizes = [c.detectable for c in outcome.sets if c.detectable is not None]
        size = f"; the smallest change these queries can detect is {100 * min(sizes):.1f} points" if sizes else ""
        lines.append(f"no change detectable between {outcome.good[:12]} and {outcome.bad[:12]}{size} "
                     f"(alpha 0.05, power 0.8): nothing to bisect")
    elif outcome.verdict == RANGE:
        lines.append(f"the first bad commit is one of {len(outcome.suspects)} (undecided ones in between): "
                     + ", ".join(terminal_line(describe(c)) for c in outcome.suspects))
    else:
        lines.append(f"first bad commit: {terminal_line(describe(outcome.first_bad or ''))}")
        lost = [f for f in outcome.flips if f.lost]
        lines.append(f"  it flipped {len(outcome.flips)} queries against the last good commit "
                     f"({len(lost)} lost a relevant document)" + (":" if outcome.flips else ""))
        for flip in outcome.flips[:FLIPS_SHOWN]:
            lines.append(f"  {terminal_line(flip.set_name)} {terminal_line(flip.qid)}: "
                         f"{terminal_line(flip.change_text())}")
        if len(outcome.flips) > FLIPS_SHOWN:
            lines.append(f"  ... and {len(outcome.flips) - FLIPS_SHOWN} more (--json lists them all)")
    lines.append(f"gate runs: {outcome.gate_runs}")
    return "\n".join(lines) + "\n"
