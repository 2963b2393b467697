"""Hand-computed tables for harness.scoring.metrics: each expected value shows its arithmetic."""

from __future__ import annotations

import ast
import math
import sys
from types import MappingProxyType

import pytest

from harness.scoring import measures, metrics
from harness.scoring.measures import Family
from harness.scoring.metrics import (
    DEFINITIONS_VERSION, FAMILIES, RANKING_FAMILIES, compute_from_scores, compute_many, family_table, make_measure,
    parse_metric, percentile, trec_eval_order,
)
from tests.builders import ir_measures_name

LOG2_3 = math.log2(3)  # discount denominator at rank 2: 1/log2(2+1)

TEN_MISSES = [f"miss{i}" for i in range(1, 11)]  # ten non-relevant (unjudged) ids

# (case, ranked ids, grades, k, expected {metric: value}); metric functions called as f(ranked, grades, k).
TABLE = [
    ("graded, relevant out of order",
     ["c", "x", "a"], {"a": 3, "b": 2, "c": 1}, 10,
     {
         # DCG = 1/log2(2) [c, grade 1] + 0 [x] + 3/log2(4) [a, grade 3] = 1 + 1.5 = 2.5
         # IDCG = 3/1 + 2/log2(3) + 1/log2(4) = 3 + 2/log2(3) + 0.5
         "ndcg": 2.5 / (3 + 2 / LOG2_3 + 0.5),
         "recall": 2 / 3,       # a and c of {a, b, c}
         "precision": 2 / 10,   # two relevant, denominator k = 10
         "mrr": 1 / 1,          # c at rank 1
         "hit": 1.0,
     }),
    ("graded, ideal order",
     ["a", "b", "c"], {"a": 3, "b": 2, "c": 1}, 10,
     {"ndcg": 1.0, "recall": 1.0, "precision": 3 / 10, "mrr": 1.0, "hit": 1.0}),
    ("graded, reversed order",
     ["c", "b", "a"], {"a": 3, "b": 2, "c": 1}, 10,
     {
         # DCG = 1/1 + 2/log2(3) + 3/log2(4); IDCG = 3/1 + 2/log2(3) + 1/log2(4)
         "ndcg": (1 + 2 / LOG2_3 + 1.5) / (3 + 2 / LOG2_3 + 0.5),
         "recall": 1.0, "precision": 3 / 10, "mrr": 1.0, "hit": 1.0,
     }),
    ("graded, best document not retrieved, cut at 2",
     ["b", "x", "a"], {"a": 3, "b": 2}, 2,
     {
         # top 2 = [b, x]: DCG = 2/1; IDCG@2 = 3/1 + 2/log2(3)
         "ndcg": 2 / (3 + 2 / LOG2_3),
         "recall": 1 / 2, "precision": 1 / 2, "mrr": 1.0, "hit": 1.0,
     }),
    ("relevant document not retrieved",
     ["a", "x", "y"], {"a": 1, "b": 1}, 10,
     {
         # DCG = 1/1; IDCG = 1/1 + 1/log2(3) (b counts in the ideal although never retrieved)
         "ndcg": 1 / (1 + 1 / LOG2_3),
         "recall": 1 / 2, "precision": 1 / 10, "mrr": 1.0, "hit": 1.0,
     }),
    ("fewer than k results",
     ["x", "a"], {"a": 1}, 10,
     {
         "ndcg": (1 / LOG2_3) / 1,  # a at rank 2: 1/log2(3); IDCG = 1/1
         "recall": 1.0,
         "precision": 1 / 10,  # still divided by k = 10, not by the 2 returned
         "mrr": 1 / 2, "hit": 1.0,
     }),
    ("relevant document at rank k, k = 10",
     TEN_MISSES[:9] + ["a"], {"a": 1}, 10,
     {"ndcg": 1 / math.log2(11),  # rank 10: 1/log2(10+1); IDCG = 1
      "recall": 1.0, "precision": 1 / 10, "mrr": 1 / 10, "hit": 1.0}),
    ("relevant document at rank k + 1, k = 10",
     TEN_MISSES + ["a"], {"a": 1}, 10,
     {"ndcg": 0.0, "recall": 0.0, "precision": 0.0, "mrr": 0.0, "hit": 0.0}),
    ("relevant document at rank k + 1, seen with k = 11",
     TEN_MISSES + ["a"], {"a": 1}, 11,
     {"ndcg": 1 / math.log2(12), "recall": 1.0, "precision": 1 / 11, "mrr": 1 / 11, "hit": 1.0}),
    ("empty ranking",
     [], {"a": 2, "b": 1}, 10,
     {"ndcg": 0.0, "recall": 0.0, "precision": 0.0, "mrr": 0.0, "hit": 0.0}),
    ("all retrieved are relevant and all relevant retrieved",
     ["a", "b", "c"], {"a": 1, "b": 1, "c": 1}, 3,
     {"ndcg": 1.0, "recall": 1.0, "precision": 3 / 3, "mrr": 1.0, "hit": 1.0}),
    ("more relevant than k: the ideal is cut at k",
     [f"r{i}" for i in range(10)], {f"r{i}": 1 for i in range(12)}, 10,
     {"ndcg": 1.0,            # top 10 all grade 1 = the ideal top 10
      "recall": 10 / 12, "precision": 10 / 10, "mrr": 1.0, "hit": 1.0}),
    ("grade 0 and negative grades are non-relevant",
     ["a", "b", "c"], {"a": 0, "b": -1, "c": 1}, 10,
     {"ndcg": (1 / math.log2(4)) / 1,  # only c (rank 3) gains: 1/log2(3+1) = 0.5; IDCG = 1
      "recall": 1 / 1, "precision": 1 / 10, "mrr": 1 / 3, "hit": 1.0}),
    ("no relevant document: 0.0 by convention",
     ["a", "b"], {"a": 0}, 10,
     {"ndcg": 0.0, "recall": 0.0, "precision": 0.0, "mrr": 0.0, "hit": 0.0}),
    ("no judgments at all",
     ["a", "b"], {}, 10,
     {"ndcg": 0.0, "recall": 0.0, "precision": 0.0, "mrr": 0.0, "hit": 0.0}),
    ("a repeated id counts once, at its first position",
     ["a", "a", "b"], {"a": 1, "b": 1}, 2,
     {
         # top 2 = [a, a]: a gains once at rank 1; b (rank 3) is outside. IDCG@2 = 1 + 1/log2(3)
         "ndcg": 1 / (1 + 1 / LOG2_3),
         "recall": 1 / 2, "precision": 1 / 2, "mrr": 1.0, "hit": 1.0,
     }),
]

