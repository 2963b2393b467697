"""Words a reader meets: a WARN verdict says what warned, the Markdown lists gains beside losses, counts of
one are singular, and a value and its change are never glued into one number."""

from __future__ import annotations

import dataclasses

from harness.records import GateResult
from harness.report.comparison import _delta
from harness.report.document import Report
from harness.report.markdown import render_markdown
from harness.report.verdict import verdict_of
from harness.scoring.compare import ScopeComparison
from harness.scoring.flips import Flip
from harness.text import plural
from tests.reports import gated_report, provenance


def test_a_warn_verdict_says_what_warned():
    gates = (GateResult("tiny", "recall", True, "tiny overall recall@10 0.8000 (baseline 0.8000)"),
             GateResult("tiny", "recall", True, "tiny/a recall@10 dropped 33.33 points: baseline 1.0000, now 0.6667 "
                        "(limit 2.0); warning only: ...", category="a", warning=True),
             GateResult("tiny", "judged", True, "tiny judged@10 fell 20.0 points: baseline 0.500, now 0.300; ...",
                        warning=True))
    verdict = verdict_of(Report(provenance=provenance(), sets=(), gates=gates, exit_code=0))
    assert verdict.status == "warn"
    assert verdict.line == "PASSED: 3 gates, 2 warnings (tiny/a recall@10 dropped 33.33 points; +1 more)"


def test_the_markdown_lists_queries_that_gained_as_well_as_those_that_lost():
    report = gated_report()
    flips = (Flip("tiny", "tiny-01", "", ("doc-01",), ()), Flip("tiny", "tiny-02", "", (), ("doc-02",)),
             Flip("tiny", "tiny-03", "", ("doc-03",), ("doc-04",)))
    markdown = render_markdown(dataclasses.replace(report, flips={"tiny": flips}))
    assert "tiny: 2 queries lost a relevant document" in markdown
    assert "- `tiny-03` lost `doc-03`; gained `doc-04`" in markdown
    assert "tiny: 1 query gained a relevant document" in markdown
    assert "- `tiny-02` gained `doc-02`" in markdown


def test_counts_of_one_are_singular():
    assert plural(1, "query", "queries") == "1 query" and plural(0, "query", "queries") == "0 queries"
    assert plural(2, "gate") == "2 gates"


def test_a_value_and_its_change_are_spaced_apart():
    scope = ScopeComparison("tiny", "overall", 5, {"recall@10": 0.787}, {"recall@10": 0.783})
    assert _delta(scope, "recall@10") == "0.787 (-0.004)"  # not the "0.787-0.004" that reads as a range
