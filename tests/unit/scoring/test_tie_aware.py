"""Tie-aware measures (harness/scoring/ties.py): each one's expected value over every order of tied
documents, checked against brute-force enumeration of all those orders (the ordinary measure on each
order, averaged with exact fractions), plus hand-computed values and the option's spelling."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest

from harness.scoring.metrics import compute_many, compute_from_scores, parse_metric
from harness.scoring.ties import EXPECTED, score_runs

FAMILIES_AT = ["recall@10", "precision@10", "hit@10", "mrr", "ndcg@10", "recall@3", "precision@5", "hit@2",
               "ndcg@4", "rr", "ndcg", "rprec", "rprec@3", "recall@10(rel=2)", "ndcg@5(condensed)",
               "precision@4(condensed)", "rr@3(condensed)"]


def brute_force(name: str, ids: list[str], scores: list[float], judgments: dict[str, int]) -> Fraction:
    """The ordinary measure's mean over every order of each run of equal scores (all equally likely)."""
    runs = [list(group) for _, group in itertools.groupby(range(len(ids)), key=lambda i: scores[i])]
    orders = [list(itertools.permutations([ids[i] for i in run])) for run in runs]
    total, count = Fraction(0), 0
    for choice in itertools.product(*orders):
        ranking = [doc_id for part in choice for doc_id in part]
        total += Fraction(compute_many((name,), ranking, judgments)[name])
        count += 1
    return total / count


def random_query(rng: random.Random) -> tuple[list[str], list[float], dict[str, int]]:
    """Up to 12 ids in runs of equal scores (at most 5 per run, so enumeration stays small), graded judgments
    (some unjudged, some judged non-relevant, some relevant documents never retrieved)."""
    ids, scores, score = [], [], 100.0
    while len(ids) < rng.randint(1, 12):
        for _ in range(rng.choice([1, 1, 2, 3, 4, 5])):
            ids.append(f"d{len(ids):02d}")
            scores.append(score)
        score -= rng.choice([0.5, 1.0])
    judgments = {doc_id: rng.choice([-1, 0, 0, 1, 1, 2]) for doc_id in ids if rng.random() < 0.7}
    for extra in range(rng.randint(0, 2)):
        judgments[f"missing-{extra}"] = rng.choice([1, 2])
    return ids, scores, judgments


@pytest.mark.parametrize("seed", range(60))
def test_every_tie_aware_measure_is_the_mean_over_all_tie_orders(seed):
    rng = random.Random(seed)
    ids, scores, judgments = random_query(rng)
    for name in FAMILIES_AT:
        tie_name = parse_metric(name.replace("(", "(ties,") if "(" in name else name + "(ties)").name
        got = compute_many((tie_name,), ids, judgments, scores=scores)[tie_name]
        assert got == pytest.approx(float(brute_force(name, ids, scores, judgments)), abs=1e-12), (name, ids, scores,
                                                                                                   judgments)


def test_hand_computed_values_of_one_tie_of_eleven():
    ids = [f"d{i}" for i in range(1, 12)]
    scores = [1.0] * 11
    judgments = {"d11": 1}
    got = compute_many(("recall@10(ties)", "hit@10(ties)", "mrr(ties)", "precision@10(ties)", "ndcg@10(ties)"),
                       ids, judgments, scores=scores)
    assert got["recall@10(ties)"] == pytest.approx(10 / 11)          # the relevant one is in the top 10 in 10 of 11 places
    assert got["hit@10(ties)"] == pytest.approx(10 / 11)
    assert got["rr@10(ties)"] == pytest.approx(sum(1 / p for p in range(1, 11)) / 11)  # H_10 / 11
    assert got["precision@10(ties)"] == pytest.approx(1 / 11)        # (10/11) / 10
    # each of the 11 places equally likely: the mean of the discounts 1/log2(p+1) of positions 1-10, / 11 * 11 ...
    import math
    assert got["ndcg@10(ties)"] == pytest.approx(sum(1 / math.log2(p + 1) for p in range(1, 11)) / 11)
    # the relevant one 10th or 11th: the same expectation (the order inside the tie does not count)
    moved = compute_many(("recall@10(ties)",), ids[:9] + [ids[10], ids[9]], judgments, scores=scores)
    assert moved["recall@10(ties)"] == got["recall@10(ties)"]


def test_without_ties_or_scores_the_value_is_the_ordinary_one_to_the_bit():
    ids = [f"d{i}" for i in range(12)]
    judgments = {"d0": 2, "d4": 1, "d11": 1, "d7": 0}
    plain = compute_many(("recall@10", "ndcg@10", "mrr"), ids, judgments)
    for scores in (None, [float(20 - i) for i in range(12)]):
        tied = compute_many(("recall@10(ties)", "ndcg@10(ties)", "mrr(ties)"), ids, judgments, scores=scores)
        assert (tied["recall@10(ties)"], tied["ndcg@10(ties)"], tied["rr@10(ties)"]) == (
            plain["recall@10"], plain["ndcg@10"], plain["mrr"])


def test_scores_given_as_a_run_are_scored_in_trec_eval_order():
    scores = {f"d{i}": 1.0 for i in range(11)}
    got = compute_from_scores(("recall@10(ties)",), scores, {"d0": 1})  # d0 is last in docno-descending order
    assert got["recall@10(ties)"] == pytest.approx(10 / 11)


def test_spelling_and_refusals():
    assert parse_metric("recall@10(ties)").tie_aware
    assert parse_metric("nDCG@10(ties)").name == "ndcg@10(ties)"
    assert parse_metric("ndcg@10(condensed,ties)").name == "ndcg@10(condensed,ties)"
    assert not parse_metric("recall@10").tie_aware
    with pytest.raises(ValueError, match="ap: takes no ties option"):
        parse_metric("ap@100(ties)")
    assert set(EXPECTED) == {"recall", "precision", "hit", "rr", "ndcg", "rprec"}


def test_score_runs():
    assert score_runs([3.0, 3.0, 2.0, 1.0, 1.0, 1.0], 6) == [(1, 2), (3, 3), (4, 6)]
    assert score_runs(None, 3) == [(1, 1), (2, 2), (3, 3)]
    assert score_runs([], 0) == []
