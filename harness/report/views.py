"""Reports and baselines as the comparable `RunView`s that `compare` reads."""

from __future__ import annotations

from pathlib import Path

from harness.errors import BaselineError, UsageError
from harness.strict_json import read_json_file
from harness.gating.baseline import BASELINE_FORMAT, Baseline
from harness.report.document import Report
from harness.report.reading import read_document
from harness.scoring.compare import RunView


def load_run(path: Path) -> RunView:
    """Read a JSON report (--out) or a baseline file; UsageError when it is neither."""
    document = read_json_file(path, UsageError, what="report or baseline")
    if isinstance(document, dict) and "report_format" in document:
        return report_view(read_document(document, str(path)), str(path))
    if not (isinstance(document, dict) and document.get("format") == BASELINE_FORMAT):
        raise UsageError(f"{path}: neither a retrieval-gate report nor a baseline")
    try:
        return baseline_view(Baseline.from_document(document, path))
    except BaselineError as exc:  # for compare, both are inputs named on the command line
        raise UsageError(str(exc)) from None


def baseline_view(baseline: Baseline, label: str | None = None) -> RunView:
    """The comparable view of a baseline: its sets' numbers, named by the file and its backend."""
    return RunView(label=f"{label or baseline.path} ({baseline.backend.label})",
                   metric_definitions=baseline.document.get("metric_definitions"), sets=baseline.sets,
                   kind="baseline", condition=baseline.document.get("condition"))


def report_view(report: Report, path: str) -> RunView:
    """The comparable view of a typed run report."""
    if not report.complete:
        raise UsageError(f"{path}: an incomplete run (the backend failed) cannot be compared")
    sets = {s.name: s.numbers() for s in report.sets}
    definitions = report.provenance.metric_definitions
    banner = report.provenance.adapter.banner or {}
    name = banner.get("name") if isinstance(banner.get("name"), str) and banner.get("name") else None
    version = f" {banner['version']}" if name and isinstance(banner.get("version"), str) else ""
    # the backend as it names itself (its banner), else as it was started; the file last
    who = f"{name}{version}" if name else report.provenance.backend.label
    return RunView(label=f"{who} ({path})",
                   metric_definitions=dict(definitions) if definitions is not None else None, sets=sets,
                   kind="report", condition=report.provenance.condition, machine=dict(report.provenance.machine))
