"""The Markdown summary of a run, for CI job pages and pull-request comments (`--summary`, `$GITHUB_STEP_SUMMARY`).

GitHub-flavoured Markdown, a few KB however large the sets: the verdict and counts first, then the
set-level failures and warnings, each set's categories beyond the limit as one compact table,
what improved (with the re-baseline hint), each set's queries that lost (then gained) a relevant document
listed once and folded in `<details>` (blank lines around it, or GitHub shows it as text), a
table of every gated value (baseline, current, change), one metrics row per set, an adapter's
stderr tail as a fenced block. Text from outside (banner, baseline, error, categories, queries)
goes through harness/report/escape.py, so it stays text: it cannot close its code span or fence,
split a table row, or plant a link, an image, HTML or a heading.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.gating.gates import FRACTION, MILLISECONDS, baseline_latency_measured
from harness.records import GateResult
from harness.report.console import cell
from harness.report import evidence
from harness.report.document import Report
from harness.report.escape import markdown_code, markdown_fence, markdown_text
from harness.report.verdict import (backend_identity, baseline_text, category_problems, change_text, counts_line,
                                    error_parts, improvement_text, improvements, plural, rebaseline_hint,
                                    resource_figures, RESOURCES_HOW, set_level, value_text, verdict_of)
from harness.scoring.evaluate import TABLE_METRICS

MAX_QUERIES_LISTED = 10  # per failed gate; the rest are counted
STATUS_WORDS = {"fail": "❌ FAIL", "warn": "⚠️ WARN", "pass": "✅ pass"}


def render_markdown(report: Report) -> str:
    """The summary, from the report alone: the gates' numbers fill the baseline and change columns."""
    final = verdict_of(report)
    lines = [f"### retrieval-gate: {final.word}", "", f"**{markdown_text(final.line)}**"]
    if report.gates:
        lines += ["", f"Gates: {counts_line(report)}."]
    lines += ["", *_identity_lines(report)]
    if report.error:  # its first line, then the adapter's stderr tail (if any) fenced
        first, tail = error_parts(report.error)
        lines += ["", f"**Error:** {markdown_text(first)}"] + (["", *markdown_fence(tail)] if tail else [])
    failed, warned = set_level(report.failed_gates), set_level(report.warned_gates)
    if failed:
        lines += ["", "#### Failures", ""] + _gate_items(failed, report)
    if warned:
        lines += ["", "#### Warnings", ""] + _gate_items(warned, report)
    for name, gates in category_problems(report).items():
        lines += ["", f"#### Categories of {markdown_text(name)} beyond the limit", "", *_category_table(gates)]
    better = improvements(report)
    if better:
        lines += ["", "#### Improvements", "", *(f"- {markdown_text(improvement_text(g))}" for g in better),
                  f"- {markdown_text(rebaseline_hint(report))}"]
    lines.extend(_flipped_lines(report))
    if report.gates:
        lines += ["", "#### Gated values", ""] + _gated_values(report)
    if report.sets:
        lines += ["", "#### Metrics", "", *_metrics_table(report)]
    lines.extend(_resources_table(report))
    lines.extend(evidence.markdown_lines(report.sets))  # nothing for sets without evidence
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return markdown_text(text) if text else " "


def _identity_lines(report: Report) -> list[str]:
    provenance = report.provenance
    lines = [f"- Backend: {markdown_code(backend_identity(provenance))}"]
    baseline = baseline_text(provenance)
    if baseline:
        lines.append(f"- Baseline: {markdown_code(baseline)}")
    elif report.gates:
        lines.append("- Baseline: not recorded in this report")
    facts = [f"{word} {value}" for word, value in (("condition", provenance.condition),
                                                   ("commit", (provenance.git_commit or "")[:12]),
                                                   ("started", provenance.started)) if value]
    if facts:
        lines.append(f"- Run: {markdown_text(', '.join(facts))}")
    return lines


