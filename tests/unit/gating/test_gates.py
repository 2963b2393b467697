"""The four gates: recall drop (rounding rule), latency budget, query count, hard contracts."""

import dataclasses
import re

import pytest

from pathlib import Path

from harness.scoring.evaluate import Answer, evaluate_set
from harness.gating.budgets import Budgets
from harness.gating.policy import GatePolicy
from harness.gating.gates import check, flipped_queries
from harness.measured import Aggregates, EvidenceFigure, Latency, ScopeNumbers
from harness.records import QueryResult, SetResult
from harness.gating.baseline import Baseline, build_baseline
from harness.sets.loader import load_set
from tests.builders import PROVENANCE
from tests.conftest import TINY_SET

TINY = load_set(TINY_SET)
GOOD = {q.qid: Answer(ids=tuple(q.relevant) if q.relevant else (), scores=None, latency_seconds=0.001)
        for q in TINY.queries}


def baseline_sets(*results):
    """The baseline's numbers of `results`, written and read back as a gate reads them."""
    document = build_baseline(list(results), PROVENANCE)
    return Baseline.from_document(document, Path("b.json")).sets


def entry_for(result):
    return baseline_sets(result)[result.name]


def synthetic(values_by_category, query_count=None, p95=1.0, found=None):
    """A SetResult whose category recall@10 means are given directly."""
    queries = []
    for category, values in values_by_category.items():
        for index, value in enumerate(values):
            qid = f"{category}-{index}"
            queries.append(QueryResult(qid=qid, query=qid, category=category, split="development", ids=(), scores=None,
                                       latency_seconds=0.001, metrics={"recall@10": value},
                                       found=tuple((found or {}).get(qid, ("d",) if value else ())),
                                       contracts=(), outcome="pass", scored=True))
    categories = {c: ScopeNumbers(len(v), {"recall@10": sum(v) / len(v)}) for c, v in values_by_category.items()}
    everything = [v for values in values_by_category.values() for v in values]
    aggregates = Aggregates(ScopeNumbers(len(everything), {"recall@10": sum(everything) / len(everything)}), categories)
    return SetResult(name="s", kind="s", revision=1, corpus_hash="h", k=10,
                     query_count=query_count or len(queries), complete=True, aggregates=aggregates,
                     latency=Latency(1, p95, p95, p95), queries=tuple(queries))


def failed(gates):
    return [g for g in gates if not g.passed]


def test_identical_run_passes_every_gate():
    result = evaluate_set(TINY, GOOD, k=10)
    gates = check([result], {"tiny": entry_for(result)})
    assert failed(gates) == []
    assert {g.gate for g in gates} == {"query-count", "recall", "latency", "contract", "judged"}


def test_exactly_two_points_passes_more_fails():
    # 50 queries: baseline 0.70 mean. One query's recall 1 -> 0 drops the mean by exactly 0.02.
    base = synthetic({"c": [1.0] * 35 + [0.0] * 15})
    minus_two = synthetic({"c": [1.0] * 34 + [0.0] * 16})
    assert base.aggregates.overall.means["recall@10"] - minus_two.aggregates.overall.means["recall@10"] > 0.02 - 1e-12
    assert failed(check([minus_two], {"s": entry_for(base)})) == []
    # 0.700 -> 0.679 (a drop of 2.1 points) fails, overall and in the category, naming values and flips
    # (33 + 0.95) / 50 = 0.679; c-34 lost its relevant document, c-33 kept one
    worse = synthetic({"c": [1.0] * 33 + [0.95] + [0.0] * 16})
    gates = {g.category: g for g in check([worse], {"s": entry_for(base)}) if g.gate == "recall"}
    assert gates[None].status == "fail"  # the set's drop: the founding rule
    assert "recall@10 dropped 2.10 points: baseline 0.7000, now 0.6790" in gates[None].message
    assert gates[None].flipped == ("c-34",)
    # the CI of a change where 2 queries lost (1.0 -> 0.95 and 1.0 -> 0.0) among 50 is below zero at the top
    assert "change 95% CI [" in gates[None].message and "+0.0] points, p=" in gates[None].message
    # two queries moved (-1.0, -0.05): of the 4 sign flips, 2 reach the observed |mean|, so p = 0.5 and the set
    # cannot tell it from noise; the founding rule fails it and says so, with how to confirm it
    assert "this set cannot tell this drop from noise (p=0.500" in gates[None].message
    assert "founding rule fails any set-level drop" in gates[None].message and "below what" not in gates[None].message
    # the category (the run's only category test: Holm's p is the raw p, 0.5): a warning
    assert gates["c"].status == "warn" and "flipped: c-34" in gates["c"].message
    assert "cannot tell the drop from noise with the run's 1 category test" in gates["c"].message
    assert "Holm-adjusted p=0.500" in gates["c"].message
    # the discount rule: without its worst query (c-34, 2 points) the loss is 0.10 points: one query's noise
    discount = {g.category: g for g in check([worse], {"s": entry_for(base)}, policy=GatePolicy(category_rule="discount"))
                if g.gate == "recall"}
    assert discount["c"].status == "warn"
    assert "without its worst query the category's loss is 0.10 points, within the limit" in discount["c"].message


