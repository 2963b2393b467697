"""Hand-computed tables for harness.scoring.metrics: each expected value shows its arithmetic."""

from __future__ import annotations

import ast
import math
import sys
from types import MappingProxyType

import pytest

from harness.scoring import metrics
from harness.scoring.metrics import (
    DEFAULT_METRICS, FAMILIES, METRICS, Family, hit, metric_names, ndcg, parse_metric,
    percentile, precision, recall, reciprocal_rank,
)

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

FUNCTIONS = {"ndcg": ndcg, "recall": recall, "precision": precision,
             "mrr": reciprocal_rank, "hit": hit}


@pytest.mark.parametrize(("ranked", "grades", "k", "expected"),
                         [case[1:] for case in TABLE], ids=[case[0] for case in TABLE])
def test_hand_computed_table(ranked, grades, k, expected):
    got = {name: FUNCTIONS[name](ranked, grades, k) for name in expected}
    assert got == pytest.approx(expected, abs=1e-12)


def test_hand_computed_ndcg_values_spelled_out():
    # The same graded case as the table, with the decimals written down as a second check:
    # 2.5 / (3 + 1.2618595071429148 + 0.5) = 2.5 / 4.761859507142915 = 0.5250051...
    assert ndcg(["c", "x", "a"], {"a": 3, "b": 2, "c": 1}, 10) == pytest.approx(0.525005, abs=1e-6)
    # rank 10: 1/log2(11) = 1/3.4594316186 = 0.2890648...
    assert ndcg(TEN_MISSES[:9] + ["a"], {"a": 1}, 10) == pytest.approx(0.289065, abs=1e-6)


def test_mrr_defaults_to_a_cutoff_of_ten():
    # First relevant at rank 10 -> 1/10; at rank 11 -> 0 (outside the top 10).
    assert reciprocal_rank(TEN_MISSES[:9] + ["a"], {"a": 1}) == pytest.approx(0.1)
    assert reciprocal_rank(TEN_MISSES + ["a"], {"a": 1}) == 0.0


def test_recall_over_judged_relevant_only():
    # Three judged docs, one of grade 0: recall@1 of [b] = 1 relevant found / 2 relevant.
    assert recall(["b"], {"a": 1, "b": 2, "c": 0}, 1) == pytest.approx(1 / 2)


def test_inputs_are_not_mutated_and_any_sequence_or_mapping_works():
    ranked = ["c", "x", "a"]
    grades = {"a": 3, "b": 2, "c": 1}
    before = (list(ranked), dict(grades))
    for function in FUNCTIONS.values():
        function(ranked, grades, 2)
    assert (ranked, grades) == before
    frozen = MappingProxyType(dict(grades))
    assert ndcg(tuple(ranked), frozen, 10) == ndcg(ranked, grades, 10)
    assert recall(tuple(ranked), frozen, 10) == pytest.approx(2 / 3)


@pytest.mark.parametrize("bad_k", [0, -1, True, 1.5, "10", None])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_bad_cutoff_is_a_value_error(name, bad_k):
    with pytest.raises(ValueError, match="cutoff"):
        FUNCTIONS[name](["a"], {"a": 1}, bad_k)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_bare_string_is_not_a_ranking(name):
    # "abc" would otherwise be read as the ranking ["a", "b", "c"].
    with pytest.raises(TypeError, match="not a string"):
        FUNCTIONS[name]("abc", {"a": 1}, 10)


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

def test_registry_holds_the_required_metrics():
    for name in ("recall@5", "recall@10", "precision@10", "mrr@10", "mrr", "ndcg@10", "hit@10"):
        assert name in METRICS
    assert METRICS["mrr"] is METRICS["mrr@10"]
    assert DEFAULT_METRICS == ("recall@5", "recall@10", "mrr", "ndcg@10")
    for key, metric in METRICS.items():
        assert parse_metric(key) is metric


