"""Per-query retrieval metrics (trec_eval definitions), their registry and name parsing; no I/O."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from itertools import islice

# A document is relevant when its grade is at least this (trec_eval's default relevance
# level): grade 0 or below is judged non-relevant, exactly like an unjudged document.
RELEVANCE_LEVEL = 1

# Bumped whenever a formula below changes, so reports made under different definitions
# can be told apart (issue 6: `compare` refuses to mix them).
DEFINITIONS_VERSION = 1

# Cutoff of the reciprocal rank when none is named ("mrr", "RR"): DESIGN.md's MRR@10.
DEFAULT_RR_CUTOFF = 10

# Conventions shared by every function below:
# - `ranked_ids` is the adapter's list, position 1 first; only its first `k` entries count.
#   A document listed twice (the protocol rejects that upstream) is counted once, at its
#   first position.
# - `grades` maps judged document ids to integer grades; unjudged ids count as grade 0.
# - A query with no relevant document scores 0.0 on every metric (trec_eval does the
#   same); the evaluator leaves such queries (`no_relevant` probes) out of the aggregates.
# - No function mutates its inputs.


def _check_cutoff(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"metric cutoff must be an integer >= 1, got {k!r}")


def _first_positions(ranked_ids: Sequence[str], k: int) -> list[tuple[int, str]]:
    """(1-based position, id) of each id's first occurrence among the first k entries.

    A repeated id keeps its first position and is not counted again.
    """
    if isinstance(ranked_ids, str):
        # A bare string is a Sequence[str] of characters: always a caller's mistake.
        raise TypeError("ranked_ids must be a sequence of ids, not a string")
    _check_cutoff(k)
    seen: set[str] = set()
    positions: list[tuple[int, str]] = []
    for position, doc_id in enumerate(islice(ranked_ids, k), start=1):
        if doc_id not in seen:
            seen.add(doc_id)
            positions.append((position, doc_id))
    return positions


def _relevant_retrieved(ranked_ids: Sequence[str], grades: Mapping[str, int], k: int) -> int:
    return sum(1 for _, doc_id in _first_positions(ranked_ids, k) if _is_relevant(grades, doc_id))


def _is_relevant(grades: Mapping[str, int], doc_id: str) -> bool:
    return grades.get(doc_id, 0) >= RELEVANCE_LEVEL


def _relevant_count(grades: Mapping[str, int]) -> int:
    return sum(1 for grade in grades.values() if grade >= RELEVANCE_LEVEL)


def recall(ranked_ids: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """recall@k = |relevant in the top k| / |relevant judged| (trec_eval `recall_k`).

    Relevant documents that were never retrieved still count in the denominator.
    0.0 when the query has no relevant document (see the module conventions).
    """
    found = _relevant_retrieved(ranked_ids, grades, k)
    total = _relevant_count(grades)
    return found / total if total else 0.0


def precision(ranked_ids: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """precision@k = |relevant in the top k| / k (trec_eval `P_k`).

    The denominator is k even when fewer than k results came back: returning less is
    not rewarded.
    """
    return _relevant_retrieved(ranked_ids, grades, k) / k


def reciprocal_rank(ranked_ids: Sequence[str], grades: Mapping[str, int],
                    k: int = DEFAULT_RR_CUTOFF) -> float:
    """RR@k = 1 / position of the first relevant result within the top k, else 0.0.

    trec_eval's `recip_rank` has no cutoff; it equals RR@k on the list cut at k
    (`trec_eval -M k`). MRR is the mean of this over queries.
    """
    for position, doc_id in _first_positions(ranked_ids, k):
        if _is_relevant(grades, doc_id):
            return 1.0 / position
    return 0.0


def _gain(grade: int) -> int:
    """Linear gain (trec_eval): the grade itself when relevant, else nothing."""
    return grade if grade >= RELEVANCE_LEVEL else 0


def _discount(position: int) -> float:
    """1 / log2(position + 1): 1 at position 1, 1/log2(3) at position 2, ..."""
    return 1.0 / math.log2(position + 1)


def ndcg(ranked_ids: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """nDCG@k = DCG@k / IDCG@k, as trec_eval `ndcg_cut_k`.

    DCG@k  = sum over positions i <= k of gain(grade of doc i) / log2(i + 1), gain = grade
             for relevant documents (linear), 0 otherwise.
    IDCG@k = the same sum over every relevant judged grade, retrieved or not, sorted
             descending and cut at k. IDCG 0 (nothing relevant) gives 0.0.
    """
    positions = _first_positions(ranked_ids, k)
    ideal_gains = sorted((_gain(grade) for grade in grades.values() if _gain(grade) > 0),
                         reverse=True)[:k]
    # Summed in rank order, as trec_eval does, so the floating-point result matches it.
    ideal = sum(gain * _discount(position)
                for position, gain in enumerate(ideal_gains, start=1))
    if ideal == 0:
        return 0.0
    actual = sum(_gain(grades.get(doc_id, 0)) * _discount(position)
                 for position, doc_id in positions)
    return actual / ideal


def hit(ranked_ids: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """hit@k = 1.0 if any relevant document is in the top k, else 0.0 (trec_eval `success_k`)."""
    return 1.0 if _relevant_retrieved(ranked_ids, grades, k) else 0.0


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
    ordered = sorted(values)
    rank = math.ceil(Fraction(str(p)) * len(ordered) / 100)
    return ordered[max(rank, 1) - 1]


# ---------------------------------------------------------------- registry and names

@dataclass(frozen=True)
class Family:
    """One kind of metric, computed at any cutoff k >= 1."""

    name: str
    function: Callable[[Sequence[str], Mapping[str, int], int], float]
    description: str
    ir_measures: str  # the ir_measures spelling of the family (R, P, RR, nDCG, Success)


FAMILIES: dict[str, Family] = {family.name: family for family in (
    Family("recall", recall, "relevant in the top k / all judged relevant (trec_eval recall_k)", "R"),
    Family("precision", precision, "relevant in the top k / k (trec_eval P_k)", "P"),
    Family("mrr", reciprocal_rank,
           "1 / rank of the first relevant result in the top k, else 0 (trec_eval recip_rank -M k)",
           "RR"),
    Family("ndcg", ndcg, "linear-gain nDCG cut at k, log2(rank + 1) discount (trec_eval ndcg_cut_k)",
           "nDCG"),
    Family("hit", hit, "1 if any relevant result is in the top k, else 0 (trec_eval success_k)",
           "Success"),
)}


def _family_named(spelling: str) -> str | None:
    """Our family for a spelling, ours or ir_measures' (R, P, RR, nDCG, Success), any case."""
    for family in FAMILIES.values():
        if spelling.lower() in (family.name.lower(), family.ir_measures.lower()):
            return family.name
    return None