def test_a_drop_in_one_category_fails_even_if_overall_holds():
    # ten of a's twenty queries lost (-50 points), b gained ten of forty: overall unchanged. The sign-flip test of
    # ten equal losses: only the all-negative and all-positive flips reach the observed mean, p = 2/2^10 = 0.00195;
    # the family is a and b (b improved: p = 1), Holm multiplies the smallest p by 2: 0.0039 < 0.05, a fails
    base = synthetic({"a": [1.0] * 20, "b": [0.0] * 40})
    now = synthetic({"a": [1.0] * 10 + [0.0] * 10, "b": [0.0] * 30 + [1.0] * 10})
    bad = failed(check([now], {"s": entry_for(base)}))
    assert len(bad) == 1 and bad[0].category == "a" and "baseline 1.0000, now 0.5000" in bad[0].message
    assert bad[0].p_value == pytest.approx(2 / 2 ** 10, abs=0.001)  # estimated from 10,000 random flips
    assert "significant with the run's 2 category tests held to a family-wise error of 0.05" in bad[0].message
    assert "Holm-adjusted p=0.00" in bad[0].message


def test_the_discount_rule_fails_two_lost_queries_of_ten():
    # two of a's ten queries lost (-20 points; -10 without the worse of them), b gained two: overall unchanged
    base = synthetic({"a": [1.0] * 10, "b": [0.0] * 40})
    now = synthetic({"a": [1.0] * 8 + [0.0] * 2, "b": [0.0] * 38 + [1.0] * 2})
    bad = failed(check([now], {"s": entry_for(base)}, policy=GatePolicy(category_rule="discount")))
    assert len(bad) == 1 and bad[0].category == "a" and "baseline 1.0000, now 0.8000" in bad[0].message
    # under the holm rule two queries of ten are noise (p = 2/2^2 = 0.5): a warning that says so
    gates = {g.category: g for g in check([now], {"s": entry_for(base)}) if g.gate == "recall"}
    assert failed(gates.values()) == [] and gates["a"].status == "warn"
    assert "Holm-adjusted p=1.000" in gates["a"].message  # min(1, 2 x 0.5)


def holm_p(gate):
    """The Holm-adjusted p a category line states (the raw p is estimated from 10,000 random sign flips)."""
    return float(re.search(r"Holm-adjusted p=([0-9.]+)", gate.message).group(1))


def test_holm_holds_the_family_of_every_category_of_the_run():
    # a: 6 of 6 lost, sign-flip p = 2/2^6 = 0.03125 (significant alone); b: 10 of 10 lost, p = 2/2^10 = 0.00195;
    # c: unchanged (p = 1). Holm over the 3 tests: b 3 x 0.00195 = 0.0059 < 0.05 fails; a max(0.0059,
    # 2 x 0.03125) = 0.0625 >= 0.05 warns. The set's drop (16 of 36 queries) fails by the founding rule.
    base = synthetic({"a": [1.0] * 6, "b": [1.0] * 10, "c": [1.0] * 20})
    now = synthetic({"a": [0.0] * 6, "b": [0.0] * 10, "c": [1.0] * 20})
    gates = {g.category: g for g in check([now], {"s": entry_for(base)}) if g.gate == "recall"}
    assert gates[None].status == "fail" and "cannot tell" not in gates[None].message  # p about 2/2^16: it can
    assert gates["b"].status == "fail" and holm_p(gates["b"]) == pytest.approx(3 * 2 / 2 ** 10, abs=0.003)
    assert gates["a"].status == "warn" and holm_p(gates["a"]) == pytest.approx(2 * 2 / 2 ** 6, abs=0.005)
    assert "the run's 3 category tests" in gates["a"].message
    # the same a alone in its run (c unchanged, no b): Holm over 2 tests, 2 x 0.03125 = 0.0625: still a warning;
    # with a family of one (a the only category), 0.03125 < 0.05 fails
    alone = synthetic({"a": [0.0] * 6})
    only = {g.category: g for g in check([alone], {"s": entry_for(synthetic({"a": [1.0] * 6}))}) if g.gate == "recall"}
    assert only["a"].status == "fail" and "the run's 1 category test held" in only["a"].message
    # two sets in one run: one family (the sets' 2 categories), 2 x 0.03125 = 0.0625: both warn
    other = dataclasses.replace(alone, name="t")
    both = check([alone, other], {"s": entry_for(synthetic({"a": [1.0] * 6})),
                                  "t": baseline_sets(dataclasses.replace(synthetic({"a": [1.0] * 6}), name="t"))["t"]})
    categories = [g for g in both if g.gate == "recall" and g.category == "a"]
    assert [g.status for g in categories] == ["warn", "warn"]
    assert all("the run's 2 category tests" in g.message for g in categories)


