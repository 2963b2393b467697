"""Reports for the output tests: the reports of tests/reports.py as a run records them for outputs.

`with_baseline_identity` adds the baseline file the run was gated against
(`provenance.extra["baseline"]`, as the run command records it); `crashed_with_tail` is a crash
whose error carries an adapter's stderr tail, the way harness.adapter.driver writes it.
"""

from __future__ import annotations

import dataclasses

from harness.report.document import Report
from tests.reports import crashed_report, gated_report

BASELINE_IDENTITY = {"path": "baselines/current.json", "backend": "bm25",
                     "created": "2026-11-30T09:15:00+00:00", "git_commit": "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"}

STDERR_TAIL_ERROR = (
    "query tiny-04: adapter exited with status 7 before answering [adapter: python -m adapters.bm25; "
    "log: report.adapter.log]\n"
    "adapter stderr (last lines):\n"
    "  | Traceback (most recent call last):\n"
    '  |   File "adapters/bm25.py", line 91, in search\n'
    "  |     return index_for(indexes, kind).search(query, k)\n"
    "  | KeyError: 'a_very_long_token_without_any_spaces_that_would_overflow_a_narrow_box_"
    "0123456789abcdef0123456789abcdef'")


def with_baseline_identity(report: Report) -> Report:
    provenance = dataclasses.replace(report.provenance, extra={"baseline": dict(BASELINE_IDENTITY)})
    return dataclasses.replace(report, provenance=provenance)


def gated_with_baseline() -> Report:
    return with_baseline_identity(gated_report())


def crashed_with_tail() -> Report:
    return dataclasses.replace(crashed_report(), error=STDERR_TAIL_ERROR)
