"""Measure names (ours, ir_measures and trec_eval spellings) parsed into Measures, computed in one pass per query; no I/O.

The families and their definitions live in harness.scoring.measures; this module is the
public face: `parse_metric(name) -> Measure`, `Measure.compute(ranked_ids, judgments)`,
`compute_many(measures, ranked_ids, judgments)`, `compute_from_scores(measures, scores,
judgments)`, `trec_eval_order(scores)`, `trec_eval_score(score)`, `family_table()`,
and `percentile`.

Names (case-insensitive, surrounding blanks ignored):
- ours: FAMILY[@K][(OPTIONS)], e.g. `ndcg@10`, `ap@100`, `rr`, `bpref(condensed)`,
  `recall@1000(rel=2)`, `precision@5(condensed,rel=2)`. The canonical `name` of a Measure
  is always in this spelling: options `condensed` and `rel=N` (N != 1) in that order.
- ir_measures: `nDCG@20`, `AP@100`, `R@1000`, `RR`, `P@5`, `Bpref`,
  `nDCG(judged_only=True)@10`, `P(rel=2)@5`. Not `Judged@10`: ir_measures' Judged is another
  number (measures.JUDGED_DIFFERS), so that exact spelling is refused; ours is `judged@10`.
- trec_eval: `ndcg_cut_20`, `map_cut_100`, `recall_1000`, `recip_rank`, `P_5`, `bpref`,
  `Rprec`, `map`, `ndcg`, `success_10` (also with a dot: `P.5`). trec_eval's `-J` and
  `-l N` flags are the `condensed` and `rel=N` options.
- `mrr` with no cutoff is RR@10, the shipped default (the reports' MRR@10), and RR@10's
  canonical name is `mrr`: reports key per-query values by it. A bare `RR` is full depth.
Condensed (Sakai's condensed lists, trec_eval -J): the measure computed after removing
unjudged documents from the ranking, later documents moving up. Ties (`recall@10(ties)`): the
expected value over every order of the documents the adapter scored equally (scoring/ties.py),
from the scores given to `compute_many`.
"""

from __future__ import annotations

import math
import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from struct import error as struct_error, pack, unpack
from typing import Any

from harness.scoring import ties
from harness.scoring.measures import (FAMILIES, RANKING_FAMILIES, RELEVANCE_LEVEL, UNJUDGED, Family,
                                      condense, grades_of, rank)

__all__ = ["DEFINITIONS_VERSION", "FAMILIES", "RANKING_FAMILIES", "RELEVANCE_LEVEL", "Measure", "compute_from_scores", "compute_many",
           "evidence_measure_names", "family_table", "make_measure", "parse_metric", "percentile", "trec_eval_order",
           "tie_aware_measure", "trec_eval_score"]

# Bumped whenever a formula changes the value of an existing canonical name, so reports
# made under different definitions can be told apart (`compare` refuses to mix them:
# docs/compare.md, "Outputs"). Adding families and spellings changes no existing value.
DEFINITIONS_VERSION = 1

# The cutoff the bare name "mrr" carries, and the canonical name of RR at it.
DEFAULT_RR_CUTOFF = 10
DEFAULT_RR_NAME = "mrr"
# The option that scores a measure as its expected value over the orders of tied documents (`recall@10(ties)`).
TIES_OPTION = "ties"


@dataclass(frozen=True, slots=True)
class Measure:
    """One family at one cutoff (None = the whole ranking), condensed or not, at one relevance level;
    for an exposed-evidence family, on the windows shown or (`whole_documents`) every hit shown whole.

    `name` is canonical: two spellings of one measure give equal Measures with equal names.
    """

    name: str
    family: str
    cutoff: int | None
    condensed: bool = False
    relevance_level: int = RELEVANCE_LEVEL
    whole_documents: bool = False
    tie_aware: bool = False  # the expected value over every order of equally scored documents (scoring/ties.py)

    @property
    def nullable(self) -> bool:
        """Whether a query's value may be null (an evidence figure, unjudgeable): means skip the nulls."""
        return FAMILIES[self.family].nullable

    @property
    def lower_is_better(self) -> bool:
        """Whether a rise is the loss (the `*_before_current` rates)."""
        return FAMILIES[self.family].lower_is_better

    def compute(self, ranked_ids: Sequence[str], judgments: Mapping[str, int],
                scores: Sequence[float] | None = None) -> float:
        """This measure for one query: `ranked_ids` position 1 first, `judgments` {doc_id: grade},
        `scores` the adapter's (read by a tie-aware measure only)."""
        return compute_many((self,), ranked_ids, judgments, scores=scores)[self.name]