def test_one_lost_query_in_a_small_category_of_a_net_improvement_passes():
    # The default policy is right in both directions: b improves by 5 queries (+12.5 points on the set),
    # a loses one of its three: a warning on a (one query's noise), never a failure.
    base = synthetic({"a": [1.0] * 3, "b": [0.0] * 37})
    now = synthetic({"a": [1.0] * 2 + [0.0], "b": [1.0] * 5 + [0.0] * 32})
    gates = {g.category: g for g in check([now], {"s": entry_for(base)}) if g.gate == "recall"}
    assert failed(check([now], {"s": entry_for(base)})) == []
    assert gates[None].improved and gates[None].status == "pass" and "+10.00 points" in gates[None].message
    assert gates["a"].status == "warn" and not gates["a"].improved


def test_query_count_and_missing_category():
    base = synthetic({"a": [1.0], "b": [1.0]})
    now = synthetic({"a": [1.0, 1.0]}, query_count=3)
    messages = [g.message for g in failed(check([now], {"s": entry_for(base)}))]
    assert any("query count 3 differs from the baseline's 2" in m for m in messages)
    assert any("s/b: category in the baseline has no scored queries now" in m for m in messages)


def test_latency_budget_per_set_and_default():
    base = synthetic({"a": [1.0]})
    slow = synthetic({"a": [1.0]}, p95=300.5)
    assert [g.gate for g in failed(check([slow], {"s": entry_for(base)}))] == ["latency"]
    assert failed(check([slow], {"s": entry_for(base)}, Budgets({"s": 400.0}))) == []
    edge = synthetic({"a": [1.0]}, p95=300.0)  # equal to the budget passes
    assert failed(check([edge], {"s": entry_for(base)})) == []
    assert failed(check([slow], {"s": entry_for(base)}, latency_gated=False)) == []


def test_contract_gate_ignores_xfail_and_names_the_query():
    answers = dict(GOOD)
    answers["tiny-06"] = Answer(("doc-03",), None, 0.001)  # xfail query breaks its forbid: not a gate failure
    result = evaluate_set(TINY, answers, k=10)
    assert failed(check([result], {"tiny": entry_for(result)})) == []
    answers["tiny-05"] = Answer(("doc-07", "doc-08"), None, 0.001)
    broken = evaluate_set(TINY, answers, k=10)
    bad = failed(check([broken], {"tiny": entry_for(result)}))
    assert len(bad) == 1 and bad[0].gate == "contract" and "tiny-05 forbid: forbidden doc-08 at rank 2" in bad[0].message


def test_flipped_queries_compare_found_sets():
    base = synthetic({"a": [1.0, 1.0]}, found={"a-0": ("x", "y"), "a-1": ("z",)})
    now = synthetic({"a": [1.0, 1.0]}, found={"a-0": ("x",), "a-1": ("z", "w")})
    assert flipped_queries(now.numbers(), entry_for(base)) == ["a-0"]


def test_known_contract_failures_ratchet():
    answers = dict(GOOD)
    answers["tiny-05"] = Answer(("doc-07", "doc-08"), None, 0.001)  # breaks forbid doc-08
    broken = evaluate_set(TINY, answers, k=10)
    entry = entry_for(broken)
    assert entry.queries["tiny-05"].broken == ("forbid:doc-08",)
    # strict by default: the known break still fails, and says the option exists for it
    [strict] = failed(check([broken], {"tiny": entry}))
    assert strict.gate == "contract" and strict.message.endswith(
        "; the baseline records it as broken (--known-contract-failures fails only new breaks)")
    # ratchet: the same break passes as known ...
    gates = check([broken], {"tiny": entry}, known_contract_failures=True)
    contract = [g for g in gates if g.gate == "contract"]
    assert failed(gates) == [] and "1 known from the baseline (tiny-05)" in contract[0].message
    # ... but a new break (a different contract) still fails
    answers["tiny-04"] = Answer(("doc-05", "doc-04"), None, 0.001)
    worse = evaluate_set(TINY, answers, k=10)
    bad = failed(check([worse], {"tiny": entry}, known_contract_failures=True))
    assert len(bad) == 1 and "tiny-04 rank_before" in bad[0].message and "as broken" not in bad[0].message
    # strict, with a new break beside the known one: no hint (the option would not make it pass)
    [mixed] = failed(check([worse], {"tiny": entry}))
    assert "2 hard contract(s) broken" in mixed.message and "as broken" not in mixed.message
    # both recorded: the hint counts them
    [both] = failed(check([worse], {"tiny": entry_for(worse)}))
    assert both.message.endswith("; the baseline records all 2 as broken (--known-contract-failures fails only "
                                 "new breaks)")