def _at(family):
    """The family as f(ranked, grades, k), through the public parser and compute."""
    return lambda ranked, grades, k: parse_metric(f"{family}@{k}").compute(ranked, grades)


# The table's "mrr" column is RR at the case's cutoff (the rr family).
FUNCTIONS = {"ndcg": _at("ndcg"), "recall": _at("recall"), "precision": _at("precision"),
             "mrr": _at("rr"), "hit": _at("hit")}


@pytest.mark.parametrize(("ranked", "grades", "k", "expected"),
                         [case[1:] for case in TABLE], ids=[case[0] for case in TABLE])
def test_hand_computed_table(ranked, grades, k, expected):
    got = {name: FUNCTIONS[name](ranked, grades, k) for name in expected}
    assert got == pytest.approx(expected, abs=1e-12)


def test_hand_computed_ndcg_values_spelled_out():
    # The same graded case as the table, with the decimals written down as a second check:
    # 2.5 / (3 + 1.2618595071429148 + 0.5) = 2.5 / 4.761859507142915 = 0.5250051...
    assert FUNCTIONS["ndcg"](["c", "x", "a"], {"a": 3, "b": 2, "c": 1}, 10) == pytest.approx(0.525005, abs=1e-6)
    # rank 10: 1/log2(11) = 1/3.4594316186 = 0.2890648...
    assert FUNCTIONS["ndcg"](TEN_MISSES[:9] + ["a"], {"a": 1}, 10) == pytest.approx(0.289065, abs=1e-6)


# One ranking for the families added with the registry. Positions: a1 x2 b3 e4 c5 d6.
# Judged relevant (grade >= 1): a, b, d, f (f never retrieved): R = 4. Judged non-relevant
# (grade 0): c: N = 1. x is unjudged, e has a negative grade (trec_eval: pooled, unjudged).
RANKED = ["a", "x", "b", "e", "c", "d"]
GRADES = {"a": 1, "b": 2, "c": 0, "d": 3, "e": -1, "f": 1}
LOG2_5 = math.log2(5)