# An exposed-evidence family's whole-document twin is spelled with this prefix (`full_ku@1`).
WHOLE_DOCUMENT_PREFIX = "full_"


def _canonical_name(family: str, cutoff: int | None, condensed: bool, level: int, whole: bool,
                    tie_aware: bool = False) -> str:
    if family == "rr" and cutoff == DEFAULT_RR_CUTOFF and not condensed and level == RELEVANCE_LEVEL and not tie_aware:
        return DEFAULT_RR_NAME
    options = ((["condensed"] if condensed else []) + ([f"rel={level}"] if level != RELEVANCE_LEVEL else [])
               + ([TIES_OPTION] if tie_aware else []))
    return ((WHOLE_DOCUMENT_PREFIX if whole else "") + family + (f"@{cutoff}" if cutoff is not None else "")
            + (f"({','.join(options)})" if options else ""))


def make_measure(family: str, cutoff: int | None = None, *, condensed: bool = False,
                 relevance_level: int = RELEVANCE_LEVEL, whole_documents: bool = False,
                 tie_aware: bool = False) -> Measure:
    """The Measure of a registered family; ValueError on a cutoff or option it does not take."""
    spec = FAMILIES.get(family)
    if spec is None:
        raise ValueError(f"unknown measure family {family!r}: {_expected()}")
    if cutoff is None and spec.cutoff_required:
        spelled = f", {spec.ir_measures}@K" if spec.ir_measures else ""
        raise ValueError(f"{spec.name} needs a cutoff ({spec.name}@K{spelled})")
    if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1):
        raise ValueError(f"{spec.name}: cutoff must be an integer >= 1, got {cutoff!r}")
    if spec.cutoffs is not None and cutoff is not None and cutoff not in spec.cutoffs:
        allowed = ", ".join(f"@{k}" for k in spec.cutoffs) or "none"
        raise ValueError(f"{spec.name}: cutoff @{cutoff} is not computed; it takes {allowed}")
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int) or relevance_level < 1:
        raise ValueError(f"{spec.name}: rel must be an integer >= 1, got {relevance_level!r}")
    if relevance_level != RELEVANCE_LEVEL and not spec.takes_relevance_level:
        raise ValueError(f"{spec.name}: takes no rel option (its value does not depend on the relevance level)")
    if condensed and spec.nullable:
        raise ValueError(f"{spec.name}: an evidence measure takes no condensed option")
    if whole_documents and not spec.whole_document_twin:
        raise ValueError(f"{spec.name}: has no {WHOLE_DOCUMENT_PREFIX} (whole-document) twin")
    if tie_aware and spec.name not in ties.EXPECTED:
        raise ValueError(f"{spec.name}: takes no {TIES_OPTION} option (its expected value over tie orders is "
                         f"computed for {', '.join(ties.EXPECTED)})")
    return Measure(_canonical_name(spec.name, cutoff, condensed, relevance_level, whole_documents, tie_aware),
                   spec.name, cutoff, bool(condensed), relevance_level, whole_documents, bool(tie_aware))


def tie_aware_measure(measure: Measure) -> Measure:
    """The measure scored as its expected value over the orders of tied documents (itself when it already is)."""
    return make_measure(measure.family, measure.cutoff, condensed=measure.condensed,
                        relevance_level=measure.relevance_level, whole_documents=measure.whole_documents,
                        tie_aware=True)


def evidence_measure_names() -> tuple[str, ...]:
    """Every exposed-evidence measure's canonical name, in the order reports write them: the
    visible-window figures, then their whole-document twins, then the figures without a twin."""
    def names(whole: bool, twin: bool) -> list[str]:
        return [make_measure(family.name, cutoff, whole_documents=whole).name
                for family in FAMILIES.values() if family.nullable and family.whole_document_twin == twin
                for cutoff in (family.cutoffs or (None,))]
    return tuple(names(False, True) + names(True, True) + names(False, False))


# ---------------------------------------------------------------- parsing

