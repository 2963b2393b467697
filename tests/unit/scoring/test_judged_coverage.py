"""Judged coverage (docs/sets.md, "Judged coverage") and the measures a gate policy names
(docs/sets.md, "Gate policy"): grade 0 in sets, judged@10 / unjudged@10 / ndcg@10(condensed) per
query and aggregate, any registry measure computed when the policy gates it, and a baseline written
with that policy recording it."""

from __future__ import annotations

import json
import math

import pytest

from harness.errors import SetError, UsageError
from harness.gating.baseline import build_baseline
from tests.builders import PROVENANCE, baseline_numbers, with_overall_means
from harness.gating.gates import check
from harness.gating.policy import GatePolicy, load_policy
from harness.scoring import metrics
from harness.scoring.evaluate import (METRIC_DEFINITIONS, REPORTED_METRICS, UNJUDGED_COUNT, Answer, aggregate,
                                      evaluate_query, evaluate_set, policy_metric_name)
from harness.sets.loader import RELEVANT_GRADE, load_set
from tests.conftest import TINY_SET
from tests.builders import rewrite_query

TINY = load_set(TINY_SET)
BY_QID = {q.qid: q for q in TINY.queries}


def answer(*ids, scores=None):
    return Answer(tuple(ids), tuple(scores) if scores is not None else None, 0.001)


# -- grade 0 in sets ---------------------------------------------------------------------------------

def test_the_loader_and_the_metrics_agree_on_the_relevance_level():
    assert RELEVANT_GRADE == metrics.RELEVANCE_LEVEL == 1


def test_grade_zero_loads_as_a_judged_non_relevant_document(tiny_copy):
    rewrite_query(tiny_copy, "tiny-01", relevant={"doc-01": 1, "doc-08": 0})
    query = load_set(tiny_copy).queries[0]
    assert query.relevant == {"doc-01": 1, "doc-08": 0}


def test_a_query_of_grade_zero_only_is_refused(tiny_copy):
    rewrite_query(tiny_copy, "tiny-01", relevant={"doc-01": 0})
    with pytest.raises(SetError, match=r"queries\.jsonl:1: relevant: only grade 0 \(judged non-relevant\)"):
        load_set(tiny_copy)


def test_a_negative_probe_may_carry_grade_zero_but_not_a_relevant_grade(tiny_copy):
    rewrite_query(tiny_copy, "tiny-07", relevant={"doc-08": 0})
    assert load_set(tiny_copy).queries[6].relevant == {"doc-08": 0}
    rewrite_query(tiny_copy, "tiny-07", relevant={"doc-08": 1})
    with pytest.raises(SetError, match=r"queries\.jsonl:7: no_relevant: true but relevant has a grade >= 1"):
        load_set(tiny_copy)


# -- per query ---------------------------------------------------------------------------------------

def test_judged_coverage_per_query_worked_by_hand():
    # tiny-04 judges doc-04 (2) and doc-05 (1); with doc-08 judged 0 as well, three ids are judged.
    query = BY_QID["tiny-04"]
    judged_query = type(query)(**{**{f: getattr(query, f) for f in query.__slots__},
                                  "relevant": {"doc-04": 2, "doc-05": 1, "doc-08": 0}})
    row = evaluate_query(judged_query, answer("doc-01", "doc-08", "doc-04", "doc-02", "doc-05"), k=10)
    # judged: doc-08, doc-04, doc-05 = 3 of the top 10 (P_10-style denominator 10) = 0.3
    assert row.metrics["judged@10"] == pytest.approx(0.3)
    # unjudged in the top 10: doc-01, doc-02 = 2 (a count, not a ratio)
    assert row.metrics[UNJUDGED_COUNT] == 2
    # ndcg@10 on the list as returned: DCG = 2/log2(4) + 1/log2(6); ideal = 2 + 1/log2(3)
    ideal = 2 + 1 / math.log2(3)
    assert row.metrics["ndcg@10"] == pytest.approx((2 / 2 + 1 / math.log2(6)) / ideal)
    # condensed: doc-01 and doc-02 dropped -> doc-08 (0), doc-04 (2), doc-05 (1): DCG = 2/log2(3) + 1/log2(4)
    assert row.metrics["ndcg@10(condensed)"] == pytest.approx((2 / math.log2(3) + 1 / 2) / ideal)