NEW_FAMILIES = [
    ("ap", (1 / 1 + 2 / 3 + 3 / 6) / 4),        # relevant at 1, 3, 6: P@1, P@3, P@6 over R = 4
    ("ap@3", (1 / 1 + 2 / 3) / 4),              # only positions <= 3; still over all R = 4
    ("map_cut_3", (1 / 1 + 2 / 3) / 4),         # the same in trec_eval's spelling
    ("rprec", 2 / 4),                           # top R = 4: a, x, b, e -> a, b
    ("rprec@2", 1 / 4),                         # ranking cut at 2: top min(R, 2) = a, x -> a
    ("bpref", (1 + 1 + 0) / 4),                 # a, b: no judged non-relevant above -> 1 each;
                                                # d: 1 - min(1, R) / min(N, R) = 1 - 1/1 = 0
    ("bpref@5", (1 + 1) / 4),                   # d (position 6) is cut off
    ("judged@3", 2 / 3),                        # a, b judged; x not
    ("judged@6", 4 / 6),                        # a, b, c, d; e's negative grade is not a judgment
    ("judged@10", 4 / 10),                      # divided by k, as P@k
    ("rr", 1.0),                                # a at 1
    ("ndcg", (1 + 2 / 2 + 3 / math.log2(7))      # DCG: a 1/log2(2), b 2/log2(4), d 3/log2(7)
     / (3 + 2 / LOG2_3 + 1 / 2 + 1 / LOG2_5)),  # ideal: 3, 2, 1, 1 at positions 1..4
    # condensed: unjudged x and e removed -> a1 b2 c3 d4
    ("ap(condensed)", (1 / 1 + 2 / 2 + 3 / 4) / 4),
    ("precision@2(condensed)", 2 / 2),
    ("P(judged_only=True)@2", 2 / 2),
    ("ndcg@2(condensed)", (1 + 2 / LOG2_3) / (3 + 2 / LOG2_3)),
    ("rprec(condensed)", 3 / 4),                # top 4 of a, b, c, d
    ("judged@4(condensed)", 4 / 4),
    # rel=2: relevant b, d (R = 2); judged non-relevant a, c, f (N = 3)
    ("ap(rel=2)", (1 / 3 + 2 / 6) / 2),
    ("P(rel=2)@3", 1 / 3),
    ("bpref(rel=2)", ((1 - 1 / 2) + (1 - 2 / 2)) / 2),  # b: 1 - min(1, 2)/min(3, 2); d: 1 - 2/2
    ("recall@6(rel=2)", 2 / 2),
    ("rr(rel=2)", 1 / 3),
]


@pytest.mark.parametrize(("name", "expected"), NEW_FAMILIES, ids=[name for name, _ in NEW_FAMILIES])
def test_hand_computed_new_families(name, expected):
    assert parse_metric(name).compute(RANKED, GRADES) == pytest.approx(expected, abs=1e-12)


def test_compute_many_equals_each_compute_and_keys_by_canonical_name():
    names = [name for name, _ in NEW_FAMILIES]
    values = compute_many(names, RANKED, GRADES)
    assert set(values) == {parse_metric(name).name for name in names}
    for name, expected in NEW_FAMILIES:
        assert values[parse_metric(name).name] == pytest.approx(expected, abs=1e-12), name
    # Measures and names mix; asking twice for one measure gives it once.
    assert compute_many([parse_metric("RR@10"), "mrr", "P@5"], RANKED, GRADES) == {"mrr": 1.0, "precision@5": 2 / 5}


def test_rr_with_no_cutoff_is_full_depth_but_mrr_is_rr_at_ten():
    ranked = TEN_MISSES + ["a"]
    assert parse_metric("RR").compute(ranked, {"a": 1}) == pytest.approx(1 / 11)
    assert parse_metric("recip_rank").compute(ranked, {"a": 1}) == pytest.approx(1 / 11)
    assert parse_metric("mrr").compute(ranked, {"a": 1}) == 0.0
    assert parse_metric("mrr").compute(TEN_MISSES[:9] + ["a"], {"a": 1}) == pytest.approx(0.1)


