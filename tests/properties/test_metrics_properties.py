"""Property tests for harness.scoring.metrics: a plain reference implementation, and trec_eval itself.

The full proof against trec_eval (every family, condensed, rel levels, depths to 1,000) is
tests/properties/test_metrics_trec_eval.py.
"""

from __future__ import annotations

import importlib.util
import math
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.scoring.metrics import compute_many, parse_metric, percentile
from tests.conftest import TESTS


def _at(family):
    """The family as f(ranked, grades, k), through the public parser and compute."""
    def at(ranked, grades, k):
        return parse_metric(f"{family}@{k}").compute(ranked, grades)
    at.__name__ = family
    return at


recall, precision, reciprocal_rank, ndcg, hit = (_at(family) for family in ("recall", "precision", "rr", "ndcg", "hit"))
average_precision, r_precision, judged = _at("ap"), _at("rprec"), _at("judged")

# No example database in the working tree, and no timing-based failures.
PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, database=None)

DOC_IDS = [f"d{i:02d}" for i in range(30)]

rankings = st.lists(st.sampled_from(DOC_IDS), unique=True, max_size=25)
judgments = st.dictionaries(st.sampled_from(DOC_IDS), st.integers(min_value=-1, max_value=3),
                            max_size=20)
cutoffs = st.integers(min_value=1, max_value=30)


# ---------------------------------------------------------------- reference implementation
# Written from the textbook definitions, deliberately in a different shape from the module:
# a relevance vector over the top k, then sums over it.

def ref_vector(ranked, grades, k):
    """Grades of the top k positions (unjudged = 0); ranked has unique ids."""
    return [grades.get(doc, 0) for doc in ranked[:k]]


def ref_recall(ranked, grades, k):
    total = len([g for g in grades.values() if g > 0])
    if total == 0:
        return 0.0
    return len([g for g in ref_vector(ranked, grades, k) if g > 0]) / total


def ref_precision(ranked, grades, k):
    return len([g for g in ref_vector(ranked, grades, k) if g > 0]) / k


def ref_rr(ranked, grades, k):
    vector = ref_vector(ranked, grades, k)
    for index in range(len(vector)):
        if vector[index] > 0:
            return 1 / (index + 1)
    return 0.0


def ref_dcg(gains):
    return sum(g / math.log2(index + 2) for index, g in enumerate(gains) if g > 0)


def ref_ndcg(ranked, grades, k):
    ideal = ref_dcg(sorted((g for g in grades.values() if g > 0), reverse=True)[:k])
    return ref_dcg(ref_vector(ranked, grades, k)) / ideal if ideal > 0 else 0.0


def ref_hit(ranked, grades, k):
    return 1.0 if any(g > 0 for g in ref_vector(ranked, grades, k)) else 0.0


def ref_ap(ranked, grades, k):
    total = len([g for g in grades.values() if g > 0])
    vector = ref_vector(ranked, grades, k)
    precisions = [len([g for g in vector[:index + 1] if g > 0]) / (index + 1)
                  for index in range(len(vector)) if vector[index] > 0]
    return sum(precisions) / total if total else 0.0


def ref_rprec(ranked, grades, k):
    total = len([g for g in grades.values() if g > 0])
    return len([g for g in ref_vector(ranked, grades, min(k, total)) if g > 0]) / total if total else 0.0


PAIRS = [(recall, ref_recall), (precision, ref_precision), (reciprocal_rank, ref_rr),
         (ndcg, ref_ndcg), (hit, ref_hit), (average_precision, ref_ap), (r_precision, ref_rprec)]


@PROPERTY_SETTINGS
@given(rankings, judgments, cutoffs)
def test_metrics_match_the_reference(ranked, grades, k):
    for function, reference in PAIRS:
        assert function(ranked, grades, k) == pytest.approx(reference(ranked, grades, k),
                                                            abs=1e-12), function.__name__


@PROPERTY_SETTINGS
@given(st.lists(st.sampled_from(DOC_IDS[:6]), max_size=12), judgments, cutoffs)
def test_bounds_hold_even_with_repeated_ids(ranked, grades, k):
    for function, _ in PAIRS:
        assert 0.0 <= function(ranked, grades, k) <= 1.0, function.__name__


