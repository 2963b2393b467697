"""The Markdown summary of a run, for CI job pages and pull-request comments (`--summary`, `$GITHUB_STEP_SUMMARY`).

GitHub-flavoured Markdown: the verdict and counts first, then failures and warnings with their
flipped queries, a table of every gated value (baseline, current, change), category rows folded
in `<details>` (blank lines around a folded table, or GitHub shows it as text), an adapter's
stderr tail as a fenced block. Every table cell goes through `_cell`, so a `|` in a message
cannot split a row.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.gating.gates import COUNT, FRACTION, MILLISECONDS
from harness.records import GateResult, SetResult
from harness.report.console import cell, scope_rows
from harness.report import evidence
from harness.report.document import Report
from harness.report.verdict import (backend_identity, baseline_text, counts_line, error_parts, plural, points, verdict)
from harness.scoring.evaluate import TABLE_METRICS

MAX_QUERIES_LISTED = 10  # per failed gate; the rest are counted
STATUS_WORDS = {"fail": "❌ FAIL", "warn": "⚠️ WARN", "pass": "✅ pass"}


def render_markdown(report: Report) -> str:
    """The summary, from the report alone: the gates' numbers fill the baseline and change columns."""
    final = verdict(report)
    lines = [f"### retrieval-gate: {final.word}", "", f"**{_inline(final.line)}**"]
    if report.gates:
        lines += ["", f"Gates: {counts_line(report)}."]
    lines += ["", *_identity_lines(report)]
    if report.error:
        lines += ["", *_error_lines(report.error)]
    failed, warned = report.failed_gates, report.warned_gates
    if failed:
        lines += ["", "#### Failures", ""] + _gate_items(failed, report)
    if warned:
        lines += ["", "#### Warnings", ""] + _gate_items(warned, report)
    if report.gates:
        lines += ["", "#### Gated values", ""] + _gated_values(report)
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


def _gate_items(gates: Sequence[GateResult], report: Report) -> list[str]:
    """One bullet per gate, its flipped (or contract-breaking) queries as sub-bullets with their text."""
    lines = []
    for gate in gates:
        lines.append(f"- **{gate.gate}** {_inline(gate.message)}")
        if not gate.flipped:
            continue
        queries = _queries_by_qid(report, gate.set_name)
        lost_ids = {flip.qid: flip.lost for flip in (report.flips or {}).get(gate.set_name, ())}
        for qid in gate.flipped[:MAX_QUERIES_LISTED]:
            row = queries.get(qid)
            detail = ""
            if lost_ids.get(qid):
                detail = " lost " + ", ".join(_code(d) for d in lost_ids[qid])
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


def _gated_values(report: Report) -> list[str]:
    """Per set: each gated value overall (metrics, p95 latency, query count, contracts) as baseline /
    current / change / gate, from the gates' own numbers; each set's category rows folded below it."""
    header = ["| set | value | baseline | current | change | gate |", "|---|---|---:|---:|---:|---|"]
    lines = list(header)
    folded: list[str] = []
    for result in report.sets:
        gates = [g for g in report.gates if g.set_name == result.name and g.metric is not None]
        for gate in gates:
            if gate.category is None:
                lines.append(_value_row(result.name, _value_label(gate), gate))
        categories = [g for g in gates if g.category is not None]
        if categories:
            folded += ["", f"<details><summary>{_html(result.name)}: {plural(len(categories), 'category row')} "
                           f"({sum(not g.passed for g in categories)} failed)</summary>", "",
                       "| category | value | baseline | current | change | gate |",
                       "|---|---|---:|---:|---:|---|"]
            for gate in sorted(categories, key=lambda g: (g.passed, g.category or "")):
                folded.append(_value_row(gate.category or "", gate.metric or gate.gate, gate))
            folded += ["", "</details>"]
    return lines + folded


def _value_label(gate: GateResult) -> str:
    """`recall@10 overall`, `p95 latency ms`, `queries`: what a gated value row shows."""
    if gate.unit == FRACTION:
        return f"{gate.metric} overall"
    if gate.unit == MILLISECONDS:
        return f"{gate.metric} latency ms"
    return gate.metric or gate.gate


def _value_row(label: str, value: str, gate: GateResult) -> str:
    def shown(x: float | None) -> str:
        if x is None:
            return "-"
        if gate.unit == COUNT:
            return f"{x:g}"
        return _number(float(x), 1 if gate.unit == MILLISECONDS else 3)

    change = "-"
    delta = gate.change
    if delta is not None:
        if gate.unit == FRACTION:
            change = points(delta) + " pts"
        elif gate.unit == MILLISECONDS:
            rounded = round(delta, 1)
            change = "0.0 ms" if rounded == 0 else f"{rounded:+.1f} ms"
        else:
            change = "0" if delta == 0 else f"{delta:+g}"
    return (f"| {_cell(label)} | {_cell(value)} | {shown(gate.baseline)} | {shown(gate.current)} | {change} | "
            f"{STATUS_WORDS[gate.status]} |")


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