def test_a_negative_probe_reports_coverage_only():
    row = evaluate_query(BY_QID["tiny-07"], answer("doc-01", "doc-02"), k=10)
    assert row.metrics == {"judged@10": 0.0, UNJUDGED_COUNT: 2}


def test_the_reported_metrics_and_their_definitions():
    assert REPORTED_METRICS == ("recall@5", "recall@10", "mrr", "ndcg@10", "precision@10", "hit@10",
                                "judged@10", "ndcg@10(condensed)")
    assert METRIC_DEFINITIONS["metrics"] == list(REPORTED_METRICS) + ["unjudged@10"]


# -- aggregates --------------------------------------------------------------------------------------

GOOD = {"tiny-01": answer("doc-01", "doc-08"), "tiny-02": answer("doc-02"), "tiny-03": answer("doc-03", "doc-01", "doc-02"),
        "tiny-04": answer("doc-04", "doc-05"), "tiny-05": answer("doc-07"), "tiny-06": answer("doc-06"),
        "tiny-07": answer()}


def test_unjudged_is_summed_and_judged_averaged():
    result = evaluate_set(TINY, GOOD, k=10)
    overall = result.aggregates.overall
    # scored: tiny-01..05 (06 xfail, 07 a probe). Unjudged: 01 has doc-08 (1), 03 has doc-01, doc-02 (2) -> 3
    assert overall.unjudged == 3
    # judged@10 per scored query: 0.1, 0.1, 0.1, 0.2, 0.1 -> mean 0.12
    assert overall.means["judged@10"] == pytest.approx(0.12)
    assert result.aggregates.category["a"].unjudged == 1  # tiny-01, 02, 05


# -- the measures a policy gates ---------------------------------------------------------------------

@pytest.mark.parametrize("name, key", [("nDCG@20", "ndcg@20"), ("AP@100", "ap@100"), ("RR", "rr"),
                                       ("ndcg@10(condensed)", "ndcg@10(condensed)"), ("RR@10", "mrr"),
                                       ("map_cut_100", "ap@100"), ("JUDGED@10", "judged@10")])
def test_a_policy_may_name_any_registry_measure(name, key):
    assert policy_metric_name(name) == key


def test_a_policy_may_not_gate_the_unjudged_count_or_an_unknown_name():
    with pytest.raises(ValueError, match="count of unjudged documents"):
        policy_metric_name("unjudged@10")
    with pytest.raises(ValueError, match="unknown metric"):
        policy_metric_name("ndgc@10")


def test_policy_metrics_are_computed_per_query_and_aggregated():
    result = evaluate_set(TINY, GOOD, k=10, metrics=("AP@100", "nDCG@20", "RR"))
    row = {q.qid: q for q in result.queries}["tiny-03"]  # doc-03 at rank 1 of 3
    assert (row.metrics["ap@100"], row.metrics["ndcg@20"], row.metrics["rr"]) == (1.0, 1.0, 1.0)
    rows = [q for q in result.queries if q.scored]
    for key in ("ap@100", "ndcg@20", "rr"):
        assert result.aggregates.overall.means[key] == pytest.approx(sum(q.metrics[key] for q in rows) / len(rows))
    # aggregate() with no list keeps every metric the rows carry (how `merge` recomputes shards)
    assert aggregate(result.queries).overall == result.aggregates.overall


def test_a_baseline_written_with_the_policy_records_its_measures_and_gates_on_them(tmp_path):
    path = tmp_path / "gate-policy.json"
    path.write_text(json.dumps({"format": 1, "metrics": ["nDCG@20", "ndcg@10(condensed)"]}))
    policy = load_policy(path, policy_metric_name)
    assert policy.metrics == ("ndcg@20", "ndcg@10(condensed)")
    result = evaluate_set(TINY, GOOD, k=10, metrics=policy.metrics)
    document = build_baseline([result], PROVENANCE)
    entry = document["sets"]["tiny"]
    assert "ndcg@20" in entry["aggregates"]["overall"] and "ndcg@20" in entry["queries"]["tiny-01"]["metrics"]
    gates = check([result], baseline_numbers([result]), policy=policy)
    gated = [g for g in gates if g.gate == "ndcg" and g.category is None]
    assert [g.passed for g in gated] == [True, True]
    assert "ndcg@20" in gated[0].message and "ndcg@10(condensed)" in gated[1].message
    # a baseline recorded without the policy's measure fails that gate, saying why
    plain = baseline_numbers([evaluate_set(TINY, GOOD, k=10)])["tiny"]
    missing = [g for g in check([result], {"tiny": plain}, policy=policy) if not g.passed]
    assert missing and "ndcg@20: missing from the baseline" in missing[0].message