def test_nothing_retrieved_and_nothing_judged_score_zero():
    for name in ("ap", "rprec", "bpref", "judged@5", "ndcg", "rr", "ap(condensed)"):
        assert parse_metric(name).compute([], GRADES) == 0.0
        assert parse_metric(name).compute(RANKED, {}) == 0.0


def test_a_repeated_id_counts_once_for_the_new_families():
    # [a, a, b]: the second a is neither relevant nor judged, and is dropped when condensing.
    grades = {"a": 1, "b": 0}
    assert parse_metric("judged@2").compute(["a", "a", "b"], grades) == 1 / 2
    assert parse_metric("ap").compute(["a", "a", "c", "a"], {"a": 1, "c": 1}) == pytest.approx((1 + 2 / 3) / 2)
    assert parse_metric("precision@2(condensed)").compute(["a", "a", "b"], grades) == 1 / 2


def test_recall_over_judged_relevant_only():
    # Three judged docs, one of grade 0: recall@1 of [b] = 1 relevant found / 2 relevant.
    assert FUNCTIONS["recall"](["b"], {"a": 1, "b": 2, "c": 0}, 1) == pytest.approx(1 / 2)


def test_inputs_are_not_mutated_and_any_sequence_or_mapping_works():
    ranked = ["c", "x", "a"]
    grades = {"a": 3, "b": 2, "c": 1}
    before = (list(ranked), dict(grades))
    compute_many([name for name, _ in NEW_FAMILIES], ranked, grades)
    assert (ranked, grades) == before
    frozen = MappingProxyType(dict(grades))
    assert FUNCTIONS["ndcg"](tuple(ranked), frozen, 10) == FUNCTIONS["ndcg"](ranked, grades, 10)
    assert FUNCTIONS["recall"](tuple(ranked), frozen, 10) == pytest.approx(2 / 3)


@pytest.mark.parametrize("bad_k", [0, -1, True, 1.5, "10", None])
@pytest.mark.parametrize("family", sorted(RANKING_FAMILIES))
def test_bad_cutoff_is_a_value_error(family, bad_k):
    if bad_k is None and not FAMILIES[family].cutoff_required:
        return  # no cutoff = the whole ranking
    with pytest.raises(ValueError, match="cutoff"):
        make_measure(family, bad_k)


def test_a_bare_string_is_not_a_ranking():
    # "abc" would otherwise be read as the ranking ["a", "b", "c"].
    for name in ("ndcg@10", "ap", "bpref(condensed)"):
        with pytest.raises(TypeError, match="not a string"):
            parse_metric(name).compute("abc", {"a": 1})


# ------------------------------------------------------------------ percentile

@pytest.mark.parametrize(("values", "p", "expected"), [
    ([7.0], 50, 7.0),              # n=1: rank ceil(0.5*1)=1
    ([7.0], 95, 7.0),              # n=1: rank ceil(0.95*1)=1
    ([3.0, 1.0], 50, 1.0),         # n=2 sorted [1, 3]: rank ceil(0.5*2)=1 -> 1
    ([3.0, 1.0], 95, 3.0),         # n=2: rank ceil(0.95*2)=ceil(1.9)=2 -> 3
    (list(range(20, 0, -1)), 50, 10),   # n=20 of 1..20: rank ceil(0.5*20)=10 -> 10
    (list(range(20, 0, -1)), 95, 19),   # n=20: rank ceil(0.95*20)=19 -> 19
    (list(range(20, 0, -1)), 100, 20),  # rank 20 = the maximum
    (list(range(20, 0, -1)), 0, 1),     # rank ceil(0)=0, clamped to 1 = the minimum
    (list(range(20, 0, -1)), 96, 20),   # rank ceil(0.96*20)=ceil(19.2)=20
    (list(range(1, 101)), 55, 55),      # rank ceil(55*100/100)=55; 55/100*100 in floats is 55.000...01
    (list(range(1, 101)), 7, 7),        # same float trap: 7/100*100 = 7.000000000000001
    (list(range(1, 1001)), 99.9, 999),  # rank ceil(99.9*1000/100)=999, not 1000
    ([5.0, 5.0, 1.0], 50, 5.0),         # sorted [1, 5, 5]: rank ceil(1.5)=2 -> 5
])
def test_percentile_nearest_rank(values, p, expected):
    copy = list(values)
    assert percentile(values, p) == expected
    assert values == copy  # not sorted in place


