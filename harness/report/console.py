"""The console output of a run: who and against what, a table per set, failures first, the verdict last.

Text from outside (banner, baseline, category names, gate messages that quote them) is shown with
`terminal_line` (harness/report/escape.py) before any colour is added: it can add no line and send
the terminal no control.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from harness.gating.gates import baseline_latency_measured
from harness.measured import Latency, ScopeNumbers
from harness.records import SetResult
from harness.report import evidence
from harness.report.escape import terminal_line
from harness.report.document import Report
from harness.report.terminal import PLAIN, Style
from harness.report.verdict import (backend_identity, baseline_text, category_problems, change_text,
                                    improvement_text, improvements, ordered_gates, rebaseline_hint,
                                    resources_line, startup_text, value_text, verdict_of)
from harness.scoring.evaluate import TABLE_METRICS
from harness.text import plural


def cell(scope: ScopeNumbers, name: str) -> str:
    """A scope's mean of `name` as tables show it (`-` when the scope has none)."""
    return f"{scope.means[name] + 0.0:.3f}" if name in scope.means else "-"


def render_text(report: Report, *, verbose: bool = False, style: Style = PLAIN,
                written: Sequence[tuple[str, str]] = ()) -> str:
    """The console report: who ran against which baseline, a table per set, failures, warnings,
    a count of what passed (each passing gate with `verbose`), the files written, the verdict last.

    `written` is (what, path) pairs such as ("report", "r.json"), shown on one line before the
    verdict; `style` colours status words and the verdict (PLAIN: none, as in the golden files).
    """
    provenance = report.provenance  # who, under which condition, against which baseline file
    lines = [f"backend: {terminal_line(backend_identity(provenance))}"
             + (f"  condition: {terminal_line(provenance.condition)}" if provenance.condition else "")]
    baseline = baseline_text(provenance)
    lines += [f"baseline: {terminal_line(baseline)}"] if baseline else []
    for result in report.sets:
        lines.append("")
        lines.extend(_set_lines(result, (report.baseline_latency or {}).get(result.name)))
        resources = resources_line(result, report)
        lines += [f"resources: {resources}"] if resources is not None else []
    lines.extend(pooled_lines(report))
    startup = startup_text(provenance)
    lines += ["", f"adapter startup: {startup}"] if startup is not None else []
    lines.extend(gate_lines(report, verbose=verbose, style=style))
    lines.append("")
    if written:
        lines.append("  ".join(f"{what}: {path}" for what, path in written))
    final = verdict_of(report)
    lines.append(style.paint(final.status, terminal_line(final.line)))
    return "\n".join(lines) + "\n"


def latency_text(latency: Latency, baseline: Latency | None) -> str:
    """`p50 0.55 (baseline 0.52)  p95 0.82 (baseline 0.80)  max 3.17`: the run's latency beside the baseline's."""
    def figure(name: str, value: float | None, was: float | None) -> str:
        return f"{name} {value or 0.0:.2f}" + (f" (baseline {was:.2f})" if was is not None else "")
    return (f"{figure('p50', latency.p50, baseline.p50 if baseline else None)}  "
            f"{figure('p95', latency.p95, baseline.p95 if baseline else None)}  max {latency.max or 0.0:.2f}")


