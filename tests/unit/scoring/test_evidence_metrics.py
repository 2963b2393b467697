"""Exposed-evidence metrics (harness/scoring/evidence.py), each value hand-computed in a comment."""

from __future__ import annotations

import math

import pytest

from harness.measured import EvidenceFigure, ScopeNumbers
from harness.records import EvidenceSpan, Query
from harness.scoring import evidence
from harness.scoring.evaluate import Answer, aggregate, evaluate_query
from harness.scoring.metrics import evidence_measure_names, parse_metric

# One page, 0..100: the current answer at 10..20, the superseded one at 60..70, a mixed
# passage at 40..55, a hedge nobody can judge at 80..90.
PAGE = "page"
CURRENT = EvidenceSpan(PAGE, 10, 20, "x" * 10, "current", True)
STALE = EvidenceSpan(PAGE, 60, 70, "x" * 10, "stale", True)
MIXED = EvidenceSpan(PAGE, 40, 55, "x" * 15, "mixed", True)
UNSURE = EvidenceSpan(PAGE, 80, 90, "x" * 10, "unjudgeable", False)
NOTE_STALE = EvidenceSpan("note", 0, 30, "x" * 30, "stale", True)
SPANS = (CURRENT, STALE, MIXED, NOTE_STALE)


def figures(ids, passages, spans=SPANS, canonical=()):
    return evidence.query_evidence(ids, passages, spans, canonical)


def test_a_correction_just_outside_the_window_earns_nothing():
    # The window 21..75 shows the stale span (60..70) and stops one character after the
    # current one ends (20): visible ku@1 0, answer_hit 0; shown whole, the page exposes it.
    values = figures(["page"], [(21, 75)])
    assert values["ku@1"] == 0.0 and values["answer_hit@10"] == 0.0
    assert values["stale_before_current"] == 1.0  # stale shown, current never
    assert values["full_ku@1"] == 1.0 and values["full_answer_hit@10"] == 1.0
    assert values["full_stale_before_current"] == 0.0  # whole page: stale and current in one window, a tie


def test_a_window_that_cuts_a_span_does_not_expose_it():
    # 0..19 holds 10..19 of the current span 10..20: cut by one character, so not exposed.
    assert figures(["page"], [(0, 19)])["ku@1"] == 0.0
    # 10..20 exactly is enough (start <= 10, 20 <= end).
    assert figures(["page"], [(10, 20)])["ku@1"] == 1.0


def test_overlapping_spans_each_judged_on_their_own():
    # A current span 10..20 and an overlapping stale one 15..30 (a sentence re-quoting the old value).
    spans = (CURRENT, EvidenceSpan(PAGE, 15, 30, "x" * 15, "stale", True))
    # 12..30 holds the stale span whole but cuts the current one: stale first.
    cut = evidence.query_evidence(["page"], [(12, 30)], spans, ())
    assert (cut["ku@1"], cut["stale_before_current"]) == (0.0, 1.0)
    # 10..30 holds both: current exposed, and a tie in one window is not "before".
    both = evidence.query_evidence(["page"], [(10, 30)], spans, ())
    assert (both["ku@1"], both["stale_before_current"]) == (1.0, 0.0)


def test_ranks_stale_and_mixed_before_current():
    # rank 1: the old note (stale); rank 2: the mixed passage; rank 3: the current statement.
    values = figures(["note", "page", "other"], [None, (40, 56), None])
    assert values["ku@1"] == 0.0
    assert values["answer_hit@1"] == 0.0 and values["answer_hit@5"] == 0.0  # current never shown
    assert values["stale_before_current"] == 1.0 and values["mixed_before_current"] == 1.0
    values = figures(["page", "note"], [(0, 30), None])
    # the current window comes first: neither counter fires, ku@1 is 1
    assert (values["ku@1"], values["stale_before_current"], values["mixed_before_current"]) == (1.0, 0.0, 0.0)
    # rank 1 shows only the mixed passage (40..55), rank 3 the old note: both counters fire
    values = figures(["page", "other", "note"], [(35, 60), None, None])
    assert values["mixed_before_current"] == 1.0 and values["stale_before_current"] == 1.0


def test_answer_hit_depth():
    # current evidence only in the window at rank 3
    ids = ["a", "b", "page"]
    values = figures(ids, [None, None, (0, 30)])
    assert values["answer_hit@1"] == 0.0 and values["answer_hit@5"] == 1.0 and values["answer_hit@10"] == 1.0


def test_current_but_not_supporting_is_not_an_answer():
    spans = (EvidenceSpan(PAGE, 10, 20, "x" * 10, "current", False),)
    assert evidence.query_evidence(["page"], None, spans, ())["ku@1"] == 0.0