def _gate_items(gates: Sequence[GateResult], report: Report) -> list[str]:
    """One bullet per set-level gate; a contract failure lists its queries (flips are listed once, apart)."""
    lines = []
    for gate in gates:
        lines.append(f"- **{gate.gate}** {markdown_text(gate.message)}")
        if gate.gate != "contract" or not gate.flipped:
            continue
        queries = _queries_by_qid(report, gate.set_name)
        for qid in gate.flipped[:MAX_QUERIES_LISTED]:
            row = queries.get(qid)
            broken = [c for c in row.contracts if not c.passed] if row is not None else []
            detail = " " + "; ".join(markdown_text(f"{c.name}: {c.detail}") for c in broken) if broken else ""
            text = f" — “{markdown_text(row.query)}”" if row is not None and row.query else ""
            lines.append(f"  - {markdown_code(qid)}{detail}{text}")
        if len(gate.flipped) > MAX_QUERIES_LISTED:
            lines.append(f"  - and {len(gate.flipped) - MAX_QUERIES_LISTED} more")
    return lines


def _category_table(gates: Sequence[GateResult]) -> list[str]:
    """A set's categories that failed or warned, one compact row each."""
    rows = ["| category | gate | baseline | current | change | result |", "|---|---|---:|---:|---:|---|"]
    rows += [f"| {_cell(g.category or '')} | {_cell(g.metric or g.gate)} | {value_text(g, g.baseline)} | "
             f"{value_text(g, g.current)} | {change_text(g)} | {STATUS_WORDS[g.status]} |" for g in gates]
    return rows


def _flipped_lines(report: Report) -> list[str]:
    """Each set's queries that lost a relevant document against the baseline, then those that only gained one,
    each listed once, folded (a query that lost one and gained another is listed with the losses)."""
    lines = []
    for name, flips in (report.flips or {}).items():
        queries = _queries_by_qid(report, name)
        lost = [flip for flip in flips if flip.lost]
        gained = [flip for flip in flips if flip.gained and not flip.lost]
        for listed, what in ((lost, "lost"), (gained, "gained")):
            if not listed:
                continue
            lines += ["", f"<details><summary>{markdown_text(name)}: {plural(len(listed), 'query', 'queries')} "
                          f"{what} a relevant document</summary>", ""]
            for flip in listed[:MAX_QUERIES_LISTED]:
                row = queries.get(flip.qid)
                text = f" — “{markdown_text(row.query)}”" if row is not None and row.query else ""
                change = "; ".join(f"{word} " + ", ".join(markdown_code(d) for d in ids)
                                   for word, ids in (("lost", flip.lost), ("gained", flip.gained)) if ids)
                lines.append(f"- {markdown_code(flip.qid)} {change}{text}")
            if len(listed) > MAX_QUERIES_LISTED:
                lines.append(f"- and {len(listed) - MAX_QUERIES_LISTED} more (all in the JSON report)")
            lines += ["", "</details>"]
    return lines


def _queries_by_qid(report: Report, set_name: str) -> dict:
    return {q.qid: q for result in report.sets if result.name == set_name for q in result.queries}


def _gated_values(report: Report) -> list[str]:
    """Per set: each gated value overall (metrics, p95 latency, query count, contracts) as baseline /
    current / change / gate, from the gates' own numbers; categories beyond the limit are tabled above,
    and every category's figure is in the JSON and HTML reports."""
    lines = ["| set | value | baseline | current | change | detectable | gate |", "|---|---|---:|---:|---:|---:|---|"]
    for gate in report.gates:
        # a relative gate (p95, resources) repeats figures shown elsewhere: shown when it said something
        if gate.metric is not None and gate.category is None and not (gate.gate.endswith("-relative") and gate.passed
                                                                      and not gate.warning):
            lines.append(_value_row(gate))
    return lines


