"""The console output of a run: a compact table per set, start-up, then one line per gate."""

from __future__ import annotations

from harness.records import SetResult
from harness.report import evidence
from harness.report.document import Report
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
    return f"{values[name]:.3f}" if name in values else "-"


def render_text(report: Report) -> str:
    """Compact console tables, one per set, then one line per gate result."""
    lines: list[str] = []
    provenance = report.provenance
    lines.append(f"backend: {provenance.backend.label}  condition: {provenance.condition}")
    for result in report.sets:
        status = "" if result.complete else "  INCOMPLETE"
        lines.append("")
        lines.append(f"set {result.name} (revision {result.revision}, {result.query_count} queries, "
                     f"k={result.k}){status}")
        rows = scope_rows(result)
        width = max(len(label) for label, _ in rows) + 2
        lines.append(" " * width + f"{'n':>5}" + "".join(f"{m:>11}" for m in TABLE_METRICS))
        for label, values in rows:
            lines.append(f"{label:<{width}}{values['n']:>5}" + "".join(f"{cell(values, m):>11}" for m in TABLE_METRICS))
        latency = result.latency_ms
        if latency.get("n"):
            lines.append(f"latency ms: p50 {latency['p50']:.2f}  p95 {latency['p95']:.2f}  max {latency['max']:.2f}"
                         f"  (n={latency['n']})")
        outcome_text = ", ".join(f"{n} {name}" for name, n in sorted(outcome_counts(result).items()))
        lines.append(f"queries: {outcome_text}")
        lines.extend(evidence.text_lines(result))  # issue 17; nothing for sets without evidence
    lines.extend(_startup_lines(report))
    if report.gates:
        lines.append("")
        for gate in report.gates:
            lines.append(f"{'PASS' if gate.passed else 'FAIL'} {gate.gate:<11} {gate.message}")
    return "\n".join(lines) + "\n"


def _startup_lines(report: Report) -> list[str]:
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