def test_only_unjudgeable_evidence_is_null_and_stays_out_of_the_mean():
    # Window 78..95 shows only the hedge: ku@1 None. A `neither` span beside it changes nothing.
    spans = SPANS + (UNSURE, EvidenceSpan(PAGE, 91, 95, "x" * 4, "neither", False))
    values = evidence.query_evidence(["page"], [(78, 96)], spans, ())
    assert values["ku@1"] is None and values["answer_hit@10"] is None
    # unjudgeable beside stale is judged: 0
    assert evidence.query_evidence(["page"], [(55, 95)], spans, ())["ku@1"] == 0.0
    # an empty ranking is 0, not null
    assert evidence.query_evidence([], [], spans, ())["ku@1"] == 0.0
    rows = [{**values}, figures(["page"], [(0, 30)]), figures(["note"], None)]
    summary = evidence.aggregate_evidence(rows)
    # ku@1 values None, 1, 0: judged 2, null 1, mean (1 + 0) / 2 = 0.5 (not 1/3, not 2/3)
    assert summary["ku@1"] == EvidenceFigure(mean=0.5, judged=2, null=1, total=1.0)
    # stale_before_current is judged on all three (each has a stale span): row 1 shows only the
    # hedge (0), row 2 current first (0), row 3 the old note alone (1): mean 1/3
    assert summary["stale_before_current"].judged == 3
    assert summary["stale_before_current"].mean == pytest.approx(1 / 3)


def test_before_current_is_not_judged_without_such_spans():
    values = evidence.query_evidence(["page"], None, (CURRENT,), ())
    assert values["stale_before_current"] is None and values["mixed_before_current"] is None
    assert evidence.aggregate_evidence([values])["stale_before_current"] == EvidenceFigure(None, 0, 1, 0)


def test_canonical_hit_and_mrr():
    # canonical page at rank 3: hit 1, reciprocal rank 1/3; none given: not judged
    values = figures(["a", "b", "page"], None, canonical=("page",))
    assert values["canonical_hit@10"] == 1.0 and values["canonical_mrr"] == pytest.approx(1 / 3)
    missed = figures(["a"] * 1, None, canonical=("page",))
    assert missed["canonical_hit@10"] == 0.0 and missed["canonical_mrr"] == 0.0
    assert figures(["page"], None)["canonical_mrr"] is None


def test_whole_document_hits_and_names():
    assert evidence.windows_of(["a", "b"], [None, (1, 5)]) == [("a", 0, math.inf), ("b", 1, 5)]
    names = evidence_measure_names()
    assert set(figures(["page"], None, canonical=("page",))) == set(names)
    assert len(names) == len(set(names))
    assert parse_metric("stale_before_current").lower_is_better and not parse_metric("ku@1").lower_is_better
    assert all(parse_metric(name).nullable for name in names)  # every evidence figure is a registry measure


def _query(**extra) -> Query:
    return Query(qid="q1", query="what now", relevant={"page": 1}, category="c", split="development",
                 source="s", evidence=SPANS, canonical=("page",), **extra)


def test_evaluate_query_carries_evidence_and_the_contract():
    answer = Answer(ids=("note", "page"), scores=(2.0, 1.0), latency_seconds=0.01, passages=(None, (0, 30)))
    result = evaluate_query(_query(forbid_stale_before_current=True), answer, 10)
    assert result.passages == (None, (0, 30))
    assert result.evidence["ku@1"] == 0.0 and result.evidence["answer_hit@5"] == 1.0
    contract = [c for c in result.contracts if c.name == "stale_before_current"]
    assert len(contract) == 1 and not contract[0].passed and "rank 1 (note)" in contract[0].detail
    assert result.outcome == "fail"
    good = evaluate_query(_query(forbid_stale_before_current=True),
                          Answer(ids=("page", "note"), scores=None, latency_seconds=0.0, passages=((0, 30), None)), 10)
    assert [c.passed for c in good.contracts if c.name == "stale_before_current"] == [True]
    assert result.to_dict()["passages"] == [None, [0, 30]]
    summary = aggregate([result, good])
    assert summary.overall.evidence["ku@1"].mean == 0.5  # 0 and 1
    assert summary.category["c"].evidence["ku@1"].judged == 2
    assert "evidence" in summary.to_dict()


def test_queries_without_evidence_keep_their_old_shape():
    plain = Query(qid="q", query="x", relevant={"a": 1}, category="c", split="development", source="s")
    result = evaluate_query(plain, Answer(ids=("a",), scores=None, latency_seconds=0.0), 10)
    assert result.evidence is None and "evidence" not in result.to_dict() and "passages" not in result.to_dict()
    assert not aggregate([result]).has_evidence and "evidence" not in aggregate([result]).to_dict()


def test_a_scope_gives_an_evidence_mean_over_the_judged_queries_for_gates():
    answer = Answer(ids=("note", "page"), scores=None, latency_seconds=0.0, passages=(None, (0, 30)))
    result = evaluate_query(_query(), answer, 10)
    summary = aggregate([result])
    assert summary.overall.mean("ku@1", nullable=True) == (0.0, 1)
    assert summary.category["c"].mean("answer_hit@5", nullable=True) == (1.0, 1)
    assert "held-out" not in summary.split  # a scope the run has no query in: the gate reads (None, 0)
    assert ScopeNumbers(n=3).mean("ku@1", nullable=True) == (None, 0)  # a set without evidence: never a 0
    assert summary.overall.mean("recall@10") == (summary.overall.means["recall@10"], 1)
