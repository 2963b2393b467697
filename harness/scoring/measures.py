"""The measure families (trec_eval definitions): one pure function each over a query's Ranking, declared once in FAMILIES."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from itertools import compress, count, islice, repeat
from functools import partial
from operator import le, mul, truediv

# A document is relevant when its grade is at least this (trec_eval's default relevance
# level, `-l 1`): grade 0 is judged non-relevant.
RELEVANCE_LEVEL = 1

# The grade an unjudged id reads as. trec_eval gives an id missing from the qrels
# RELVALUE_NONPOOL (-1) and a negative qrels grade RELVALUE_UNJUDGED (-2, "in the pool
# but not judged"); every measure here treats the two alike, as trec_eval does, so any
# negative grade means "unjudged": never relevant, never judged non-relevant, dropped
# from condensed lists, not counted by judged@k or in bpref's non-relevant pool.
UNJUDGED = -1

# _is_judged(grade) is 0 <= grade, as a C-level callable for map/filter (the bound method
# (0).__le__ would answer NotImplemented, which is truthy, for a float grade).
_is_judged = partial(le, 0)

# Conventions shared by every family function below (each `f(ranking, cutoff) -> float`):
# - `ranking` is one query's Ranking: the grades of the adapter's list, position 1 first.
# - `cutoff` is k (only positions <= k count) or None for the whole ranking (families
#   whose cutoff is optional). FAMILY@k is FAMILY on the ranking cut at k, i.e. trec_eval
#   with `-M k`; for P, recall, success, nDCG and AP that is trec_eval's own P_k,
#   recall_k, success_k, ndcg_cut_k and map_cut_k.
# - A query with no relevant judgment scores 0.0 on every family but judged@k (trec_eval
#   does the same); the evaluator leaves such queries out of the aggregates.


def _discounts(depth: int) -> list[float]:
    """DISCOUNTS[p] = 1 / log2(p + 1), the nDCG discount at position p (index 0 unused)."""
    return [0.0] + [1.0 / math.log2(position + 1) for position in range(1, depth + 1)]


_DISCOUNTS = _discounts(1024)


def discount_table(depth: int) -> list[float]:
    """The nDCG discounts 1 / log2(p + 1), index p, reaching at least position `depth` (index 0 unused);
    the table is grown (once, never shrunk) to reach it."""
    global _DISCOUNTS
    if depth >= len(_DISCOUNTS):
        _DISCOUNTS = _discounts(max(depth, 2 * len(_DISCOUNTS)))
    return _DISCOUNTS


@dataclass(slots=True)
class Ranking:
    """One query's ranking as the families read it; built once per query by `rank`.

    grades    grade at each position (index 0 = position 1), UNJUDGED when not judged
    judged    ascending 1-based positions whose grade >= 0 (judged, relevant or not)
    relevant  ascending 1-based positions whose grade >= level
    relevant_count  R: judged relevant documents, retrieved or not
    judgments, level  the query's judgments and the relevance level in force
    """

    grades: list[int]
    judged: list[int]
    relevant: list[int]
    relevant_count: int
    judgments: Mapping[str, int]
    level: int


def grades_of(ranked_ids: Sequence[str], judgments: Mapping[str, int]) -> tuple[list[int], list[int]]:
    """(grade at each position, ascending positions of the judged ones); a repeated id counts once.

    A repeated id counts at its first position; later copies read as UNJUDGED (positions
    are not renumbered), so they are neither relevant nor judged. trec_eval refuses a run
    with a repeated docno; the protocol rejects one upstream, this rule only makes the
    functions total.
    """
    if isinstance(ranked_ids, str):
        # A bare string is a Sequence[str] of characters: always a caller's mistake.
        raise TypeError("ranked_ids must be a sequence of ids, not a string")
    # Two passes over the list, both in C (map, compress): the cost every query pays.
    grades = list(map(judgments.get, ranked_ids, repeat(UNJUDGED)))
    judged = list(compress(count(1), map(_is_judged, grades)))
    # Only a repeated *judged* id can change a value (an unjudged copy reads as UNJUDGED
    # anyway), so only the few judged ids are checked for repeats.
    if len({ranked_ids[position - 1] for position in judged}) != len(judged):
        seen: set[str] = set()
        for index, doc_id in enumerate(ranked_ids):
            if doc_id in seen and grades[index] >= 0:
                grades[index] = UNJUDGED
            seen.add(doc_id)
        judged = list(compress(count(1), map(_is_judged, grades)))
    return grades, judged


def condense(grades: list[int], judged: list[int]) -> tuple[list[int], list[int]]:
    """Sakai's condensed list: the judged positions only, renumbered (trec_eval `-J`)."""
    kept = [grades[position - 1] for position in judged]
    return kept, list(range(1, len(kept) + 1))


def rank(grades: list[int], judged: list[int], judgments: Mapping[str, int], level: int) -> Ranking:
    """The Ranking of (grades, judged) from grades_of (maybe condensed) at relevance level `level`."""
    relevant = [position for position in judged if grades[position - 1] >= level]
    relevant_count = sum(map(partial(le, level), judgments.values()))
    return Ranking(grades, judged, relevant, relevant_count, judgments, level)


