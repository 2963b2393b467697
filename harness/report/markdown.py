"""The Markdown summary of a run, for CI job pages (`--summary`, `$GITHUB_STEP_SUMMARY`)."""

from __future__ import annotations

from harness.report.console import cell, scope_rows
from harness.report import evidence
from harness.report.document import Report
from harness.scoring.evaluate import TABLE_METRICS


def render_markdown(report: Report) -> str:
    """Verdict, a table per set, the failed gates."""
    failed = report.failed_gates
    if not report.complete:
        verdict = "**retrieval-gate: backend failed, incomplete run**"
    elif not report.gates:
        verdict = "**retrieval-gate: measured (no gate)**"
    else:
        verdict = "**retrieval-gate: FAILED**" if failed else "**retrieval-gate: passed**"
    lines = [verdict, ""]
    lines.append(f"Backend: `{report.provenance.backend.label}`")
    lines.append("")
    lines.append("| set | scope | n | " + " | ".join(TABLE_METRICS) + " | p95 ms |")
    lines.append("|---|---|---:|" + "---:|" * (len(TABLE_METRICS) + 1))
    for result in report.sets:
        p95 = result.latency_ms.get("p95")
        for label, values in scope_rows(result):
            latency = f"{p95:.1f}" if (label == "overall" and p95 is not None) else ""
            cells = " | ".join(cell(values, m) for m in TABLE_METRICS)
            lines.append(f"| {result.name} | {label.strip()} | {values['n']} | {cells} | {latency} |")
    lines.extend(evidence.markdown_lines(report.sets))  # issue 17; nothing for sets without evidence
    if failed:
        lines.append("")
        lines.append("Failed gates:")
        lines.extend(f"- {g.message}" for g in failed)
    if report.error:
        lines.append("")
        lines.append(f"Error: {report.error}")
    return "\n".join(lines) + "\n"