@PROPERTY_SETTINGS
@given(rankings, judgments, cutoffs)
def test_monotonic_in_k(ranked, grades, k):
    # Looking deeper never loses what was found: recall, hit, relevant count, and RR.
    assert recall(ranked, grades, k) <= recall(ranked, grades, k + 1)
    assert hit(ranked, grades, k) <= hit(ranked, grades, k + 1)
    assert reciprocal_rank(ranked, grades, k) <= reciprocal_rank(ranked, grades, k + 1)
    assert (precision(ranked, grades, k) * k
            <= precision(ranked, grades, k + 1) * (k + 1) + 1e-9)


@PROPERTY_SETTINGS
@given(judgments, cutoffs, st.lists(st.sampled_from(DOC_IDS), unique=True, max_size=10))
def test_perfect_ranking(grades, k, tail):
    ideal = sorted((doc for doc, g in grades.items() if g > 0), key=lambda doc: -grades[doc])
    ranked = ideal + [doc for doc in tail if doc not in ideal]
    relevant = len(ideal)
    if relevant == 0:
        for function, _ in PAIRS:
            assert function(ranked, grades, k) == 0.0
        return
    assert ndcg(ranked, grades, k) == pytest.approx(1.0)
    assert reciprocal_rank(ranked, grades, k) == 1.0
    assert hit(ranked, grades, k) == 1.0
    assert recall(ranked, grades, k) == pytest.approx(min(k, relevant) / relevant)
    assert precision(ranked, grades, k) == pytest.approx(min(k, relevant) / k)


@PROPERTY_SETTINGS
@given(rankings, judgments, cutoffs, st.lists(st.sampled_from(DOC_IDS), max_size=5))
def test_results_below_k_change_nothing(ranked, grades, k, extra):
    assume(ranked)
    k = min(k, len(ranked))  # a full top k, so `extra` lands below it
    longer = list(ranked[:k]) + list(extra)
    for function, _ in PAIRS:
        assert function(longer, grades, k) == function(ranked, grades, k)


@PROPERTY_SETTINGS
@given(rankings, judgments, cutoffs)
def test_grade_zero_negative_and_unjudged_are_the_same(ranked, grades, k):
    positive = {doc: g for doc, g in grades.items() if g >= 1}
    for function, _ in PAIRS:
        assert function(ranked, grades, k) == function(ranked, positive, k)


@PROPERTY_SETTINGS
@given(rankings, judgments, cutoffs)
def test_judged_counts_grades_zero_and_up_over_k(ranked, grades, k):
    assert judged(ranked, grades, k) == len([d for d in ranked[:k] if grades.get(d, -1) >= 0]) / k


@PROPERTY_SETTINGS
@given(rankings, judgments, cutoffs)
def test_condensed_is_the_measure_on_the_judged_documents_only(ranked, grades, k):
    kept = [doc for doc in ranked if grades.get(doc, -1) >= 0]
    for family in ("recall", "precision", "rr", "ndcg", "hit", "ap", "rprec", "bpref", "judged"):
        assert (parse_metric(f"{family}@{k}(condensed)").compute(ranked, grades)
                == parse_metric(f"{family}@{k}").compute(kept, grades)), family


MANY = ("recall@5", "recall@10", "mrr", "ndcg@10", "precision@10", "hit@10", "ap", "ap@3", "rr", "rprec",
        "bpref", "judged@5", "ndcg(condensed)", "bpref@4(rel=2)", "P@3(condensed,rel=2)")


@PROPERTY_SETTINGS
@given(rankings, judgments)
def test_compute_many_equals_each_compute_and_inputs_stay_untouched(ranked, grades):
    ranked_copy, grades_copy = list(ranked), dict(grades)
    values = compute_many(MANY, ranked, grades)
    for name in MANY:
        measure = parse_metric(name)
        assert values[measure.name] == measure.compute(ranked, grades), name
    assert (ranked, grades) == (ranked_copy, grades_copy)


# ---------------------------------------------------------------- percentile

def ref_percentile(values, p):
    """The smallest value v with #(values <= v) >= p% of n (the nearest-rank definition)."""
    n = len(values)
    for v in sorted(values):
        if Fraction(sum(1 for x in values if x <= v)) * 100 >= p * n:
            return v
    return max(values)


percentile_values = st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False),
                             min_size=1, max_size=60)
percents = st.integers(min_value=0, max_value=1000).map(lambda tenths: Fraction(tenths, 10))


@PROPERTY_SETTINGS
@given(percentile_values, percents)
def test_percentile_matches_the_reference(values, p):
    p_float = float(p)  # tenths print as the decimal they are, e.g. 99.9
    assert percentile(values, p_float) == ref_percentile(values, p)