def _value_row(gate: GateResult) -> str:
    """A gated figure's row: `recall@10 overall`, `p95 latency ms` or `queries`, its values, and `detectable`,
    the smallest change its scope can detect (docs/sets.md): `none` for a scored scope whose test can detect no
    change (too few units to reach alpha, or more than the metric's range), `-` for a figure it does not apply to."""
    value = (f"{gate.metric} overall" if gate.unit == FRACTION else f"{gate.metric} latency ms"
             if gate.unit == MILLISECONDS else gate.metric or gate.gate)
    detectable = (f"{gate.detectable * 100:.1f} pts" if gate.detectable is not None
                  else "none" if gate.one_query is not None else "-")
    return (f"| {_cell(gate.set_name)} | {_cell(value)} | {value_text(gate, gate.baseline)} | "
            f"{value_text(gate, gate.current)} | {change_text(gate)} | {detectable} | {STATUS_WORDS[gate.status]} |")


def _resources_table(report: Report) -> list[str]:
    """Each set's resource figures beside the baseline's, and how they were measured (nothing when none were)."""
    rows = [f"| {markdown_text(result.name)} | {markdown_text(words)} | {markdown_text(was)} | {markdown_text(now)} |"
            for result in report.sets for _, words, now, was in resource_figures(result, report)]
    if not rows:
        return []
    return ["", "#### Resources", "", "| set | figure | baseline | current |", "|---|---|---:|---:|", *rows, "",
            markdown_text(f"Measured: {RESOURCES_HOW}.")]


def _metrics_table(report: Report) -> list[str]:
    """One row per set (its overall means, p95 beside the baseline's), the pooled row of several sets, and
    every category in one folded table, except when a gate failed: that summary keeps to what failed
    (its categories beyond the limit are tabled above) and stays well under 5 KB."""
    lines = ["| set | n | " + " | ".join(TABLE_METRICS) + " | p50 / p95 ms (baseline) |",
             "|---|---:|" + "---:|" * (len(TABLE_METRICS) + 1)]
    for result in report.sets:
        overall = result.aggregates.overall
        status = "" if result.complete else f" (incomplete: {len(result.queries)} of {result.query_count} answered)"
        now, was = result.latency, (report.baseline_latency or {}).get(result.name)
        latency = "-" if now.p50 is None or now.p95 is None else f"{now.p50:.1f} / {now.p95:.1f}" + (
            f" ({was.p50:.1f} / {was.p95:.1f}, {baseline_latency_measured(result)})"
            if was is not None and was.p50 is not None and was.p95 is not None
            else "")
        lines.append(f"| {markdown_text(result.name)}{status} | {overall.n} | "
                     + " | ".join(cell(overall, m) for m in TABLE_METRICS) + f" | {latency} |")
    if report.pooled is not None and len(report.sets) > 1:  # every scored query of every set, each weighing the same
        lines.append(f"| all sets | {report.pooled.n} | "
                     + " | ".join(cell(report.pooled, m) for m in TABLE_METRICS) + " | - |")
    scopes = [(result.name, name, scope) for result in report.sets for name, scope in result.aggregates.category.items()]
    if scopes and report.failed_gates:  # a failing summary keeps to what failed (those categories are tabled above)
        lines += ["", f"Every category's metrics ({plural(len(scopes), 'row')}): the JSON and HTML reports."]
    elif scopes:  # every category, one folded table for all the sets (splits: the JSON and HTML reports)
        lines += ["", f"<details><summary>categories ({len(scopes)} rows)</summary>", "",
                  "| set | category | n | " + " | ".join(TABLE_METRICS) + " |",
                  "|---|---|---:|" + "---:|" * len(TABLE_METRICS)]
        lines += [f"| {markdown_text(name)} | {_cell(label)} | {scope.n} | "
                  + " | ".join(cell(scope, m) for m in TABLE_METRICS) + " |" for name, label, scope in scopes]
        lines += ["", "</details>"]
    return lines
