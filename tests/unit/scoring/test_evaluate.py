"""Evaluation: contracts, outcomes and aggregates on the tiny set with hand-computed expectations."""

import pytest

from harness.measured import Latency
from harness.scoring.evaluate import Answer, evaluate_query, evaluate_set, latency_summary
from harness.sets.loader import load_set
from tests.conftest import TINY_SET

TINY = load_set(TINY_SET)
BY_QID = {q.qid: q for q in TINY.queries}


def answer(*ids, scores=None, ms=1.0):
    return Answer(ids=tuple(ids), scores=tuple(scores) if scores is not None else None, latency_seconds=ms / 1000)


def test_graded_query_metrics_and_found():
    # tiny-04 relevant: doc-04 grade 2, doc-05 grade 1; ranking doc-05, doc-04.
    result = evaluate_query(BY_QID["tiny-04"], answer("doc-05", "doc-04"), k=10)
    assert result.metrics["recall@10"] == 1.0
    assert result.metrics["mrr"] == 1.0
    # DCG = 1/log2(2) + 2/log2(3) = 1 + 1.26186 = 2.26186; IDCG = 2 + 1/log2(3) = 2.63093
    assert result.metrics["ndcg@10"] == pytest.approx(2.2618595 / 2.6309298, abs=1e-6)
    assert result.metrics["precision@10"] == pytest.approx(0.2)
    assert result.found == ("doc-05", "doc-04")
    # rank_before doc-04 over doc-05 fails: doc-05 is at rank 1
    assert [c.passed for c in result.contracts] == [False]
    assert result.outcome == "fail"


def test_forbid_contract_and_k_cut():
    query = BY_QID["tiny-05"]
    ok = evaluate_query(query, answer("doc-07", "doc-01"), k=10)
    assert ok.outcome == "pass" and ok.contracts[0].passed
    broken = evaluate_query(query, answer("doc-07", "doc-08"), k=10)
    assert broken.outcome == "fail" and "forbidden doc-08 at rank 2" in broken.contracts[0].detail
    # with k=1 the forbidden doc at rank 2 is outside the top k: no violation
    assert evaluate_query(query, answer("doc-07", "doc-08"), k=1).outcome == "pass"


def test_xfail_and_xpass():
    query = BY_QID["tiny-06"]  # xfail, forbid doc-03
    assert evaluate_query(query, answer("doc-06"), k=10).outcome == "xpass"
    assert evaluate_query(query, answer("doc-03", "doc-06"), k=10).outcome == "xfail"
    assert evaluate_query(query, answer("doc-01"), k=10).outcome == "xfail"  # no relevant found


def test_negative_probe_must_return_nothing_without_max_score():
    query = BY_QID["tiny-07"]
    assert evaluate_query(query, answer(), k=10).outcome == "pass"
    result = evaluate_query(query, answer("doc-02"), k=10)
    # no ranking measures for a query without relevant documents; judged coverage still (doc-02 is unjudged there)
    assert result.outcome == "fail" and result.metrics == {"judged@10": 0.0, "unjudged@10": 1}
    assert "returned 1 ids" in result.contracts[0].detail


def test_max_score_contract_needs_scores():
    from dataclasses import replace
    query = replace(BY_QID["tiny-07"], max_score=0.5)
    assert evaluate_query(query, answer("doc-01", scores=[0.49]), k=10).outcome == "pass"
    high = evaluate_query(query, answer("doc-01", scores=[0.5]), k=10)
    assert high.outcome == "fail" and "scored 0.5000 >= max_score 0.5" in high.contracts[0].detail
    assert "needs scores" in evaluate_query(query, answer("doc-01"), k=10).contracts[0].detail


def test_set_aggregates_exclude_xfail_and_negative_probes():
    answers = {
        "tiny-01": answer("doc-01"),            # recall 1, rr 1
        "tiny-02": answer("doc-03", "doc-02"),  # recall 1, rr 1/2
        "tiny-03": answer("doc-04"),            # recall 0, rr 0
        "tiny-04": answer("doc-04"),            # recall 1/2, rr 1
        "tiny-05": answer("doc-01", "doc-07"),  # recall 1, rr 1/2
        "tiny-06": answer("doc-01"),            # xfail: excluded
        "tiny-07": answer("doc-01"),            # negative probe: excluded
    }
    result = evaluate_set(TINY, answers, k=10)
    overall = result.aggregates.overall
    assert overall.n == 5
    assert overall.means["recall@10"] == pytest.approx((1 + 1 + 0 + 0.5 + 1) / 5)
    assert overall.means["mrr"] == pytest.approx((1 + 0.5 + 0 + 1 + 0.5) / 5)
    # category a: tiny-01, 02, 05; category b: tiny-03, 04 (tiny-06 is xfail)
    assert result.aggregates.category["a"].means["recall@10"] == pytest.approx(1.0)
    assert result.aggregates.category["b"].means["recall@10"] == pytest.approx(0.25)
    assert result.aggregates.split["held-out"].n == 2  # tiny-03, tiny-05
    assert "negative" not in result.aggregates.category
    assert result.complete and result.query_count == 7


def test_partial_answers_make_an_incomplete_set():
    result = evaluate_set(TINY, {"tiny-01": answer("doc-01")}, k=10)
    assert not result.complete and len(result.queries) == 1 and result.query_count == 7


def test_latency_summary_nearest_rank():
    # 20 values 1..20 ms: p50 = rank ceil(10) = 10 ms; p95 = rank ceil(19) = 19 ms; max 20
    summary = latency_summary([v / 1000 for v in range(20, 0, -1)])
    assert summary == Latency(20, pytest.approx(10.0), pytest.approx(19.0), pytest.approx(20.0))
    assert latency_summary([]) == Latency()