# -- exposed-evidence metrics gated through the policy ------------------------------------------------

def _evidence_result(name, answer_hit, stale, judged=10):
    import dataclasses as _dc
    from tests.builders import set_result as _set_result
    result = _set_result([("c", 1, 1, 1)], 2)
    overall = _dc.replace(result.aggregates.overall, evidence={
        "answer_hit@10": EvidenceFigure(answer_hit, judged, 0, answer_hit * judged),
        "stale_before_current": EvidenceFigure(stale, judged, 2, stale * judged)})
    category = _dc.replace(result.aggregates.category["c"],
                           evidence={"answer_hit@10": EvidenceFigure(answer_hit, judged, 0, 0)})
    return _dc.replace(result, name=name, aggregates=Aggregates(overall, {"c": category}))


def test_evidence_metrics_gate_in_their_own_direction():
    from harness.gating.policy import GatePolicy
    base = _evidence_result("s", answer_hit=0.60, stale=0.20)
    entry = baseline_sets(base)
    policy = GatePolicy(metrics=("answer_hit@10", "stale_before_current"))
    # answer_hit@10 0.60 -> 0.55 is a 5-point drop (fails); stale_before_current 0.20 -> 0.30 a 10-point rise (fails)
    now = _evidence_result("s", answer_hit=0.55, stale=0.30)
    gates = {(g.gate, g.category): g for g in check([now], entry, latency_gated=False, policy=policy)}
    assert gates[("answer_hit", None)].status == "fail" and "dropped 5.00 points" in gates[("answer_hit", None)].message
    assert gates[("stale_before_current", None)].status == "fail"
    assert "rose 10.00 points" in gates[("stale_before_current", None)].message
    # a falling stale rate is an improvement, and the category with no stale figure passes saying so
    better = _evidence_result("s", answer_hit=0.61, stale=0.05)
    gates = {(g.gate, g.category): g for g in check([better], entry, latency_gated=False, policy=policy)}
    assert gates[("stale_before_current", None)].status == "pass"
    assert "no query judged on it in the baseline or now" in gates[("stale_before_current", "c")].message


def test_improved_needs_at_least_one_query_worth_of_gain():
    # 10 queries: one query is worth 10 points. A query moving 0.5 -> 0.75 lifts the mean 2.5 points: one
    # query's partial change, never IMPROVED; a query going 0 -> 1 (10 points, one query's worth) is.
    base = synthetic({"c": [0.5] + [0.0] * 9})
    partial = [g for g in check([synthetic({"c": [0.75] + [0.0] * 9})], {"s": entry_for(base)})
               if g.gate == "recall" and g.category is None]
    assert partial[0].change == pytest.approx(0.025) and not partial[0].improved
    whole = [g for g in check([synthetic({"c": [0.5, 1.0] + [0.0] * 8})], {"s": entry_for(base)})
             if g.gate == "recall" and g.category is None]
    assert whole[0].change == pytest.approx(0.1) and whole[0].improved


def test_a_contract_gate_says_how_many_queries_it_does_not_list(tmp_path):
    from tests.builders import query, write_set

    many = load_set(write_set(tmp_path / "many", [query(f"q{n:02d}", forbid=["other"]) for n in range(13)]))
    clean = evaluate_set(many, {q.qid: Answer(("page",), None, 0.001) for q in many.queries}, k=10)
    broken = evaluate_set(many, {q.qid: Answer(("page", "other"), None, 0.001) for q in many.queries}, k=10)
    [bad] = failed(check([broken], {"ev": entry_for(clean)}))
    # 13 queries broke their forbid: the first ten named in order, the other three counted
    named = ", ".join(f"q{n:02d}" for n in range(10))
    assert bad.gate == "contract"
    assert f"13 hard contract(s) broken in {named} (+3 more); first: q00 forbid" in bad.message
