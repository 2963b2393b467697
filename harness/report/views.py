"""Reports and baselines as the comparable `RunView`s that `compare` reads."""

from __future__ import annotations

from pathlib import Path

from harness.errors import BaselineError, UsageError
from harness.strict_json import read_json_file
from harness.gating.baseline import BASELINE_FORMAT, check_baseline
from harness.report.document import Report
from harness.report.reading import read_document
from harness.scoring.compare import RunView, run_view


def load_run(path: Path) -> RunView:
    """Read a JSON report (--out) or a baseline file; UsageError when it is neither."""
    document = read_json_file(path, UsageError, what="report or baseline")
    if isinstance(document, dict) and "report_format" in document:
        return report_view(read_document(document, str(path)), str(path))
    if isinstance(document, dict) and document.get("format") == BASELINE_FORMAT:
        try:
            check_baseline(document, str(path))
        except BaselineError as exc:  # for compare, both are inputs named on the command line
            raise UsageError(str(exc)) from None
    return run_view(document, str(path))


def report_view(report: Report, path: str) -> RunView:
    """The comparable view of a typed run report."""
    if not report.complete:
        raise UsageError(f"{path}: an incomplete run (the backend failed) cannot be compared")
    sets = {s.name: {"revision": s.revision, "corpus_hash": s.corpus_hash, "k": s.k,
                     "queries": {q.qid: q.to_dict() for q in s.queries}} for s in report.sets}
    definitions = report.provenance.metric_definitions
    banner = report.provenance.adapter.banner or {}
    name = banner.get("name") if isinstance(banner.get("name"), str) and banner.get("name") else None
    version = f" {banner['version']}" if name and isinstance(banner.get("version"), str) else ""
    # the backend as it names itself (its banner), else as it was started; the file last
    who = f"{name}{version}" if name else report.provenance.backend.label
    return RunView(label=f"{who} ({path})",
                   metric_definitions=dict(definitions) if definitions is not None else None, sets=sets,
                   kind="report", condition=report.provenance.condition, machine=dict(report.provenance.machine))