# ---------------------------------------------------------------- the families

def precision(ranking: Ranking, k: int) -> float:
    """P@k = relevant in the top k / k (trec_eval P_k); k even when fewer came back."""
    return bisect_right(ranking.relevant, k) / k


def recall(ranking: Ranking, k: int) -> float:
    """R@k = relevant in the top k / R, R = all judged relevant, retrieved or not (trec_eval recall_k)."""
    total = ranking.relevant_count
    return bisect_right(ranking.relevant, k) / total if total else 0.0


def hit(ranking: Ranking, k: int) -> float:
    """Success@k = 1 if any relevant document is in the top k, else 0 (trec_eval success_k)."""
    relevant = ranking.relevant
    return 1.0 if relevant and relevant[0] <= k else 0.0


def reciprocal_rank(ranking: Ranking, k: int | None) -> float:
    """RR = 1 / position of the first relevant document (within the top k), else 0 (trec_eval recip_rank)."""
    relevant = ranking.relevant
    if relevant and (k is None or relevant[0] <= k):
        return 1.0 / relevant[0]
    return 0.0


def average_precision(ranking: Ranking, k: int | None) -> float:
    """AP = sum over relevant positions p (<= k) of P@p, / R (trec_eval map, map_cut_k)."""
    total = ranking.relevant_count
    if not total:
        return 0.0
    relevant = ranking.relevant if k is None else ranking.relevant[:bisect_right(ranking.relevant, k)]
    # found / position for the found-th relevant document, summed in rank order as trec_eval does.
    return sum(map(truediv, count(1), relevant)) / total


def r_precision(ranking: Ranking, k: int | None) -> float:
    """Rprec = relevant in the top R / R, on the ranking cut at k (trec_eval Rprec)."""
    total = ranking.relevant_count
    if not total:
        return 0.0
    return bisect_right(ranking.relevant, total if k is None else min(total, k)) / total


def ndcg(ranking: Ranking, k: int | None) -> float:
    """nDCG = DCG / ideal DCG, gain = grade, discount 1/log2(p + 1) (trec_eval ndcg, ndcg_cut_k).

    DCG sums over positions p (<= k); the ideal sums every relevant judged grade, retrieved
    or not, sorted descending (cut at k). Ideal 0 gives 0. As in trec_eval, the gain is the
    grade whatever the relevance level, so this family takes no `rel`.
    """
    relevant = ranking.relevant if k is None else ranking.relevant[:bisect_right(ranking.relevant, k)]
    ideal = ideal_dcg(ranking, k)
    if ideal == 0:
        return 0.0
    grades = ranking.grades
    discounts = discount_table(len(grades))
    return sum([grades[position - 1] * discounts[position] for position in relevant]) / ideal


def ideal_dcg(ranking: Ranking, k: int | None) -> float:
    """The ideal DCG of nDCG: every relevant judged grade, retrieved or not, sorted descending, cut at k."""
    ideal_gains = sorted(filter(partial(le, RELEVANCE_LEVEL), ranking.judgments.values()), reverse=True)
    if k is not None:
        ideal_gains = ideal_gains[:k]
    discounts = discount_table(len(ideal_gains))
    # In rank order, as trec_eval sums, so the floating-point result matches it.
    return sum(map(mul, ideal_gains, islice(discounts, 1, None)))


def bpref(ranking: Ranking, k: int | None) -> float:
    """bpref = 1/R * sum over relevant retrieved r of 1 - min(n_r, R) / min(N, R) (trec_eval bpref).

    n_r = judged non-relevant documents ranked above r, N = all judged non-relevant
    documents; unjudged documents are skipped. A relevant r with n_r = 0 adds 1.
    """
    total = ranking.relevant_count
    if not total:
        return 0.0
    level = ranking.level
    judged_nonrelevant = sum(1 for grade in ranking.judgments.values() if 0 <= grade < level)
    denominator = min(judged_nonrelevant, total)
    above = 0
    preferences = 0.0
    grades = ranking.grades
    judged_positions = ranking.judged if k is None else ranking.judged[:bisect_right(ranking.judged, k)]
    for position in judged_positions:  # unjudged documents are skipped
        if grades[position - 1] < level:
            above += 1
        elif above:
            preferences += 1.0 - min(above, total) / denominator
        else:
            preferences += 1.0
    return preferences / total


def judged(ranking: Ranking, k: int) -> float:
    """judged@k = documents in the top k with a judgment (grade >= 0) / k, as P_k divides; not ir_measures' Judged.

    ir_measures' Judged differs in two corners (JUDGED_DIFFERS), so its spelling `Judged@k`
    is refused rather than read as this.
    """
    return bisect_right(ranking.judged, k) / k


# ---------------------------------------------------------------- the registry