@PROPERTY_SETTINGS
@given(percentile_values, percents, percents)
def test_percentile_is_monotonic_and_a_member(values, p, q):
    low, high = sorted((float(p), float(q)))
    assert percentile(values, low) <= percentile(values, high)
    assert percentile(values, low) in values
    assert min(values) <= percentile(values, low) <= max(values)


# ---------------------------------------------------------------- trec_eval itself

try:  # pytrec_eval embeds trec_eval 9.x; optional outside CI (pip install pytrec-eval-terrier).
    import pytrec_eval
except ImportError:
    pytrec_eval = None

# trec_eval measure -> our family and cutoff. recip_rank is computed on the run cut at 10.
TREC_MEASURES = {"ndcg_cut_10": ("ndcg", 10), "ndcg_cut_5": ("ndcg", 5),
                 "recall_5": ("recall", 5), "recall_10": ("recall", 10),
                 "recall_20": ("recall", 20), "P_10": ("precision", 10), "P_5": ("precision", 5),
                 "recip_rank": ("rr", 10), "success_10": ("hit", 10), "success_1": ("hit", 1)}


@pytest.mark.usefixtures("pytrec_eval_required")
@settings(max_examples=300, deadline=None, database=None)
@given(rankings,
       st.dictionaries(st.sampled_from(DOC_IDS), st.integers(min_value=-1, max_value=4),
                       min_size=1, max_size=20))
def test_metrics_match_trec_eval(ranked, grades):
    # Strictly decreasing scores so trec_eval's sort (score desc, then docno desc) keeps our
    # order. recip_rank has no cutoff in trec_eval: give it the list cut at 10 (as -M 10).
    # (qrels need at least one judgment: pytrec_eval drops a query with none.)
    full_run = {"q": {doc: float(len(ranked) - index) for index, doc in enumerate(ranked)}}
    cut_run = {"q": {doc: float(len(ranked) - index) for index, doc in enumerate(ranked[:10])}}
    qrels = {"q": dict(grades)}
    cut_measures = {"recip_rank"}
    full_measures = set(TREC_MEASURES) - cut_measures
    trec = {**pytrec_eval.RelevanceEvaluator(qrels, full_measures).evaluate(full_run)["q"],
            **pytrec_eval.RelevanceEvaluator(qrels, cut_measures).evaluate(cut_run)["q"]}
    assert set(trec) >= set(TREC_MEASURES)
    for measure, (family, cutoff) in TREC_MEASURES.items():
        ours = parse_metric(f"{family}@{cutoff}").compute(ranked, grades)
        assert ours == pytest.approx(trec[measure], abs=1e-9), (measure, ranked, grades)


def _load_hand_table():
    """TABLE from tests/unit/scoring/test_metrics.py, loaded by path so it works however pytest imports tests."""
    spec = importlib.util.spec_from_file_location(
        "_hand_table", TESTS / "unit" / "scoring" / "test_metrics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TABLE


@pytest.mark.usefixtures("pytrec_eval_required")
def test_hand_computed_table_agrees_with_trec_eval():
    # The hand tables of tests/unit/scoring/test_metrics.py, at the cutoffs trec_eval names, scored by trec_eval.
    table = _load_hand_table()

    trec_name = {"ndcg": "ndcg_cut_{k}", "recall": "recall_{k}", "precision": "P_{k}",
                 "hit": "success_{k}"}
    checked = 0
    for case, ranked, grades, k, expected in table:
        if not grades or k not in (5, 10):
            continue  # pytrec_eval drops a query without judgments
        run = {"q": {doc: float(len(ranked) - index) for index, doc in enumerate(ranked)}}
        cut_run = {"q": {doc: run["q"][doc] for doc in list(run["q"])[:k]}}
        measures = {name.format(k=k) for name in trec_name.values()}
        trec = pytrec_eval.RelevanceEvaluator({"q": grades}, measures).evaluate(run)["q"]
        trec["recip_rank"] = pytrec_eval.RelevanceEvaluator(
            {"q": grades}, {"recip_rank"}).evaluate(cut_run)["q"]["recip_rank"]
        for family, value in expected.items():
            measure = "recip_rank" if family == "mrr" else trec_name[family].format(k=k)
            assert trec[measure] == pytest.approx(value, abs=1e-12), (case, family)
            checked += 1
    assert checked >= 40
