"""Query-time scoring for adapters/bm25_index.py: the exact top k, summing few of the postings.

`pruned_top_k` is MaxScore (Turtle and Flood, 1995) done a term at a time with numpy.
Each term's bound is its largest posting score times its count in the query; terms go in
descending bound order. `theta` is a lower bound on the final k-th best score: first the
best single term's k-th score (stored per term), later the k-th best sum among the first
term's documents (distinct documents, and a sum only grows).

1. The lowest-bound terms, while their bounds add up to under LOOKUP_SHARE of theta, are
   "looked up": a document that has none of the other terms cannot reach theta. In a
   typical query these are the longest lists ("the", "of", "a").
2. Every posting of the other terms is added, in place, into a float64 slot per document
   (an `Accumulator`, reused and re-zeroed so no query allocates 8 bytes per document).
3. Candidates are the documents whose sum plus the looked-up bounds can reach theta; when
   the bounds of all but the first summed terms already fall short of theta, they are
   read back at those terms' postings only, otherwise by one pass over all documents.
4. Each looked-up term adds its score to the candidates by binary search in its sorted
   document array; the top k is ordered by score, then document index.

Exactness. Only documents strictly below the final k-th score are ever left out, so every
top-k document is kept with all its term scores. The sums are the same numbers as
`exhaustive_top_k` (the reference, every posting summed in query order) whenever the
order of addition cannot matter: float64 sums of float32 scores are exact while the total
stays below 2**29 times the smallest score taking part (each score is a multiple of the
smallest one's float32 ulp, and float64 holds 53 bits). A query outside that bound (a
ratio of hundreds of millions between scores, never seen on real text) is answered by
`exhaustive_top_k`, so ties are exact ties and the order is the reference's, bit for bit.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

import numpy as np

# Totals below this many times the query's smallest posting score are summed exactly in
# float64 whatever the order (2**29 is the bound; one bit spare for the rounding of bounds).
EXACT_RATIO = 2.0 ** 28
# Relative slack on every pruning comparison: bounds are float64 sums that may round down.
_SLACK = 1e-9
# Each term's THRESHOLD_RANK-th best score is stored: a free lower bound on a top-k threshold, k <= 10.
THRESHOLD_RANK = 10
# Terms are looked up rather than summed while their bounds add up to under this share of
# the threshold: a larger share sums fewer postings but leaves more candidates to look up.
LOOKUP_SHARE = 0.5


class Postings(Protocol):
    """The arrays of a BM25Index that scoring reads (see adapters/bm25_index.py)."""

    offsets: np.ndarray          # int64, term t owns [offsets[t], offsets[t + 1])
    postings_docs: np.ndarray    # int32, ascending within a term
    postings_scores: np.ndarray  # float32, the term's BM25 score in that document
    term_max: np.ndarray         # float32, each term's largest posting score
    term_min: np.ndarray         # float32, each term's smallest posting score
    term_kth: np.ndarray         # float32, each term's THRESHOLD_RANK-th best score (0 if fewer postings)
    n_docs: int


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, np.int64), np.zeros(0, np.float32)


def kth_largest(values: np.ndarray, k: int) -> float:
    """The k-th largest of `values` (len >= k), without a partition over all of a long array.

    The k-th largest of an evenly spaced sample is a lower bound; only the values at or
    above it (about k per sample step) are partitioned.
    """
    step = len(values) // max(256, 8 * k)
    if step >= 2:
        sample = values[::step]
        values = values[values >= np.partition(sample, len(sample) - k)[len(sample) - k]]
    return float(np.partition(values, len(values) - k)[len(values) - k])


def order_top_k(docs: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The top k of distinct (doc, score) pairs: score descending, then document index ascending.

    Everything tied with the k-th score is kept before the final sort, so a tie at the cut
    is broken by index.
    """
    if len(docs) > k:
        keep = scores >= kth_largest(scores, k)
        docs, scores = docs[keep], scores[keep]
    order = np.lexsort((docs, -scores))[:k]
    return docs[order], scores[order]