def _spellings() -> dict[str, str]:
    """Lower-cased family spelling (ours, aliases, ir_measures) -> family name."""
    return {spelling.lower(): family.name for family in FAMILIES.values()
            for spelling in (family.name, family.ir_measures, *family.aliases) if spelling}


def _trec_eval_spellings() -> tuple[dict[str, str], dict[str, str]]:
    """(lower-cased cut stem -> family, lower-cased full-depth name -> family)."""
    cut = {family.trec_eval[0].lower(): family.name for family in FAMILIES.values() if family.trec_eval[0]}
    whole = {family.trec_eval[1].lower(): family.name for family in FAMILIES.values() if family.trec_eval[1]}
    return cut, whole


_OPTIONS = r"(?:\((?P<{}>[^()]*)\))?"
_OURS = re.compile(r"(?P<family>[a-z][a-z_-]*)" + _OPTIONS.format("before")
                   + r"(?:@(?P<cutoff>[0-9]{1,9}))?" + _OPTIONS.format("after"))
_TREC = re.compile(r"(?P<stem>[a-z][a-z_]*?)[_.](?P<cutoff>[0-9]{1,9})")


def parse_metric(name: str) -> Measure:
    """The Measure a name means, in any of the three spellings (see the module docstring).

    Anything else raises ValueError (one line) listing the families from the registry.
    """
    if not isinstance(name, str):
        raise ValueError(f"metric name must be a string, got {name!r}")
    return _parse(name)


@lru_cache(maxsize=1024)  # Measures are immutable; callers parse the same few names per query
def _parse(name: str) -> Measure:
    text = name.strip().lower()
    cut, full = _trec_eval_spellings()
    if text in full and text not in _spellings():  # recip_rank; map, ndcg, bpref are ours too
        return make_measure(full[text])
    trec = _TREC.fullmatch(text)
    if trec and trec.group("stem") in cut:
        return _with_options(name, cut[trec.group("stem")], int(trec.group("cutoff")), "")
    match = _OURS.fullmatch(text)
    spelled = match.group("family") if match else ""
    family = _spellings().get(spelled)
    whole = family is None and spelled.startswith(WHOLE_DOCUMENT_PREFIX)
    if whole:
        family = _spellings().get(spelled.removeprefix(WHOLE_DOCUMENT_PREFIX))
    if match is None or family is None:
        raise ValueError(f"unknown metric {name!r}: {_expected()}")
    spec = FAMILIES[family]
    written = name.strip()[match.start("family"):match.end("family")]
    if spec.ir_measures_differs and written == spec.ir_measures:  # ir_measures' exact spelling, another number
        raise ValueError(f"metric {name!r}: {spec.ir_measures_differs}; write {spec.name}@K for the harness's "
                         f"measure")
    options = ",".join(part for part in (match.group("before"), match.group("after")) if part)
    cutoff = match.group("cutoff")
    if cutoff is None and match.group("family") == DEFAULT_RR_NAME:
        cutoff = DEFAULT_RR_CUTOFF  # a bare mrr is MRR@10, as reports have always meant it
    return _with_options(name, family, int(cutoff) if cutoff is not None else None, options, whole)


def _with_options(name: str, family: str, cutoff: int | None, options: str, whole: bool = False) -> Measure:
    condensed, level, tie_aware = False, RELEVANCE_LEVEL, False
    for option in (part.strip() for part in options.split(",") if part.strip()):
        key, _, value = (piece.strip() for piece in option.partition("="))
        if key == "condensed" and not value:
            condensed = True
        elif key == "judged_only" and value in ("true", "false"):
            condensed = value == "true"
        elif key == "rel" and value.isdigit():
            level = int(value)
        elif key == TIES_OPTION and not value:
            tie_aware = True
        else:
            raise ValueError(f"metric {name!r}: unknown option {option!r}; expected condensed, "
                             f"judged_only=True|False, rel=N or {TIES_OPTION}")
    try:
        return make_measure(family, cutoff, condensed=condensed, relevance_level=level, whole_documents=whole,
                            tie_aware=tie_aware)
    except ValueError as exc:
        raise ValueError(f"metric {name!r}: {exc}") from None