@pytest.mark.parametrize(("values", "p", "message"), [
    ([], 50, "empty"),
    ([1.0], -1, r"\[0, 100\]"),
    ([1.0], 100.5, r"\[0, 100\]"),
    ([1.0], float("nan"), r"\[0, 100\]"),
    ([1.0], True, r"\[0, 100\]"),
    ([1.0, float("nan")], 50, "NaN"),
])
def test_percentile_errors(values, p, message):
    with pytest.raises(ValueError, match=message):
        percentile(values, p)


# ------------------------------------------------------------------ registry and names

def test_canonical_names_reports_carry_are_unchanged():
    # Reports and committed baselines key per-query values by these strings.
    for spelling, name in [("recall@5", "recall@5"), ("recall@10", "recall@10"), ("mrr", "mrr"),
                           ("mrr@10", "mrr"), ("RR@10", "mrr"), ("ndcg@10", "ndcg@10"),
                           ("precision@10", "precision@10"), ("hit@10", "hit@10")]:
        assert parse_metric(spelling).name == name
    assert DEFINITIONS_VERSION == 1


@pytest.mark.parametrize(("spelling", "name", "family", "cutoff"), [
    ("ndcg@10", "ndcg@10", "ndcg", 10),
    ("recall@20", "recall@20", "recall", 20),
    ("recall@1", "recall@1", "recall", 1),
    ("precision@3", "precision@3", "precision", 3),
    ("hit@1", "hit@1", "hit", 1),
    ("mrr", "mrr", "rr", 10),
    ("MRR", "mrr", "rr", 10),
    ("mrr@5", "rr@5", "rr", 5),
    ("R@10", "recall@10", "recall", 10),
    ("nDCG@10", "ndcg@10", "ndcg", 10),
    ("nDCG@3", "ndcg@3", "ndcg", 3),
    ("RR@10", "mrr", "rr", 10),
    ("RR", "rr", "rr", None),
    ("RR@1000", "rr@1000", "rr", 1000),
    ("P@10", "precision@10", "precision", 10),
    ("Success@10", "hit@10", "hit", 10),
    ("NDCG@10", "ndcg@10", "ndcg", 10),   # case-insensitive
    (" recall@5 ", "recall@5", "recall", 5),  # as split from "a, b"
    # the ir_measures spellings
    ("AP@100", "ap@100", "ap", 100), ("nDCG@20", "ndcg@20", "ndcg", 20), ("R@1000", "recall@1000", "recall", 1000),
    ("P@5", "precision@5", "precision", 5), ("JUDGED@10", "judged@10", "judged", 10), ("Bpref", "bpref", "bpref", None),
    ("Rprec", "rprec", "rprec", None), ("AP", "ap", "ap", None), ("nDCG", "ndcg", "ndcg", None),
    # the trec_eval spellings
    ("map_cut_100", "ap@100", "ap", 100), ("ndcg_cut_20", "ndcg@20", "ndcg", 20),
    ("recall_1000", "recall@1000", "recall", 1000), ("recip_rank", "rr", "rr", None),
    ("P_5", "precision@5", "precision", 5), ("P.5", "precision@5", "precision", 5), ("bpref", "bpref", "bpref", None),
    ("map", "ap", "ap", None), ("ndcg", "ndcg", "ndcg", None), ("success_1", "hit@1", "hit", 1),
    # options: condensed (trec_eval -J, ir_measures judged_only) and rel (trec_eval -l)
    ("nDCG(judged_only=True)@10", "ndcg@10(condensed)", "ndcg", 10),
    ("ndcg@10(condensed)", "ndcg@10(condensed)", "ndcg", 10),
    ("ndcg(condensed)@10", "ndcg@10(condensed)", "ndcg", 10),
    ("AP(rel=2)@100", "ap@100(rel=2)", "ap", 100),
    ("ap@100(rel=2, condensed)", "ap@100(condensed,rel=2)", "ap", 100),
    ("P(judged_only=False)@5", "precision@5", "precision", 5),
    ("RR(rel=1)@10", "mrr", "rr", 10),
])
def test_parse_metric_spellings(spelling, name, family, cutoff):
    measure = parse_metric(spelling)
    assert (measure.name, measure.family, measure.cutoff) == (name, family, cutoff)
    assert parse_metric(measure.name) == measure  # the canonical name parses back to itself
    if FAMILIES[family].ir_measures_differs is None:  # judged: ir_measures' spelling is refused
        assert parse_metric(ir_measures_name(measure)) == measure


