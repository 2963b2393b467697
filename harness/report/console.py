"""The console output of a run: who and against what, a table per set, failures first, the verdict last."""

from __future__ import annotations

from collections.abc import Sequence

from harness.records import SetResult
from harness.report import evidence
from harness.report.document import Report
from harness.report.terminal import PLAIN, Style
from harness.report.verdict import backend_identity, baseline_text, ordered_gates, plural, verdict
from harness.scoring.evaluate import TABLE_METRICS


def scope_rows(result: SetResult) -> list[tuple[str, dict]]:
    """(label, metric means) for overall, each category and each split, in the order tables show them."""
    aggregates = result.aggregates
    rows: list[tuple[str, dict]] = [("overall", aggregates["overall"])]  # type: ignore[index]
    rows += [(f"  {name}", values) for name, values in aggregates["category"].items()]  # type: ignore[union-attr]
    rows += [(f"  split:{name}", values) for name, values in aggregates["split"].items()]  # type: ignore[union-attr]
    return rows


def outcome_counts(result: SetResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in result.queries:
        counts[row.outcome] = counts.get(row.outcome, 0) + 1
    return counts


def cell(values: dict, name: str) -> str:
    return f"{values[name] + 0.0:.3f}" if name in values else "-"


def render_text(report: Report, *, verbose: bool = False, style: Style = PLAIN,
                written: Sequence[tuple[str, str]] = ()) -> str:
    """The console report: who ran against which baseline, a table per set, failures, warnings,
    a count of what passed (each passing gate with `verbose`), the files written, the verdict last.

    `written` is (what, path) pairs such as ("report", "r.json"), shown on one line before the
    verdict; `style` colours status words and the verdict (PLAIN: none, as in the golden files).
    """
    lines = _header_lines(report)
    for result in report.sets:
        lines.append("")
        lines.extend(_set_lines(result))
    lines.extend(pooled_lines(report))
    lines.extend(_startup_lines(report))
    lines.extend(gate_lines(report, verbose=verbose, style=style))
    lines.append("")
    if written:
        lines.append("  ".join(f"{what}: {path}" for what, path in written))
    final = verdict(report)
    lines.append(style.paint(final.status, final.line))
    return "\n".join(lines) + "\n"


def _header_lines(report: Report) -> list[str]:
    """`backend: ...  condition: ...` (condition only when given) and the baseline file when known."""
    provenance = report.provenance
    head = f"backend: {backend_identity(provenance)}"
    if provenance.condition:
        head += f"  condition: {provenance.condition}"
    lines = [head]
    baseline = baseline_text(provenance)
    if baseline:
        lines.append(f"baseline: {baseline}")
    return lines


def _set_lines(result: SetResult) -> list[str]:
    answered = len(result.queries)
    status = "" if result.complete else f"  INCOMPLETE ({answered} of {result.query_count} answered)"
    lines = [f"set {result.name} (revision {result.revision}, {result.query_count} queries, k={result.k}){status}"]
    rows = scope_rows(result)
    width = max(len(label) for label, _ in rows) + 2
    lines.append(" " * width + f"{'n':>5}" + "".join(f"{m:>11}" for m in TABLE_METRICS))
    for label, values in rows:
        lines.append(f"{label:<{width}}{values.get('n', 0):>5}"
                     + "".join(f"{cell(values, m):>11}" for m in TABLE_METRICS))
    latency = result.latency_ms
    if latency.get("n"):
        lines.append(f"latency ms: p50 {latency['p50']:.2f}  p95 {latency['p95']:.2f}  max {latency['max']:.2f}"
                     f"  (n={latency['n']:.0f})")
    outcomes = ", ".join(f"{n} {name}" for name, n in sorted(outcome_counts(result).items()))
    lines.append(f"queries: {outcomes or 'none answered'}")
    lines.extend(evidence.text_lines(result))  # nothing for sets without evidence
    return lines


def pooled_lines(report: Report) -> list[str]:
    """One line of means over every scored query of every set, when the run has several sets."""
    pooled = report.pooled
    if pooled is None or len(report.sets) < 2:
        return []
    cells = "  ".join(f"{m} {cell(pooled, m)}" for m in TABLE_METRICS)
    return ["", f"pooled over {len(report.sets)} sets (n={pooled.get('n', 0):.0f} scored queries): {cells}"]


def gate_lines(report: Report, *, verbose: bool = False, style: Style = PLAIN) -> list[str]:
    """FAIL lines, then WARN lines, then one line counting the passes (or a PASS line each, `verbose`)."""
    if not report.gates:
        return []
    lines = [""]
    passed = []
    for gate in ordered_gates(report):
        if gate.status == "pass" and not verbose:
            passed.append(gate)
            continue
        lines.append(f"{style.status(gate.status)} {gate.gate:<11} {gate.message}")
    if passed:
        kinds: dict[str, int] = {}
        for gate in passed:
            kinds[gate.gate] = kinds.get(gate.gate, 0) + 1
        listing = ", ".join(f"{kind} {n}" for kind, n in kinds.items())
        lines.append(style.paint("pass", f"passed: {plural(len(passed), 'gate')}") + f" ({listing}); -v lists them")
    return lines


def _startup_lines(report: Report) -> list[str]:
    if report.provenance.run_file:
        return []
    startup = report.provenance.adapter.startup_seconds
    if startup is not None:
        return ["", f"adapter startup: {startup:.3f} s to the ready banner"]
    return ["", "adapter startup: no ready banner; the first query's latency includes start-up"]


def render_what_if(name: str, what_if: dict) -> str:
    """One line per set for `--what-if-min-score` (report only)."""
    cut, real = what_if["metrics"], what_if["real_metrics"]
    cells = "  ".join(f"{m} {real[m]:.3f} -> {cut[m]:.3f}" for m in cut if cut[m] is not None)
    note = f"; {what_if['queries_without_scores']} queries had no scores" if what_if["queries_without_scores"] else ""
    return (f"what-if {name} (hits scoring < {what_if['threshold']} dropped, report only): {cells}; "
            f"{what_if['rows_dropped']} rows dropped{note}")