def _expected() -> str:
    families = ", ".join(family.name + ("" if family.ir_measures_differs or not family.ir_measures
                                        else f" ({family.ir_measures})") for family in FAMILIES.values())
    trec = ", ".join(name for family in FAMILIES.values() for name in
                     ((f"{family.trec_eval[0]}_K" if family.trec_eval[0] else None), family.trec_eval[1]) if name)
    return (f"expected FAMILY[@K][(condensed,rel=N)] with FAMILY one of {families}, a trec_eval name "
            f"({trec}), or {DEFAULT_RR_NAME} (= RR@{DEFAULT_RR_CUTOFF}); see python -m harness metrics")


# ---------------------------------------------------------------- computing

@dataclass(frozen=True)
class _Plan:
    """What one call of compute_many does per query, worked out once per tuple of measures."""

    depth: int | None                     # how much of the ranking any measure reads
    # (condensed, relevance level, tie-aware, [(name, function, cutoff)]): one Ranking per group; a
    # tie-aware group's functions are (ordinary, expected over tie orders) pairs
    groups: tuple[tuple[bool, int, bool, tuple[tuple[str, Any, int | None], ...]], ...]


_PLANS: dict[tuple[Measure | str, ...], _Plan] = {}
# The last tuple planned, held (so its id cannot be reused) for an identity check that is
# cheaper than hashing its Measures: callers pass one module-level tuple query after query.
# One tuple, read once, so a thread never pairs one call's key with another's plan.
_LAST: tuple[object, _Plan | None] = (None, None)


def _plan(measures: tuple[Measure | str, ...]) -> _Plan:
    global _LAST
    last_key, last_plan = _LAST
    if measures is last_key and last_plan is not None:
        return last_plan
    plan = _PLANS.get(measures)
    if plan is None:
        plan = _new_plan(measures)
        if len(_PLANS) < 256:  # callers use a handful of measure tuples; never grow without bound
            _PLANS[measures] = plan
    _LAST = (measures, plan)
    return plan


def _new_plan(measures: tuple[Measure | str, ...]) -> _Plan:
    parsed = [m if isinstance(m, Measure) else parse_metric(m) for m in measures]
    groups: dict[tuple[bool, int, bool], list[tuple[str, Any, int | None]]] = {}
    for measure in parsed:
        function = FAMILIES[measure.family].function
        if function is None:
            raise ValueError(f"{measure.name} is an exposed-evidence measure: computed from the windows a backend "
                             "shows (harness/scoring/evidence.py), not from a ranking")
        pair = (function, ties.EXPECTED[measure.family]) if measure.tie_aware else function
        groups.setdefault((measure.condensed, measure.relevance_level, measure.tie_aware), []).append(
            (measure.name, pair, measure.cutoff))
    # Condensing needs the whole list (documents below k move up); so does a full-depth measure, and a
    # tie-aware one (a document below k tied with the k-th may be in the top k in another order).
    unbounded = any(m.cutoff is None or m.condensed or m.tie_aware for m in parsed)
    depth = None if unbounded or not parsed else max(m.cutoff or 0 for m in parsed)
    return _Plan(depth, tuple((condensed, level, tie_aware, tuple(items))
                              for (condensed, level, tie_aware), items in groups.items()))


def compute_many(measures: Iterable[Measure | str], ranked_ids: Sequence[str],
                 judgments: Mapping[str, int], *, scores: Sequence[float] | None = None) -> dict[str, float]:
    """{canonical name: value} for one query, reading the ranking once for all `measures`.

    measures    Measures (or names, parsed here); a measure named twice is computed once
    ranked_ids  the adapter's list, position 1 first (a repeated id counts once, at its
                first position); only as deep as the measures need is read
    judgments   {doc_id: grade}: grade >= relevance level relevant, 0 judged
                non-relevant, negative or absent unjudged (trec_eval's conventions)
    scores      the adapter's scores, one per id (or None): read by tie-aware measures only,
                whose runs of equal scores they define (none: no ties known)
    Inputs are not mutated. Raises TypeError when ranked_ids is a bare string.
    """
    plan = _plan(measures if isinstance(measures, tuple) else tuple(measures))
    depth = plan.depth
    # No copy when the list is no deeper than needed (the usual case: run k = deepest cutoff).
    grades, judged = grades_of(ranked_ids if depth is None or len(ranked_ids) <= depth else ranked_ids[:depth],
                               judgments)
    return _values(plan, grades, judged, judgments, scores)