_NAME = re.compile(r"([A-Za-z]+)@([0-9]{1,9})")


@dataclass(frozen=True)
class Metric:
    """A family at a fixed cutoff; `compute(ranked_ids, grades) -> float`.

    Equality and hashing use name, family and cutoff only, so two parses of one name are
    equal even though each holds its own `compute`.
    """

    name: str
    family: str
    cutoff: int
    compute: Callable[[Sequence[str], Mapping[str, int]], float] = field(compare=False, repr=False)


def _make(family: str, cutoff: int) -> Metric:
    _check_cutoff(cutoff)
    function = FAMILIES[family].function
    return Metric(f"{family}@{cutoff}", family, cutoff, partial(function, k=cutoff))


# Names a report can carry. Keys are accepted spellings; "mrr" is the same metric as
# "mrr@10" (its canonical `name`).
METRICS: dict[str, Metric] = {metric.name: metric for metric in (
    _make("recall", 5), _make("recall", 10), _make("precision", 10),
    _make("mrr", DEFAULT_RR_CUTOFF), _make("ndcg", 10), _make("hit", 10),
)}
METRICS["mrr"] = METRICS[f"mrr@{DEFAULT_RR_CUTOFF}"]

# The report's columns.
DEFAULT_METRICS = ("recall@5", "recall@10", "mrr", "ndcg@10")

# Names without a cutoff (matched in any case) and the metric each means. ir_measures' bare "RR"
# has no cutoff; ours is cut at 10, which differs only for runs of more than 10 results.
_BARE_NAMES: dict[str, str] = {"mrr": f"mrr@{DEFAULT_RR_CUTOFF}", "RR": f"mrr@{DEFAULT_RR_CUTOFF}"}
_BARE_LOOKUP = {bare.lower(): target for bare, target in _BARE_NAMES.items()}


def parse_metric(name: str) -> Metric:
    """The metric a name means: FAMILY@K for any K >= 1, or a bare `mrr` / `RR` (= mrr@10).

    FAMILY is ours (recall, precision, mrr, ndcg, hit) or ir_measures' (R, P, RR, nDCG,
    Success), case-insensitive. Anything else raises ValueError listing the families.
    """
    if not isinstance(name, str):
        raise ValueError(f"metric name must be a string, got {name!r}")
    text = name.strip()
    bare = _BARE_LOOKUP.get(text.lower())
    if bare is not None:
        return METRICS[bare]
    match = _NAME.fullmatch(text)
    family = _family_named(match.group(1)) if match else None
    if match is None or family is None:
        raise ValueError(f"unknown metric {name!r}: {_expected()}")
    cutoff = int(match.group(2))
    if cutoff < 1:
        raise ValueError(f"metric {name!r}: cutoff must be >= 1")
    canonical = f"{family}@{cutoff}"
    return METRICS.get(canonical) or _make(family, cutoff)


def _expected() -> str:
    families = ", ".join(sorted(FAMILIES))
    aliases = ", ".join(f"{family.ir_measures}={family.name}"
                        for family in sorted(FAMILIES.values(), key=lambda f: f.name))
    bare = ", ".join(sorted(_BARE_NAMES))
    return (f"expected FAMILY@K with K >= 1 and FAMILY one of {families} "
            f"(ir_measures spellings {aliases}), or one of {bare}")


def metric_names() -> list[str]:
    """Every registered metric name, then its ir_measures spelling and bare aliases.

    Any other cutoff of a family (recall@20, nDCG@3 ...) is accepted by parse_metric too.
    """
    names: list[str] = []
    for key, metric in METRICS.items():
        if key != metric.name:
            continue  # a bare alias, listed with its metric
        names.append(metric.name)
        names.append(f"{FAMILIES[metric.family].ir_measures}@{metric.cutoff}")
        names.extend(bare for bare, target in _BARE_NAMES.items() if target == metric.name)
    return names
