"""The pooled aggregate: means over every scored query of every set, in the JSON report, one
console line and one Markdown row when a run has several sets (docs/gate.md, "Several sets: the
pooled aggregate")."""

from __future__ import annotations

import dataclasses

import pytest

from harness.report.console import render_text
from harness.report.reading import report_from_json
from harness.report.document import Backend, Provenance, Report
from harness.report.markdown import render_markdown
from harness.scoring.evaluate import Answer, evaluate_set, pooled_aggregate
from harness.sets.loader import load_set
from tests.conftest import TINY_SET

TINY = load_set(TINY_SET)


def _answers(found):
    """tiny-01..05 answered with their relevant document when in `found`, else with doc-08."""
    relevant = {"tiny-01": "doc-01", "tiny-02": "doc-02", "tiny-03": "doc-03", "tiny-04": "doc-04", "tiny-05": "doc-07"}
    return {qid: Answer((doc if qid in found else "doc-08",), None, 0.0) for qid, doc in relevant.items()}


def _report():
    # set one: all 5 scored queries find their document (hit@10 1.0); set two: 1 of 5 does (0.2)
    one = evaluate_set(TINY, _answers({"tiny-01", "tiny-02", "tiny-03", "tiny-04", "tiny-05"}), k=10)
    two = dataclasses.replace(evaluate_set(TINY, _answers({"tiny-01"}), k=10), name="two")
    sets = (one, two)
    return Report(provenance=Provenance(harness_version="t", started=None, backend=Backend("t")), sets=sets,
                  pooled=pooled_aggregate(sets))


def test_pooled_means_weigh_every_scored_query_alike():
    pooled = _report().pooled
    # 10 scored queries, 6 hits: 0.6 (the mean of the two sets' means too, as both have 5)
    assert pooled.n == 10 and pooled.means["hit@10"] == pytest.approx(0.6)
    # unjudged@10 is summed: set two's 4 misses return doc-08, unjudged for tiny-02..05 (tiny-05 forbids it,
    # but forbid is no judgment) -> 4; set one: tiny-04 answers doc-04 only -> 0
    assert pooled.unjudged == 4


def test_pooled_is_in_the_json_and_read_back():
    report = _report()
    assert report_from_json(report.to_json()) == report
    plain = dataclasses.replace(report, pooled=None)
    assert "pooled" not in plain.to_dict() and report_from_json(plain.to_json()).pooled is None


def test_pooled_is_one_console_line_and_one_markdown_row():
    report = _report()
    text = render_text(report)
    # recall: tiny-04 has two relevant documents and finds one (0.5): (4.5 + 1) / 10 = 0.55; mrr = hits = 0.6
    assert "pooled over 2 sets (n=10 scored queries): recall@5 0.550  recall@10 0.550  mrr 0.600" in text
    assert "| all sets | 10 | 0.550 | 0.550 | 0.600 |" in render_markdown(report)
    single = dataclasses.replace(report, sets=report.sets[:1], pooled=pooled_aggregate(report.sets[:1]))
    assert "pooled" not in render_text(single) and "pooled" not in render_markdown(single)
