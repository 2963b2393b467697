"""The Markdown summary of a run, for CI job pages and pull-request comments (`--summary`, `$GITHUB_STEP_SUMMARY`).

GitHub-flavoured Markdown: the verdict and counts first, then failures and warnings with their
flipped queries, a table of every gated value (baseline, current, change), category rows folded
in `<details>` (blank lines around a folded table, or GitHub shows it as text), an adapter's
stderr tail as a fenced block. Every table cell goes through `_cell`, so a `|` in a message
cannot split a row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.gating.gates import RECALL_METRIC
from harness.records import GateResult, SetResult
from harness.report.console import cell, scope_rows
from harness.report import evidence
from harness.report.document import Report
from harness.report.verdict import (backend_identity, baseline_text, counts_line, error_parts, plural, points, verdict)
from harness.scoring.evaluate import TABLE_METRICS

MAX_QUERIES_LISTED = 10  # per failed gate; the rest are counted
STATUS_WORDS = {"fail": "❌ FAIL", "warn": "⚠️ WARN", "pass": "✅ pass"}


def render_markdown(report: Report, baseline_sets: Mapping[str, Mapping] | None = None) -> str:
    """The summary. `baseline_sets` (set name -> baseline entry, `GateInputs.baseline_entries`)
    fills the baseline and change columns; without it they show `-`."""
    final = verdict(report, baseline_sets)
    lines = [f"### retrieval-gate: {final.word}", "", f"**{_inline(final.line)}**"]
    if report.gates:
        lines += ["", f"Gates: {counts_line(report)}."]
    lines += ["", *_identity_lines(report)]
    if report.error:
        lines += ["", *_error_lines(report.error)]
    failed, warned = report.failed_gates, report.warned_gates
    if failed:
        lines += ["", "#### Failures", ""] + _gate_items(failed, report, baseline_sets)
    if warned:
        lines += ["", "#### Warnings", ""] + _gate_items(warned, report, baseline_sets)
    if report.gates:
        lines += ["", "#### Gated values", ""] + _gated_values(report, baseline_sets)
    for result in report.sets:
        lines += ["", *_metrics_block(result)]
    if report.pooled is not None and len(report.sets) > 1:  # one row: every scored query of every set
        pooled = report.pooled
        lines += ["", f"#### pooled over {len(report.sets)} sets", "",
                  "| scope | n | " + " | ".join(TABLE_METRICS) + " |", "|---|---:|" + "---:|" * len(TABLE_METRICS),
                  f"| all sets | {pooled.get('n', 0):.0f} | " + " | ".join(cell(pooled, m) for m in TABLE_METRICS) + " |"]
    lines.extend(evidence.markdown_lines(report.sets))  # nothing for sets without evidence
    return "\n".join(lines) + "\n"


def _inline(text: str) -> str:
    """Text safe inside emphasis or a table cell: no pipes, backslashes kept, one line."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("\n", " ")


def _code(text: str) -> str:
    """Inline code that survives backticks in the text."""
    fence = "``" if "`" in text else "`"
    body = text.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def _cell(text: str) -> str:
    return _inline(text) if text else " "


def _identity_lines(report: Report) -> list[str]:
    provenance = report.provenance
    lines = [f"- Backend: {_code(backend_identity(provenance))}"]
    baseline = baseline_text(provenance)
    if baseline:
        lines.append(f"- Baseline: {_code(baseline)}")
    elif report.gates:
        lines.append("- Baseline: not recorded in this report")
    facts = []
    if provenance.condition:
        facts.append(f"condition {provenance.condition}")
    if provenance.git_commit:
        facts.append(f"commit {provenance.git_commit[:12]}")
    if provenance.started:
        facts.append(f"started {provenance.started}")
    if facts:
        lines.append(f"- Run: {_inline(', '.join(facts))}")
    return lines


def _error_lines(error: str) -> list[str]:
    first, tail = error_parts(error)
    lines = [f"**Error:** {_inline(first)}"]
    if tail:
        fence = "````" if "```" in tail else "```"
        lines += ["", f"{fence}text", tail, fence]
    return lines


def _gate_items(gates: Sequence[GateResult], report: Report, baseline_sets: Mapping[str, Mapping] | None) -> list[str]:
    """One bullet per gate, its flipped (or contract-breaking) queries as sub-bullets with their text."""
    lines = []
    for gate in gates:
        lines.append(f"- **{gate.gate}** {_inline(gate.message)}")
        if not gate.flipped:
            continue
        queries = _queries_by_qid(report, gate.set_name)
        entry = (baseline_sets or {}).get(gate.set_name) or {}
        before = entry.get("queries") or {}
        for qid in gate.flipped[:MAX_QUERIES_LISTED]:
            row = queries.get(qid)
            detail = ""
            if row is not None and qid in before:
                lost = [d for d in (before[qid].get("found") or []) if d not in row.found]
                if lost:
                    detail = " lost " + ", ".join(_code(d) for d in lost)
            if row is not None and gate.gate == "contract":
                broken = [c for c in row.contracts if not c.passed]
                detail = " " + "; ".join(_inline(f"{c.name}: {c.detail}") for c in broken)
            text = f" — “{_inline(row.query)}”" if row is not None and row.query else ""
            lines.append(f"  - {_code(qid)}{detail}{text}")
        if len(gate.flipped) > MAX_QUERIES_LISTED:
            lines.append(f"  - and {len(gate.flipped) - MAX_QUERIES_LISTED} more")
    return lines