def test_the_condensed_figure_is_never_the_default_gate():
    assert "ndcg@10(condensed)" not in GatePolicy().metrics and "judged@10" not in GatePolicy().metrics


def test_a_policy_file_naming_the_count_is_one_usage_line(tmp_path):
    path = tmp_path / "gate-policy.json"
    path.write_text(json.dumps({"format": 1, "metrics": ["unjudged@10"]}))
    with pytest.raises(UsageError, match=r"gate-policy\.json: metrics: 'unjudged@10' is a count"):
        load_policy(path, policy_metric_name)


# -- the judged gate ---------------------------------------------------------------------------------

def test_the_judged_gate_warns_when_coverage_falls():
    base = evaluate_set(TINY, GOOD, k=10)
    entry = baseline_numbers([base])["tiny"]
    # every scored query now returns 4 extra unjudged ids first (judged@10 0.12 -> ... still judged once each)
    padded = {qid: answer(*(f"new-{n}" for n in range(4)), *a.ids) for qid, a in GOOD.items()}
    # top 10 of tiny-03 is new-0..3 + doc-03, doc-01, doc-02: judged 1 of 10 as before; no drop -> pass
    same = [g for g in check([evaluate_set(TINY, padded, k=10)], {"tiny": entry}) if g.gate == "judged"]
    assert same[0].status == "pass"
    # a judged@10 fall of more than 10 points: the policy's judged.warn_drop_points
    entry = with_overall_means(entry, {"judged@10": 0.30})
    warned = [g for g in check([evaluate_set(TINY, padded, k=10)], {"tiny": entry}) if g.gate == "judged"]
    assert warned[0].status == "warn"
    # unjudged in the top 10s of the scored queries: 4 new ids each (5 queries) + doc-08 (01) + doc-01, doc-02 (03)
    assert "23 unjudged documents in the top 10s" in warned[0].message
    assert "judge them and bump the set's revision" in warned[0].message


def test_a_judged_fall_from_answering_nothing_names_that_cause_not_a_judging_gap():
    base = evaluate_set(TINY, GOOD, k=10)
    entry = baseline_numbers([base])["tiny"]
    entry = with_overall_means(entry, {"judged@10": 0.30})
    nothing = {qid: answer() for qid in GOOD}
    (judged,) = [g for g in check([evaluate_set(TINY, nothing, k=10)], {"tiny": entry}) if g.gate == "judged"]
    assert judged.status == "warn" and "judge them" not in judged.message
    # 5 scored queries answered with nothing: 0 documents in their top 10s
    assert "fewer documents returned: 0 in the top 10s of 5 scored queries, 5 answered with nothing" in judged.message


def test_a_run_under_a_policy_computes_and_records_its_measures(tmp_path):
    # The API end to end, from a TREC run file (no adapter): the policy's measures reach the report.
    import harness
    run = tmp_path / "run.txt"
    run.write_text("tiny-01 Q0 doc-01 1 2.0 t\ntiny-01 Q0 doc-02 2 2.0 t\ntiny-02 Q0 doc-03 1 1.0 t\n"
                   "tiny-02 Q0 doc-02 2 0.5 t\n")
    policy = tmp_path / "gate-policy.json"
    policy.write_text(json.dumps({"format": 1, "metrics": ["AP@100", "RR"]}))
    report = harness.gate([str(TINY_SET)], run_file=run, baseline=None, policy=policy,
                          log_path=tmp_path / "log")
    rows = {q.qid: q for q in report.sets[0].queries}
    # tiny-02: doc-02 (grade 2) at rank 2 of a list whose rank 1 is doc-03 (judged relevant only for tiny-03)
    assert rows["tiny-02"].metrics["ap@100"] == 0.5 and rows["tiny-02"].metrics["rr"] == 0.5
    # doc-01 and doc-02 both scored 2.0: read in trec_eval's order (docno descending), one tied position
    assert rows["tiny-01"].ids == ("doc-02", "doc-01") and rows["tiny-01"].tied == 1
    overall = report.sets[0].aggregates.overall
    assert "ap@100" in overall.means and "rr" in overall.means
    assert report.pooled is not None and report.pooled.n == overall.n
    assert report.provenance.extra["policy"]["metrics"] == ["ap@100", "rr"]