JUDGED_DIFFERS = ("ir_measures' Judged@k divides by the number retrieved when fewer than k came back "
                  "and counts a negative grade as a judgment; the harness's judged@k divides by k and "
                  "counts grades >= 0 only")

# A family's function: f(ranking, cutoff) -> float. The cutoff is an int, or None (the whole ranking)
# for a family whose cutoff is optional: make_measure never hands a required-cutoff family None.
FamilyFunction = Callable[[Ranking, Any], float]


@dataclass(frozen=True)
class Family:
    """One measure family and every spelling of it.

    name         our canonical spelling (lower case), the stem of every canonical name
    function     f(ranking, cutoff) -> float; its docstring's first line is the definition.
                 None for the exposed-evidence families: harness/scoring/evidence.py computes
                 them from the windows a backend shows, not from a ranking's grades
    ir_measures  ir_measures' spelling of the family (`nDCG`); None where it has none
    trec_eval    (stem of the cut form, e.g. "ndcg_cut" for ndcg_cut_10; the full-depth
                 name, e.g. "ndcg"); None where trec_eval has no such measure
    aliases      other spellings of ours, e.g. "map" for ap
    cutoff_required  False: no cutoff means the whole ranking (trec_eval's full depth)
    takes_relevance_level  whether `rel=N` changes the value (nDCG, Judged: no)
    ir_measures_differs  why ir_measures' spelling is refused (its number is another one), or None
    nullable     a query's value may be null (unjudgeable): a scope's mean is over the judged
                 queries only, and the measure is read from the query's evidence figures
    lower_is_better  a rise is the loss (the `*_before_current` rates)
    cutoffs      the only cutoffs it takes (None: any k >= 1; empty: none)
    whole_document_twin  also spelled `full_NAME`: the same figure with every hit shown whole
    about        the definition when there is no function to carry it
    """

    name: str
    function: FamilyFunction | None
    ir_measures: str | None
    trec_eval: tuple[str | None, str | None]
    aliases: tuple[str, ...] = ()
    cutoff_required: bool = True
    takes_relevance_level: bool = True
    ir_measures_differs: str | None = None
    nullable: bool = False
    lower_is_better: bool = False
    cutoffs: tuple[int, ...] | None = None
    whole_document_twin: bool = False
    about: str = ""

    @property
    def definition(self) -> str:
        if self.about or self.function is None:
            return self.about
        return (self.function.__doc__ or "").strip().splitlines()[0]


def _evidence(name: str, about: str, *, cutoffs: tuple[int, ...] = (), twin: bool = True,
              lower_is_better: bool = False) -> Family:
    """An exposed-evidence family (docs/sets.md, "Evidence"): null per query when unjudgeable."""
    return Family(name, None, None, (None, None), cutoff_required=bool(cutoffs), takes_relevance_level=False,
                  nullable=True, lower_is_better=lower_is_better, cutoffs=cutoffs, whole_document_twin=twin,
                  about=about)


FAMILIES: dict[str, Family] = {family.name: family for family in (
    Family("recall", recall, "R", ("recall", None)),
    Family("precision", precision, "P", ("P", None)),
    Family("ndcg", ndcg, "nDCG", ("ndcg_cut", "ndcg"), cutoff_required=False, takes_relevance_level=False),
    Family("rr", reciprocal_rank, "RR", (None, "recip_rank"), aliases=("mrr",), cutoff_required=False),
    Family("hit", hit, "Success", ("success", None)),
    Family("ap", average_precision, "AP", ("map_cut", "map"), aliases=("map",), cutoff_required=False),
    Family("rprec", r_precision, "Rprec", (None, "Rprec"), aliases=("r-precision",), cutoff_required=False),
    Family("bpref", bpref, "Bpref", (None, "bpref"), cutoff_required=False),
    Family("judged", judged, "Judged", (None, None), takes_relevance_level=False,
           ir_measures_differs=JUDGED_DIFFERS),
    _evidence("answer_hit", "1 when one of the top k windows exposes current evidence (null: only unjudgeable "
                            "spans exposed)", cutoffs=(1, 5, 10)),
    _evidence("ku", "1 when the first window exposes current evidence (null: only unjudgeable spans exposed)",
              cutoffs=(1,)),
    _evidence("stale_before_current", "1 when a window exposing a stale span ranks above the first exposing "
                                      "current evidence (null: the query has no stale span)", lower_is_better=True),
    _evidence("mixed_before_current", "1 when a window exposing a mixed span ranks above the first exposing "
                                      "current evidence (null: the query has no mixed span)", lower_is_better=True),
    _evidence("canonical_hit", "1 when a canonical page is in the top 10 (null: the query names none)",
              cutoffs=(10,), twin=False),
    _evidence("canonical_mrr", "reciprocal rank of the first canonical page within the top 10 (null: the query "
                               "names none)", twin=False),
)}
# The families computed from a ranking's grades: trec_eval's and ir_measures' measures, cross-checked
# against both (tests/properties); the exposed-evidence families are computed from the windows shown.
RANKING_FAMILIES: dict[str, Family] = {name: family for name, family in FAMILIES.items() if family.function}
