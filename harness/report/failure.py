"""A verdict that is not a pass as the few lines a test shows: headline, failed gates, where the report is."""

from __future__ import annotations

from pathlib import Path

from harness.errors import EXIT_OK, GatesFailed
from harness.report.document import Report
from harness.report.verdict import error_parts, ordered_gates, verdict_of

GATES_SHOWN = 10  # failed gates listed; the rest are counted (the report has them all)


def failure_text(report: Report, report_path: str | Path | None = None) -> str:
    """The verdict line, one line per failed gate (or the error's first line), and where the report is.

    Never the Report's repr: thousands of characters in a test log that say less than these lines.
    """
    lines = [verdict_of(report).line]
    if report.error:
        lines.append(f"  error: {error_parts(report.error)[0]}")
    failed = [gate for gate in ordered_gates(report) if gate.status == "fail"]
    lines += [f"  FAIL {gate.gate} {gate.message}" for gate in failed[:GATES_SHOWN]]
    if len(failed) > GATES_SHOWN:
        lines.append(f"  ... and {len(failed) - GATES_SHOWN} more failed gates")
    if report_path is not None:
        lines.append(f"report: {report_path}")
    return "\n".join(lines)


def raise_for_gates(report: Report, report_path: str | Path | None = None) -> Report:
    """Return `report` when its verdict passed (exit code 0), else raise GatesFailed with `failure_text`.

    For direct API users: `harness.raise_for_gates(harness.gate(...))` fails a script or a test
    with the verdict's few lines; `report_path` (where the caller wrote the report) is named.
    """
    if report.exit_code == EXIT_OK:
        return report
    raise GatesFailed(failure_text(report, report_path), report.exit_code)