def _set_lines(result: SetResult, baseline_latency: Latency | None = None) -> list[str]:
    status = "" if result.complete else f"  INCOMPLETE ({len(result.queries)} of {result.query_count} answered)"
    lines = [f"set {terminal_line(result.name)} (revision {result.revision}, {plural(result.query_count, 'query', 'queries')}, k={result.k}){status}"]
    # overall, then each category and split indented (a category by its name alone)
    rows = [(terminal_line(label if label == "overall" else "  " + label.removeprefix("category:")), scope)
            for label, scope in result.aggregates.scopes()]
    width = max(len(label) for label, _ in rows) + 2
    lines.append(" " * width + f"{'n':>5}" + "".join(f"{m:>11}" for m in TABLE_METRICS))
    for label, scope in rows:
        lines.append(f"{label:<{width}}{scope.n:>5}" + "".join(f"{cell(scope, m):>11}" for m in TABLE_METRICS))
    latency = result.latency
    if latency.n:
        how = f", baseline {baseline_latency_measured(result)}" if baseline_latency is not None else ""
        lines.append(f"latency ms: {latency_text(latency, baseline_latency)}  (n={latency.n}){how}")
    outcomes = ", ".join(f"{n} {name}" for name, n in sorted(Counter(q.outcome for q in result.queries).items()))
    lines.append(f"queries: {outcomes or 'none answered'}")
    lines.extend(evidence.text_lines(result))  # nothing for sets without evidence
    return lines


def pooled_lines(report: Report) -> list[str]:
    """One line of means over every scored query of every set, when the run has several sets."""
    pooled = report.pooled
    if pooled is None or len(report.sets) < 2:
        return []
    cells = "  ".join(f"{m} {cell(pooled, m)}" for m in TABLE_METRICS)
    return ["", f"pooled over {len(report.sets)} sets (n={pooled.n} scored queries): {cells}"]


def gate_lines(report: Report, *, verbose: bool = False, style: Style = PLAIN) -> list[str]:
    """A set's FAIL and WARN lines, then each set's categories beyond the limit as one compact table,
    then what improved (with the re-baseline hint), then one line counting the passes (or, `verbose`,
    a PASS line each)."""
    if not report.gates:
        return []
    lines = [""]
    passed = []
    for gate in ordered_gates(report):
        if gate.status == "pass" and not verbose:
            passed.append(gate)
        elif gate.category is None or verbose:
            lines.append(f"{style.status(gate.status)} {gate.gate:<11} {terminal_line(gate.message)}")
    for name, gates in category_problems(report).items() if not verbose else ():
        lines.extend(_category_table(name, gates, style))
    better = improvements(report)
    lines += [f"{style.paint('pass', 'IMPROVED')} {terminal_line(improvement_text(gate))}" for gate in better]
    lines += [f"         {terminal_line(rebaseline_hint(report))}"] if better else []
    if passed:
        listing = ", ".join(f"{kind} {n}" for kind, n in Counter(gate.gate for gate in passed).items())
        lines.append(style.paint("pass", f"passed: {plural(len(passed), 'gate')}") + f" ({listing}); -v lists them")
    return lines


def _category_table(name: str, gates: list, style: Style) -> list[str]:
    """One set's categories that failed or warned: `status category metric baseline current change`."""
    rows = [(terminal_line(gate.category or ""), terminal_line(gate.metric or gate.gate), value_text(gate, gate.baseline),
             value_text(gate, gate.current), change_text(gate), gate.status) for gate in gates]
    width = max(len("category"), *(len(row[0]) for row in rows))
    metric_width = max(len("gate"), *(len(row[1]) for row in rows))
    lines = [f"categories of {terminal_line(name)} beyond the limit (details: -v or the report):",
             f"     {'category':<{width}}  {'gate':<{metric_width}} {'baseline':>9} {'current':>9} {'change':>10}"]
    for category, metric, before, now, change, status in rows:
        lines.append(f"{style.status(status)} {category:<{width}}  {metric:<{metric_width}} {before:>9} {now:>9} "
                     f"{change:>10}")
    return lines


def render_what_if(name: str, what_if: dict) -> str:
    """One line per set for `--what-if-min-score` (report only)."""
    cut, real = what_if["metrics"], what_if["real_metrics"]
    cells = "  ".join(f"{m} {real[m]:.3f} -> {cut[m]:.3f}" for m in cut if cut[m] is not None)
    note = f"; {what_if['queries_without_scores']} queries had no scores" if what_if["queries_without_scores"] else ""
    return (f"what-if {name} (hits scoring < {what_if['threshold']} dropped, report only): {cells}; "
            f"{what_if['rows_dropped']} rows dropped{note}")