def test_parsed_metric_with_a_new_cutoff_computes_at_that_cutoff():
    ranked = TEN_MISSES + ["a"]
    assert parse_metric("recall@11").compute(ranked, {"a": 1}) == 1.0   # a at rank 11
    assert parse_metric("R@10").compute(ranked, {"a": 1}) == 0.0
    assert parse_metric("RR@11").compute(ranked, {"a": 1}) == pytest.approx(1 / 11)


def test_metrics_compare_by_name_family_cutoff():
    assert parse_metric("recall@20") == parse_metric("R@20")
    assert hash(parse_metric("recall@20")) == hash(parse_metric("R@20"))
    assert parse_metric("recall@20") != parse_metric("recall@21")
    assert parse_metric("ap@10") != parse_metric("ap@10(condensed)") != parse_metric("ap@10(rel=2)")


@pytest.mark.parametrize("bad", ["", "ndcg@", "@10", "ndcg@0", "ndcg@-1", "ndcg@1.5",
                                 "ndcg@10x", "mapp@10", "ndcg @ 10", "mrr10", "P", "recall", "Judged",
                                 "ndcg@1234567890", "ndcg_10", "P_0", "R(rel=0)@10", "nDCG(rel=2)@10",
                                 "P(judged_only=yes)@5", "P@5(fast)", "ndcg@10(condensed", None, 10])
def test_unknown_metric_is_a_value_error(bad):
    with pytest.raises(ValueError) as caught:
        parse_metric(bad)
    assert "\n" not in str(caught.value)


def test_unknown_family_message_lists_every_family_from_the_registry(monkeypatch):
    with pytest.raises(ValueError) as caught:
        parse_metric("mapp@10")
    for family in FAMILIES.values():
        assert family.name in str(caught.value)
        if family.ir_measures:
            assert (family.ir_measures in str(caught.value)) == (family.ir_measures_differs is None)
    # The list is read from FAMILIES, never typed by hand.
    monkeypatch.setitem(FAMILIES, "zzfamily", Family("zzfamily", FAMILIES["recall"].function, "ZZ", (None, None)))
    with pytest.raises(ValueError, match="zzfamily"):
        parse_metric("mapp@10")
    assert parse_metric("ZZ@3").name == "zzfamily@3"


def test_a_cutoff_is_required_where_the_family_has_no_full_depth():
    with pytest.raises(ValueError, match="precision needs a cutoff"):
        parse_metric("P")


@pytest.mark.parametrize("name", ["Judged@10", "Judged@5", " Judged(judged_only=False)@10"])
def test_ir_measures_judged_spelling_is_refused_because_its_number_differs(name):
    """docs/sets.md, "Which trec_eval the measures follow": `Judged@k` is ir_measures' spelling of another number (see the hand case below);
    read as ours it would have gated something its writer did not mean. Ours is judged@k."""
    with pytest.raises(ValueError) as caught:
        parse_metric(name)
    message = str(caught.value)
    assert message.startswith(f"metric {name!r}: ir_measures' Judged@k divides by the number retrieved")
    assert message.endswith("write judged@K for the harness's measure") and "\n" not in message
    assert parse_metric(name.replace("Judged", "judged")).family == "judged"
    assert not any(example.startswith("Judged") for example in example_names())


def test_judged_at_k_hand_case_where_ir_measures_would_differ():
    # 4 retrieved of k = 10: a (grade 1), x (grade -1: unjudged to trec_eval and to us), b (0), zz (absent).
    judgments = {"a": 1, "x": -1, "b": 0}
    value = parse_metric("judged@10").compute(["a", "x", "b", "zz"], judgments)
    assert value == 2 / 10  # a and b judged, divided by k (ir_measures: 3 / 4, x counted, divided by 4)


def example_names() -> list[str]:
    """Every example spelling `python -m harness metrics` lists (family_table's examples column)."""
    return [name for row in family_table() for name in row["examples"].split(", ")]