def _queries_by_qid(report: Report, set_name: str) -> dict:
    try:
        return {q.qid: q for q in report.set_named(set_name).queries}
    except KeyError:
        return {}


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value + 0.0:.{digits}f}"


def _gated_values(report: Report, baseline_sets: Mapping[str, Mapping] | None) -> list[str]:
    """Per set: overall recall@10, p95 latency, query count and contracts as baseline / current / change /
    gate; each set's category recall rows folded below it."""
    header = ["| set | value | baseline | current | change | gate |", "|---|---|---:|---:|---:|---|"]
    lines = list(header)
    folded: list[str] = []
    for result in report.sets:
        entry = (baseline_sets or {}).get(result.name) or {}
        gates = [g for g in report.gates if g.set_name == result.name]
        base_aggregates = entry.get("aggregates") or {}
        for gate in gates:
            if gate.gate == "recall" and gate.category is None:
                before = (base_aggregates.get("overall") or {}).get(RECALL_METRIC)
                now = (result.aggregates.get("overall") or {}).get(RECALL_METRIC)  # type: ignore[union-attr]
                lines.append(_value_row(result.name, f"{RECALL_METRIC} overall", before, now, gate, "points"))
            elif gate.gate == "latency":
                before = (entry.get("latency_ms") or {}).get("p95")
                lines.append(_value_row(result.name, "p95 latency ms", before, result.latency_ms.get("p95"),
                                        gate, "ms"))
            elif gate.gate == "query-count" and gate.category is None:
                lines.append(_value_row(result.name, "queries", entry.get("query_count"), result.query_count,
                                        gate, "count"))
            elif gate.gate == "contract":
                broken = sum(1 for q in result.queries for c in q.contracts if not c.passed)
                lines.append(f"| {_cell(result.name)} | hard contracts broken | - | {broken} | - | "
                             f"{STATUS_WORDS[gate.status]} |")
        categories = [g for g in gates if g.gate in ("recall", "query-count") and g.category is not None]
        if categories:
            folded += ["", f"<details><summary>{_html(result.name)}: {plural(len(categories), 'category row')} "
                           f"({sum(not g.passed for g in categories)} failed)</summary>", "",
                       "| category | value | baseline | current | change | gate |",
                       "|---|---|---:|---:|---:|---|"]
            for gate in sorted(categories, key=lambda g: (g.passed, g.category or "")):
                before = ((base_aggregates.get("category") or {}).get(gate.category) or {}).get(RECALL_METRIC)
                now = ((result.aggregates.get("category") or {}).get(gate.category) or {}).get(  # type: ignore[union-attr]
                    RECALL_METRIC)
                folded.append(_value_row(gate.category or "", RECALL_METRIC, before, now, gate, "points"))
            folded += ["", "</details>"]
    return lines + folded


def _value_row(label: str, value: str, before: object, now: object, gate: GateResult, unit: str) -> str:
    def shown(x: object) -> str:
        if not isinstance(x, (int, float)):
            return "-"
        if unit == "count":
            return str(x)
        return _number(float(x), 1 if unit == "ms" else 3)

    change = "-"
    if isinstance(before, (int, float)) and isinstance(now, (int, float)):
        if unit == "points":
            change = points(float(now) - float(before)) + " pts"
        elif unit == "ms":
            delta = round(float(now) - float(before), 1)
            change = "0.0 ms" if delta == 0 else f"{delta:+.1f} ms"
        else:
            change = "0" if now == before else f"{int(now) - int(before):+d}"
    return f"| {_cell(label)} | {value} | {shown(before)} | {shown(now)} | {change} | {STATUS_WORDS[gate.status]} |"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _metrics_block(result: SetResult) -> list[str]:
    """Every metric of the run for a set: overall visible, categories and splits folded."""
    answered = len(result.queries)
    status = "" if result.complete else f", **incomplete**: {answered} of {result.query_count} answered"
    p95 = result.latency_ms.get("p95")
    latency = f", p95 {p95:.1f} ms" if p95 is not None else ""
    lines = [f"#### set {_inline(result.name)} (revision {result.revision}, {result.query_count} queries, "
             f"k={result.k}{latency}{status})", ""]
    head = ["| scope | n | " + " | ".join(TABLE_METRICS) + " |", "|---|---:|" + "---:|" * len(TABLE_METRICS)]
    rows = [f"| {_cell(label.strip())} | {values.get('n', 0)} | " + " | ".join(cell(values, m) for m in TABLE_METRICS)
            + " |" for label, values in scope_rows(result)]
    lines += head + rows[:1]
    if len(rows) > 1:
        lines += ["", f"<details><summary>{_html(result.name)}: categories and splits ({len(rows) - 1} rows)"
                      "</summary>", "", *head, *rows[1:], "", "</details>"]
    return lines