def compute_from_scores(measures: Iterable[Measure | str], scores: Mapping[str, float],
                        judgments: Mapping[str, int]) -> dict[str, float]:
    """compute_many over the ranking trec_eval reads from one query's {doc_id: score}, without building it.

    Equal to `compute_many(measures, trec_eval_order(scores), judgments)`: scores compared in
    single precision, ties by docno descending. Every measure reads only the positions of
    the judged documents, so each judged document is placed by bisecting the run's scores,
    sorted once, instead of ordering the whole run (a second sort, by docno): the cost that
    made scoring from dicts slower than from the adapter's lists (benchmarks/metrics.py).
    Scores must be numbers, no NaN.
    """
    plan = _plan(measures if isinstance(measures, tuple) else tuple(measures))
    if any(tie_aware for _, _, tie_aware, _ in plan.groups):  # the runs of equal scores need the order itself
        ranked = trec_eval_order(scores)
        return compute_many(measures, ranked, judgments,
                            scores=_single_precision(map(scores.__getitem__, ranked)))
    total = len(scores)
    length = total if plan.depth is None else min(total, plan.depth)
    grades = [UNJUDGED] * length
    judged: list[int] = []
    retrieved = list(filter(scores.__contains__, judgments))  # judged or not, as few as the judgments
    if retrieved:
        # The documents in ascending score. Rounding to single precision keeps that order, so
        # the documents sharing a single-precision score are one slice of it, at the same
        # indices as that score's slice of `ascending`.
        by_score = sorted(scores, key=scores.__getitem__)
        ascending = _single_precision(map(scores.__getitem__, by_score))
        for doc_id, score in zip(retrieved, _single_precision(map(scores.__getitem__, retrieved))):
            grade = judgments[doc_id]
            if grade < 0:  # unjudged: reads as UNJUDGED wherever it stands
                continue
            higher = bisect_right(ascending, score)
            position = total - higher  # documents ranked above it: higher scores...
            lower = bisect_left(ascending, score, 0, higher)
            if higher - lower > 1:  # ...and the tied ones with a later docno (counted in C)
                position += sum(map(doc_id.__lt__, by_score[lower:higher]))
            if position < length:
                grades[position] = grade
                judged.append(position + 1)
        judged.sort()
    return _values(plan, grades, judged, judgments)


def _single_precision(values: Iterable[float]) -> Sequence[float]:
    """Each value as trec_eval compares it (`trec_eval_score`), for a whole run at once.

    struct's conversion is array's C cast (beyond single range, +/-inf) at about half the
    cost; a value that is not a number is left to array, for the TypeError it has always raised.
    """
    values = tuple(values)
    try:
        return unpack(f"{len(values)}f", pack(f"{len(values)}f", *values))
    except struct_error:
        return array("f", values).tolist()


def _values(plan: _Plan, grades: list[int], judged: list[int], judgments: Mapping[str, int],
            scores: Sequence[float] | None = None) -> dict[str, float]:
    """Every planned measure over one query's grades (index 0 = position 1) and judged positions."""
    values: dict[str, float] = {}
    for condensed, level, tie_aware, items in plan.groups:
        ranking = rank(*(condense(grades, judged) if condensed else (grades, judged)), judgments, level)
        if not tie_aware:
            for name, function, cutoff in items:
                values[name] = function(ranking, cutoff)
            continue
        kept = scores[:len(grades)] if scores is not None and len(scores) >= len(grades) else None
        if condensed and kept is not None:
            kept = [kept[position - 1] for position in judged]
        runs = ties.score_runs(kept, len(ranking.grades))
        for name, (ordinary, expected), cutoff in items:
            # without a tie the expectation is the ordinary value: computed as it, to the last bit
            values[name] = expected(ranking, runs, cutoff) if ties.tied(runs) else ordinary(ranking, cutoff)
    return values


def trec_eval_score(score: float) -> float:
    """The score as trec_eval compares it: rounded to single precision (its `float sim`).

    Two doubles that round to one float are a tie to trec_eval (1.0 and 1.0 - 1e-16 are);
    pytrec_eval does the same. A score beyond single range reads as +/-inf, as C's
    conversion gives.
    """
    return array("f", (score,))[0]