def exhaustive_top_k(index: Postings, terms: Sequence[int], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The reference: every posting of every query term summed (float64, query order), then ranked."""
    if not terms:
        return _empty()
    offsets, docs, contributions = index.offsets, index.postings_docs, index.postings_scores
    slices = [slice(offsets[term], offsets[term + 1]) for term in terms]
    if len(terms) == 1:
        return order_top_k(docs[slices[0]], contributions[slices[0]], k)
    hit_docs = np.concatenate([docs[part] for part in slices])
    hit_scores = np.concatenate([contributions[part] for part in slices])
    # bincount sums in float64 in this order (see the module docstring on exactness).
    if len(hit_docs) * 16 < index.n_docs:
        candidates, slot = np.unique(hit_docs, return_inverse=True)
        candidate_scores = np.bincount(slot, weights=hit_scores, minlength=len(candidates))
    else:
        dense = np.bincount(hit_docs, weights=hit_scores, minlength=index.n_docs)
        candidates = np.flatnonzero(dense > 0)
        candidate_scores = dense[candidates]
    return order_top_k(candidates, candidate_scores, k)


def pruned_top_k(index: Postings, terms: Sequence[int], k: int,
                 accumulator: Accumulator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The top k for the query's term ids (repeats count), equal to `exhaustive_top_k`'s; see the module docstring."""
    counts: dict[int, int] = {}
    for term in terms:
        counts[term] = counts.get(term, 0) + 1
    unique = sorted(counts)
    if len(unique) <= 1 and sum(counts.values()) <= 1:
        return exhaustive_top_k(index, unique, k)
    selected = np.array(unique, dtype=np.int64)
    starts = index.offsets[selected].tolist()
    ends = index.offsets[selected + 1].tolist()
    weights = [counts[term] for term in unique]
    bounds = [float(top) * weight for top, weight in zip(index.term_max[selected].tolist(), weights)]
    if sum(bounds) >= EXACT_RATIO * float(index.term_min[selected].min()):
        return exhaustive_top_k(index, terms, k)
    order = sorted(range(len(unique)), key=lambda i: (-bounds[i], unique[i]))
    theta = _first_threshold(index, selected, weights, starts, ends, k)
    # The lowest-bound terms, while their bounds add up to under a share of theta, cannot
    # lift an unseen document into the top k: they are only looked up for the candidates.
    split, rest = len(order), 0.0
    while split > 1 and rest + bounds[order[split - 1]] < theta * LOOKUP_SHARE:
        split -= 1
        rest += bounds[order[split]]
    parts = [(starts[i], ends[i], weights[i]) for i in order[:split]]
    with (accumulator or Accumulator(index.n_docs)).borrowed() as dense:
        candidates, partial, theta = _sum_essential(index, parts, [bounds[i] for i in order[:split]],
                                                    dense, theta, rest, k)
    if split < len(order) and len(candidates) > k:
        theta = max(theta, kth_largest(partial, k))
        keep = partial >= theta - rest - _SLACK * theta
        candidates, partial = candidates[keep], partial[keep]
    docs, scores = index.postings_docs, index.postings_scores
    for i in order[split:]:
        _look_up(docs[starts[i]:ends[i]], scores[starts[i]:ends[i]], weights[i], candidates, partial)
    return order_top_k(candidates, partial, k)


class Accumulator:
    """A float64 slot per document, all zero between queries, reused by one query at a time.

    Allocating and zeroing 8 bytes per document for every query costs more than the sums
    of a typical query; a query that finds it in use (another thread) gets a fresh one.
    """

    def __init__(self, n_docs: int) -> None:
        self._n_docs = n_docs
        self._array: np.ndarray | None = None
        self._lock = threading.Lock()

    @contextmanager
    def borrowed(self) -> Iterator[np.ndarray]:
        """Lend the zeroed array; the borrower leaves it zeroed (an error discards it instead)."""
        if not self._lock.acquire(blocking=False):
            yield np.zeros(self._n_docs)
            return
        try:
            if self._array is None:
                self._array = np.zeros(self._n_docs)
            yield self._array
        except BaseException:
            self._array = None
            raise
        finally:
            self._lock.release()


def _sum_essential(index: Postings, parts: list[tuple[int, int, int]], part_bounds: list[float],
                   dense: np.ndarray, theta: float, rest: float, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Sum every posting of the (start, end, weight) slices, in bound order, into `dense` (left zeroed).

    Returns the candidates (distinct int32 documents whose sum plus `rest` can reach the
    threshold), their sums, and the raised threshold. The threshold is raised with the
    first term's documents (distinct, so their k-th best sum is a lower bound); then only
    documents of the first terms can still reach it, once the later ones' bounds plus
    `rest` fall below it, so only their positions are read back instead of every document.
    """
    docs, scores = index.postings_docs, index.postings_scores
    hit_docs = np.concatenate([docs[start:end] for start, end, _ in parts], dtype=np.intp, casting="safe")
    hit_scores = np.concatenate([scores[start:end] for start, end, _ in parts], dtype=np.float64)
    at = 0
    for start, end, weight in parts:  # a repeated query token, in place: float64 times a count is exact
        if weight != 1:
            hit_scores[at:at + end - start] *= weight
        at += end - start
    np.add.at(dense, hit_docs, hit_scores)  # in hit order: per document, term order
    first = parts[0][1] - parts[0][0]
    if first >= k:
        theta = max(theta, kth_largest(dense.take(hit_docs[:first]), k))
    limit = theta - rest - _SLACK * theta
    # Only documents of the first `leading` terms can reach the threshold.
    leading, outside = len(parts), rest
    while leading > 1 and outside + part_bounds[leading - 1] < theta * (1 - _SLACK):
        leading -= 1
        outside += part_bounds[leading]
    reach = sum(end - start for start, end, _ in parts[:leading])
    if reach * 8 >= len(dense):
        candidates = np.flatnonzero(dense >= limit if limit > 0 else dense > 0)
        partial = dense[candidates]
    else:
        reachable = hit_docs[:reach]
        candidates = reachable[dense.take(reachable) >= limit] if limit > 0 else reachable
        partial = dense.take(candidates)
        if leading > 1 and len(candidates) > 1:
            # A document of several terms is there once per term: overwrite each chosen slot
            # with its position in the list, so one occurrence per document reads itself back.
            slots = np.arange(len(candidates), dtype=np.float64)
            dense[candidates] = slots
            keep = dense.take(candidates) == slots
            candidates, partial = candidates[keep], partial[keep]
    if len(hit_docs) * 10 >= len(dense):
        dense.fill(0.0)
    else:
        dense[hit_docs] = 0.0
    return candidates.astype(np.int32), partial, theta


def _first_threshold(index: Postings, selected: np.ndarray, weights: list[int], starts: list[int],
                     ends: list[int], k: int) -> float:
    """A lower bound on the final k-th score before any summing: the best single term's k-th score."""
    if k <= THRESHOLD_RANK:
        return max(float(top) * weight for top, weight in zip(index.term_kth[selected].tolist(), weights))
    theta = 0.0
    for i in range(len(weights)):
        if ends[i] - starts[i] >= k:
            theta = max(theta, kth_largest(index.postings_scores[starts[i]:ends[i]], k) * weights[i])
    return theta


def _times(scores: np.ndarray, weight: int) -> np.ndarray:
    """float32 scores times a query token's count, in float64 (exact; float32 would round)."""
    return np.multiply(scores, weight, dtype=np.float64)


def _look_up(docs: np.ndarray, scores: np.ndarray, weight: int, candidates: np.ndarray,
             partial: np.ndarray) -> None:
    """Add the term's score (times `weight`) to each candidate holding it, in place.

    Searching `docs[:-1]` keeps every position a valid index: a candidate past the last
    document lands on the last one and simply does not match it.
    """
    positions = docs[:-1].searchsorted(candidates)
    gained = scores.take(positions) * (docs.take(positions) == candidates)
    partial += gained if weight == 1 else _times(gained, weight)


def term_statistics(offsets: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each term's largest, smallest and THRESHOLD_RANK-th best posting score (float32; every term has a posting)."""
    n_terms = len(offsets) - 1
    if n_terms == 0:
        return (np.zeros(0, np.float32),) * 3
    starts = offsets[:-1]
    top = np.maximum.reduceat(scores, starts).astype(np.float32)
    bottom = np.minimum.reduceat(scores, starts).astype(np.float32)
    kth = np.zeros(n_terms, np.float32)
    for term in np.flatnonzero(np.diff(offsets) >= THRESHOLD_RANK).tolist():
        kth[term] = kth_largest(scores[offsets[term]:offsets[term + 1]], THRESHOLD_RANK)
    return top, bottom, kth