def test_the_examples_list_every_family_in_every_spelling_and_all_parse():
    names = example_names()
    for alias in ("R@10", "P@10", "RR@10", "RR", "nDCG@10", "Success@10", "mrr", "AP@10", "map_cut_10",
                  "recip_rank", "bpref", "Rprec", "judged@10", "ndcg_cut_10", "P_10", "recall_10"):
        assert alias in names
    assert len(names) == len(set(names))
    families = set()
    for name in names:
        families.add(parse_metric(name).family)  # everything listed is accepted
    assert families == set(FAMILIES)


def test_family_table_has_one_row_per_family_with_its_definition():
    rows = family_table()
    assert [row["family"] for row in rows] == list(FAMILIES)
    for row in rows:
        if FAMILIES[row["family"]].nullable:  # an evidence figure says when a query's value is null
            assert "null" in row["definition"]
        else:
            assert "trec_eval" in row["definition"] or "ir_measures" in row["definition"]
        for example in row["examples"].split(", "):
            assert parse_metric(example).family == row["family"]


@pytest.mark.parametrize("module", [metrics, measures])
def test_module_imports_only_the_standard_library(module):
    with open(module.__file__, encoding="utf-8") as handle:
        source = handle.read()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            roots = [(node.module or "").split(".")[0]]
        else:
            continue
        for root in roots:
            assert root in sys.stdlib_module_names or root in ("__future__", "harness"), root


def test_float_grades_read_like_the_integers_they_equal():
    # A C-level comparison such as (0).__le__ answers NotImplemented (truthy) for floats.
    names = [name for name, _ in NEW_FAMILIES]
    as_floats = {doc: float(grade) for doc, grade in GRADES.items()}
    assert compute_many(names, RANKED, as_floats) == compute_many(names, RANKED, GRADES)


def test_condensed_at_a_cutoff_condenses_first_then_cuts_as_docs_sets_md_says():
    """docs/sets.md, "Which trec_eval the measures follow": u1 u2 r (u unjudged, r relevant). Condensed, the cutoff counts
    judged positions: RR@2(condensed) = 1.0, what trec_eval -M 2 gives on the run without its
    unjudged lines. trec_eval -M 2 -J cuts first (u1 u2), then condenses: nothing left, 0.0, which
    is our uncondensed RR@2 here."""
    judgments = {"r": 1, "j": 0}
    assert parse_metric("rr@2(condensed)").compute(["u1", "u2", "r"], judgments) == 1.0
    assert parse_metric("rr@2").compute(["r"], judgments) == 1.0          # unjudged lines dropped, -M 2
    assert parse_metric("rr@2").compute(["u1", "u2", "r"], judgments) == 0.0  # -M 2 (and -M 2 -J)
    # no unjudged document in the top k: the two compositions agree
    assert parse_metric("rr@2(condensed)").compute(["j", "r", "u1"], judgments) == 0.5 == \
        parse_metric("rr@2").compute(["j", "r", "u1"], judgments)


@pytest.mark.parametrize("scores, expected", [
    # a and c tie at 3 (ints are numbers too): trec_eval puts the later docno, c, first
    ({"a": 3, "b": 2.5, "c": 3}, 0.5),
    # beyond single range both read as +inf, as C's cast gives: a tie again, b before a
    ({"a": 1e39, "b": 1e40, "c": 1.0}, 0.5),
    # -1e39 reads as -inf, below c: a first
    ({"a": 1e39, "b": -1e39, "c": 1.0}, 1.0),
])
def test_from_scores_reads_scores_as_trec_eval_does_even_beyond_single_range(scores, expected):
    # RR of the one relevant document a, by hand from trec_eval's order (single precision, docno descending).
    assert compute_from_scores(("rr",), scores, {"a": 1}) == {"rr": expected}
    assert compute_many(("rr",), trec_eval_order(scores), {"a": 1}) == {"rr": expected}


@pytest.mark.parametrize("scores", [{"a": "high", "b": 1.0}, {"a": "high", "b": "low"}])
def test_from_scores_refuses_a_score_that_is_not_a_number(scores):
    with pytest.raises(TypeError):
        compute_from_scores(("rr",), scores, {"a": 1})