def trec_eval_order(scores: Mapping[str, float]) -> list[str]:
    """The ranking trec_eval reads from one query's {doc_id: score}: score descending, ties by docno descending.

    Scores are compared in single precision (`trec_eval_score`). For scoring a run that
    holds scores rather than an order (a TREC run file, a peer's output); to score it
    without the order, `compute_from_scores`. Scores must be numbers (no NaN).
    """
    single = dict(zip(scores, _single_precision(scores.values())))
    if len(set(single.values())) == len(single):  # no ties, the usual case: one sort on the score
        return sorted(single, key=single.__getitem__, reverse=True)
    ranked = sorted(single, reverse=True)  # docno descending, then a stable sort on the score
    ranked.sort(key=single.__getitem__, reverse=True)
    return ranked


# ---------------------------------------------------------------- listing

def _spellings_of(family: Family) -> list[str]:
    """Example spellings of a family, every one of them accepted by parse_metric."""
    if family.cutoffs is not None:  # an evidence family: its own cutoffs, and its whole-document twin
        ours = [make_measure(family.name, cutoff).name for cutoff in family.cutoffs or (None,)]
        return ours + [WHOLE_DOCUMENT_PREFIX + name for name in ours if family.whole_document_twin]
    k = 10
    ours = [f"{family.name}@{k}"] + ([family.name] if not family.cutoff_required else [])
    ours += [f"{alias}@{k}" for alias in family.aliases]
    ours += [DEFAULT_RR_NAME] if family.name == "rr" else []
    ir = [] if family.ir_measures_differs or not family.ir_measures else \
        [f"{family.ir_measures}@{k}"] + ([family.ir_measures] if not family.cutoff_required else [])
    stem, whole = family.trec_eval
    trec = ([f"{stem}_{k}"] if stem else []) + ([whole] if whole else [])
    return list(dict.fromkeys(ours + ir + trec))


def family_table() -> list[dict[str, str]]:
    """One row per registered family: its spellings, cutoff behaviour and definition."""
    rows = []
    for family in FAMILIES.values():
        stem, whole = family.trec_eval
        trec = ", ".join(([f"{stem}_K"] if stem else []) + ([whole] if whole else [])) or "-"
        ours = ", ".join([family.name, *family.aliases])
        cutoff = "required (@K)" if family.cutoff_required else "optional; none = whole ranking"
        if family.cutoffs is not None:
            cutoff = ", ".join(f"@{k}" for k in family.cutoffs) or "none"
        if family.name == "rr":
            cutoff += f"; bare {DEFAULT_RR_NAME} = @{DEFAULT_RR_CUTOFF}"
        options = ("condensed" + (", rel=N" if family.takes_relevance_level else "")
                   + (f", {TIES_OPTION}" if family.name in ties.EXPECTED else ""))
        if family.nullable:
            options = f"{WHOLE_DOCUMENT_PREFIX} prefix (whole documents)" if family.whole_document_twin else "-"
        rows.append({"family": family.name, "ours": ours,
                     "ir_measures": "-" if family.ir_measures_differs or not family.ir_measures else family.ir_measures,
                     "trec_eval": trec, "cutoff": cutoff, "options": options,
                     "definition": family.definition, "examples": ", ".join(_spellings_of(family))})
    return rows


# ---------------------------------------------------------------- percentile

def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile: sorted(values)[ceil(p/100 * n) - 1], p in [0, 100].

    p = 95 over n = 20 latencies is the 19th smallest. p = 0 gives the minimum (rank
    clamped to 1). The rank is computed exactly (p read as the decimal it prints as), so
    p = 55 over 100 values is rank 55, not the 56 that 55/100*100 in binary floats gives.
    Empty `values`, NaN values, or p outside [0, 100] raise ValueError.
    """
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 100:
        raise ValueError(f"percentile must be a number in [0, 100], got {p!r}")
    if len(values) == 0:
        raise ValueError("percentile of an empty list of values")
    if any(math.isnan(value) for value in values):
        raise ValueError("percentile of values containing NaN")
    return sorted(values)[nearest_rank(len(values), p) - 1]


def nearest_rank(n: int, p: float) -> int:
    """The 1-based rank `percentile` reads among n sorted values: ceil(p/100 * n), at least 1.

    Exact: p is read as the decimal it prints as (p = 55 over 100 values is rank 55).
    """
    return max(math.ceil(Fraction(str(p)) * n / 100), 1)
