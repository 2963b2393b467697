"""Tie-aware measures: a measure's expected value over every order of the documents an adapter scored equally, exact.

McSherry & Najork (2008), "Computing information retrieval performance measures efficiently in
the presence of tied scores" (ECIR): when documents share a score, the order between them is the
adapter's choice, not its scores'; the tie-aware value of a measure is its mean over all the
orders of each run of equal scores, each order equally likely, computed in closed form rather
than by enumerating the orders. `recall@10(ties)` is recall@10 so scored (metrics.parse_metric
reads the `ties` option; a gate policy's `tie_aware` turns it on for every gated metric).

Every function here is `f(ranking, runs, cutoff) -> float` over one query's Ranking
(harness.scoring.measures) and its `runs`: the maximal runs of equal scores as (first, last)
1-based positions, singletons included, covering the ranking (`score_runs`). With no run longer
than one position the value is the ordinary measure's (the caller uses the ordinary function).
Only the returned list is known: a run reaching the end of the list may go on beyond it unseen.

Per run of n positions [a, b] holding r relevant documents (grade >= the relevance level), with
m = the run's positions within the cutoff:
- relevant expected in the top k = sum over runs of r * m / n (each relevant document is at each
  of the run's positions with probability 1/n): precision, recall and R-precision are linear in it;
- hit: the first run holding a relevant document decides: 1 - C(n - r, m) / C(n, m);
- rr: in that run the first relevant document is at offset j with probability
  C(n - j, r - 1) / C(n, r), giving 1 / (a + j - 1) when within the cutoff;
- nDCG: each relevant document's gain times the mean discount of its run's positions within
  the cutoff (the ideal DCG does not depend on the order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import groupby, takewhile
from math import comb
from typing import Any

from harness.scoring.measures import Ranking, discount_table, ideal_dcg

Runs = Sequence[tuple[int, int]]
# f(ranking, runs, cutoff): the cutoff an int, or None for a family whose cutoff is optional (as FamilyFunction).
TieFunction = Callable[[Ranking, Runs, Any], float]


def score_runs(scores: Sequence[float] | None, length: int) -> list[tuple[int, int]]:
    """The maximal runs of equal scores over positions 1..length, as (first, last) 1-based positions.

    Scores are compared exactly, as the adapter returned them (`tied` in reports counts the same
    equalities). Without scores, or with scores not one per position, every position is its own run.
    """
    if scores is None or len(scores) != length:
        return [(position, position) for position in range(1, length + 1)]
    runs: list[tuple[int, int]] = []
    for _, run in groupby(scores):
        start = runs[-1][1] + 1 if runs else 1
        runs.append((start, start + len(list(run)) - 1))
    return runs


def tied(runs: Runs) -> bool:
    """Whether any run holds more than one position (else the ordinary measure is the expectation)."""
    return any(last > first for first, last in runs)


def _relevant_in(ranking: Ranking, first: int, last: int) -> int:
    level = ranking.level
    return sum(1 for grade in ranking.grades[first - 1:last] if grade >= level)


def _within(first: int, last: int, cutoff: int | None) -> int:
    """How many of the run's positions lie within the cutoff (None: all)."""
    return last - first + 1 if cutoff is None else max(0, min(last, cutoff) - first + 1)


def _reaching(runs: Runs, cutoff: int | None) -> Iterator[tuple[int, int]]:
    """The runs that start within the cutoff (None: all)."""
    return takewhile(lambda run: cutoff is None or run[0] <= cutoff, runs)


def expected_found(ranking: Ranking, runs: Runs, cutoff: int | None) -> float:
    """Relevant documents expected in the top `cutoff`: sum over runs of r * m / n."""
    return sum(_relevant_in(ranking, first, last) * _within(first, last, cutoff) / (last - first + 1)
               for first, last in _reaching(runs, cutoff))


def precision(ranking: Ranking, runs: Runs, k: int) -> float:
    """E[P@k] = relevant expected in the top k / k."""
    return expected_found(ranking, runs, k) / k


def recall(ranking: Ranking, runs: Runs, k: int) -> float:
    """E[R@k] = relevant expected in the top k / R (0 when R is 0)."""
    total = ranking.relevant_count
    return expected_found(ranking, runs, k) / total if total else 0.0


def r_precision(ranking: Ranking, runs: Runs, k: int | None) -> float:
    """E[Rprec] = relevant expected in the top min(R, k) / R."""
    total = ranking.relevant_count
    if not total:
        return 0.0
    return expected_found(ranking, runs, total if k is None else min(total, k)) / total


def hit(ranking: Ranking, runs: Runs, k: int) -> float:
    """E[Success@k] = 1 - C(n - r, m) / C(n, m) for the first run holding a relevant document."""
    for first, last in _reaching(runs, k):
        relevant = _relevant_in(ranking, first, last)
        if relevant:
            n, m = last - first + 1, _within(first, last, k)
            return 1 - comb(n - relevant, m) / comb(n, m)
    return 0.0


def reciprocal_rank(ranking: Ranking, runs: Runs, k: int | None) -> float:
    """E[RR@k] = sum over offsets j of C(n - j, r - 1) / C(n, r) / (a + j - 1), first relevant run [a, b]."""
    for first, last in _reaching(runs, k):
        relevant = _relevant_in(ranking, first, last)
        if relevant:
            n = last - first + 1
            orders = comb(n, relevant)
            return sum(comb(n - offset, relevant - 1) / orders / (first + offset - 1)
                       for offset in range(1, n - relevant + 2) if k is None or first + offset - 1 <= k)
    return 0.0


def ndcg(ranking: Ranking, runs: Runs, k: int | None) -> float:
    """E[nDCG@k] = sum over runs of the run's gains * the mean discount of its positions within k, / ideal DCG."""
    ideal = ideal_dcg(ranking, k)
    if ideal == 0:
        return 0.0
    discounts = discount_table(len(ranking.grades))
    level, grades = ranking.level, ranking.grades
    expected = 0.0
    for first, last in _reaching(runs, k):
        gains = sum(grade for grade in grades[first - 1:last] if grade >= level)
        if gains:
            expected += gains * sum(discounts[first:min(last, k if k is not None else last) + 1]) / (last - first + 1)
    return expected / ideal


# The families with a tie-aware value, by family name (harness.scoring.measures.FAMILIES); a
# measure of any other family refuses the `ties` option.
EXPECTED: dict[str, TieFunction] = {
    "recall": recall, "precision": precision, "hit": hit, "rr": reciprocal_rank, "ndcg": ndcg,
    "rprec": r_precision,
}
