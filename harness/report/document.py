"""Render a run report: the JSON document (--out), the console table and the Markdown summary.

REPORT_FORMAT history:
  1 — first version: provenance, sets (aggregates, latency, per-query rows), gates, complete.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

REPORT_FORMAT = 1
TABLE_METRICS = ("recall@5", "recall@10", "mrr", "ndcg@10")


def to_json(report: Mapping[str, object]) -> str:
    return json.dumps(report, indent=1, ensure_ascii=False) + "\n"


def _rows(set_report: Mapping) -> list[tuple[str, Mapping]]:
    aggregates = set_report["aggregates"]
    rows: list[tuple[str, Mapping]] = [("overall", aggregates["overall"])]
    rows += [(f"  {name}", values) for name, values in aggregates["category"].items()]
    rows += [(f"  split:{name}", values) for name, values in aggregates["split"].items()]
    return rows


def _outcomes(set_report: Mapping) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in set_report["queries"]:
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    return counts


def _cell(values: Mapping, name: str) -> str:
    return f"{values[name]:.3f}" if name in values else "-"


def render_text(report: Mapping[str, object]) -> str:
    """Compact console tables, one per set, then one line per gate result."""
    lines: list[str] = []
    backend = report["provenance"]["backend"]  # type: ignore[index]
    lines.append(f"backend: {backend.get('label')}  condition: {report['provenance'].get('condition')}")  # type: ignore[index,union-attr]
    for set_report in report["sets"]:  # type: ignore[union-attr]
        status = "" if set_report["complete"] else "  INCOMPLETE"
        lines.append("")
        lines.append(f"set {set_report['name']} (revision {set_report['revision']}, "
                     f"{set_report['query_count']} queries, k={set_report['k']}){status}")
        width = max(len(label) for label, _ in _rows(set_report)) + 2
        lines.append(" " * width + f"{'n':>5}" + "".join(f"{m:>11}" for m in TABLE_METRICS))
        for label, values in _rows(set_report):
            lines.append(f"{label:<{width}}{values['n']:>5}" + "".join(f"{_cell(values, m):>11}" for m in TABLE_METRICS))
        latency = set_report["latency_ms"]
        if latency.get("n"):
            lines.append(f"latency ms: p50 {latency['p50']:.2f}  p95 {latency['p95']:.2f}  max {latency['max']:.2f}"
                         f"  (n={latency['n']})")
        outcome_text = ", ".join(f"{n} {name}" for name, n in sorted(_outcomes(set_report).items()))
        lines.append(f"queries: {outcome_text}")
    lines.extend(_startup_lines(report))
    gates = report.get("gates") or []
    if gates:
        lines.append("")
        for gate in gates:  # type: ignore[union-attr]
            lines.append(f"{'PASS' if gate['passed'] else 'FAIL'} {gate['gate']:<11} {gate['message']}")
    return "\n".join(lines) + "\n"


def _startup_lines(report: Mapping[str, object]) -> list[str]:
    adapter = report["provenance"].get("adapter", {})  # type: ignore[union-attr]
    startup = adapter.get("startup_seconds")
    if startup is not None:
        return ["", f"adapter startup: {startup:.3f} s to the ready banner"]
    return ["", "adapter startup: no ready banner; the first query's latency includes start-up"]


def render_markdown(report: Mapping[str, object]) -> str:
    """A summary for CI job pages: verdict, a table per set, the failed gates."""
    gates: Sequence[Mapping] = report.get("gates") or []  # type: ignore[assignment]
    failed = [g for g in gates if not g["passed"]]
    if not report.get("complete", False):
        verdict = "**retrieval-gate: backend failed, incomplete run**"
    elif not gates:
        verdict = "**retrieval-gate: measured (no gate)**"
    else:
        verdict = "**retrieval-gate: FAILED**" if failed else "**retrieval-gate: passed**"
    lines = [verdict, ""]
    backend = report["provenance"]["backend"]  # type: ignore[index]
    lines.append(f"Backend: `{backend.get('label')}`")
    lines.append("")
    lines.append("| set | scope | n | " + " | ".join(TABLE_METRICS) + " | p95 ms |")
    lines.append("|---|---|---:|" + "---:|" * (len(TABLE_METRICS) + 1))
    for set_report in report["sets"]:  # type: ignore[union-attr]
        p95 = set_report["latency_ms"].get("p95")
        for label, values in _rows(set_report):
            latency = f"{p95:.1f}" if (label == "overall" and p95 is not None) else ""
            cells = " | ".join(_cell(values, m) for m in TABLE_METRICS)
            lines.append(f"| {set_report['name']} | {label.strip()} | {values['n']} | {cells} | {latency} |")
    if failed:
        lines.append("")
        lines.append("Failed gates:")
        lines.extend(f"- {g['message']}" for g in failed)
    if report.get("error"):
        lines.append("")
        lines.append(f"Error: {report['error']}")
    return "\n".join(lines) + "\n"