def test_registry_metrics_compute_their_family_at_their_cutoff():
    ranked, grades = ["c", "x", "a", "b"], {"a": 3, "b": 2, "c": 1}
    for metric in METRICS.values():
        function = FAMILIES[metric.family].function
        assert metric.compute(ranked, grades) == function(ranked, grades, metric.cutoff)
    # mrr@10 on a relevant doc at rank 11 is 0: the cutoff is bound.
    assert METRICS["mrr"].compute(TEN_MISSES + ["a"], {"a": 1}) == 0.0


@pytest.mark.parametrize(("spelling", "name", "family", "cutoff"), [
    ("ndcg@10", "ndcg@10", "ndcg", 10),
    ("recall@20", "recall@20", "recall", 20),
    ("recall@1", "recall@1", "recall", 1),
    ("precision@3", "precision@3", "precision", 3),
    ("hit@1", "hit@1", "hit", 1),
    ("mrr", "mrr@10", "mrr", 10),
    ("mrr@5", "mrr@5", "mrr", 5),
    ("R@10", "recall@10", "recall", 10),
    ("nDCG@10", "ndcg@10", "ndcg", 10),
    ("nDCG@3", "ndcg@3", "ndcg", 3),
    ("RR@10", "mrr@10", "mrr", 10),
    ("RR", "mrr@10", "mrr", 10),
    ("P@10", "precision@10", "precision", 10),
    ("Success@10", "hit@10", "hit", 10),
    ("NDCG@10", "ndcg@10", "ndcg", 10),   # case-insensitive
    (" recall@5 ", "recall@5", "recall", 5),  # as split from "a, b"
])
def test_parse_metric_spellings(spelling, name, family, cutoff):
    metric = parse_metric(spelling)
    assert (metric.name, metric.family, metric.cutoff) == (name, family, cutoff)


def test_parsed_metric_with_a_new_cutoff_computes_at_that_cutoff():
    ranked = TEN_MISSES + ["a"]
    assert parse_metric("recall@11").compute(ranked, {"a": 1}) == 1.0   # a at rank 11
    assert parse_metric("R@10").compute(ranked, {"a": 1}) == 0.0
    assert parse_metric("RR@11").compute(ranked, {"a": 1}) == pytest.approx(1 / 11)


def test_metrics_compare_by_name_family_cutoff():
    assert parse_metric("recall@20") == parse_metric("R@20")
    assert hash(parse_metric("recall@20")) == hash(parse_metric("R@20"))
    assert parse_metric("recall@20") != parse_metric("recall@21")


@pytest.mark.parametrize("bad", ["", "ndcg", "ndcg@", "@10", "ndcg@0", "ndcg@-1", "ndcg@1.5",
                                 "ndcg@10x", "map@10", "R(rel=2)@10", "ndcg @ 10", "mrr10",
                                 "ndcg@1234567890", None, 10])
def test_unknown_metric_is_a_value_error_listing_the_families(bad):
    with pytest.raises(ValueError) as caught:
        parse_metric(bad)
    message = str(caught.value)
    assert "\n" not in message
    if isinstance(bad, str) and bad != "ndcg@0":  # ndcg@0 gets "cutoff must be >= 1"
        for family in FAMILIES:
            assert family in message


def test_error_message_follows_the_registry(monkeypatch):
    # The list of valid families is read from FAMILIES, never typed by hand.
    monkeypatch.setitem(FAMILIES, "zzfamily", Family("zzfamily", recall, "test only", "ZZ"))
    with pytest.raises(ValueError, match="zzfamily"):
        parse_metric("map@10")


def test_metric_names_lists_every_registered_name_and_its_ir_measures_spelling():
    names = metric_names()
    assert set(METRICS) <= set(names)
    for alias in ("R@5", "R@10", "P@10", "RR@10", "RR", "nDCG@10", "Success@10"):
        assert alias in names
    assert len(names) == len(set(names))
    for name in names:
        parse_metric(name)  # everything listed is accepted


def test_module_imports_only_the_standard_library():
    with open(metrics.__file__, encoding="utf-8") as handle:
        source = handle.read()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            roots = [(node.module or "").split(".")[0]]
        else:
            continue
        for root in roots:
            assert root in sys.stdlib_module_names or root == "__future__", root
