"""Benchmark: what lies under our BM25's p95 beside bm25s-numba, with numpy only.

    python -m benchmarks.bm25_floor                        # 100k documents, 1,000 queries
    python -m benchmarks.bm25_floor --size 20000 --queries 300 --rounds 3

The corpus, queries and tokens of benchmarks/bm25.py (functions and classes of the installed
stdlib and site-packages, k1=0.9, b=0.4, top 10). Everything runs in one process; each query
is timed as the best of --rounds runs, the scorers interleaved in a rotated order, so a slow
spell of the shared machine hits them alike.

1. Latency: ours as shipped (adapters/bm25_search.pruned_top_k); ours started from an oracle
   threshold, the query's exact 10th score times 0.9 and times 1 (no real query knows it, so
   this bounds what any better starting threshold could buy); bm25s lucene, numba backend.
2. The floor: on the postings ours sums for the queries around its p95, the cost per posting
   of each numpy way to add scores into a slot per document, beside numba's one loop doing
   the same. Needs numba and bm25s for their rows (pip install 'retrieval-gate[bench]').
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable

import numpy as np

from adapters import bm25_search
from benchmarks.arguments import at_least
from harness.scoring.metrics import percentile

K = 10
ORACLE_FRACTIONS = (0.9, 1.0)


def _key(terms: list[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (sorted distinct terms, their counts) that pruned_top_k hands to `_first_threshold`."""
    counts = Counter(terms)
    unique = sorted(counts)
    return tuple(unique), tuple(counts[term] for term in unique)


def oracle_scorer(index, exact_kth: dict, fraction: float) -> Callable[[list[int]], tuple]:
    """pruned_top_k started from `fraction` x the query's exact k-th score (a true lower bound for fraction <= 1)."""
    real = bm25_search._first_threshold
    accumulator = bm25_search.Accumulator(index.n_docs)

    def first_threshold(index_, selected, weights, starts, ends, k):
        known = exact_kth.get((tuple(selected.tolist()), tuple(weights)), 0.0) * fraction
        return max(real(index_, selected, weights, starts, ends, k), known)

    def search(terms: list[int]):
        bm25_search._first_threshold = first_threshold
        try:
            return bm25_search.pruned_top_k(index, terms, K, accumulator)
        finally:
            bm25_search._first_threshold = real
    return search


def summed_parts(search: Callable, terms: list[int]) -> list[tuple[int, int]]:
    """The (start, end) posting slices `search` sums for one query (untimed: `_sum_essential` wrapped)."""
    real = bm25_search._sum_essential
    seen: list[tuple[int, int]] = []

    def recording(index, parts, *rest):
        seen.extend((start, end) for start, end, _ in parts)
        return real(index, parts, *rest)
    bm25_search._sum_essential = recording
    try:
        search(terms)
    finally:
        bm25_search._sum_essential = real
    return seen


def time_interleaved(scorers: dict[str, Callable], queries: list, rounds: int) -> dict[str, list[float]]:
    """Each query's best time per scorer over `rounds`, the scorers' order rotated every round."""
    names = list(scorers)
    best = {name: [float("inf")] * len(queries) for name in names}
    for round_ in range(rounds):
        order = names[round_ % len(names):] + names[:round_ % len(names)]
        for i, query in enumerate(queries):
            for name in order:
                started = time.perf_counter()
                scorers[name](query)
                best[name][i] = min(best[name][i], time.perf_counter() - started)
    return best


def _best_of(run: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


CONVERSION = "numpy: int32 -> intp and float32 -> float64 concatenation (ours does it first)"
NUMBA_WAY = "numba: one loop over each term's int32/float32 slices (as bm25s)"


def scatter_ways(dense: np.ndarray, doc_parts: list[np.ndarray],
                 score_parts: list[np.ndarray]) -> dict[str, Callable[[], object]]:
    """Each way to add one query's postings (a term's int32 documents and float32 scores per part) into `dense`.

    Every way but CONVERSION leaves the per-document sums in `dense` (np.bincount returns
    them in a new array of its own); CONVERSION only makes the arrays the numpy ways take.
    """
    hit_docs = np.concatenate(doc_parts, dtype=np.intp, casting="safe")
    hit_scores = np.concatenate(score_parts, dtype=np.float64)
    wide = [(part.astype(np.intp), values.astype(np.float64)) for part, values in zip(doc_parts, score_parts)]
    ways: dict[str, Callable[[], object]] = {
        CONVERSION: lambda: (np.concatenate(doc_parts, dtype=np.intp, casting="safe"),
                             np.concatenate(score_parts, dtype=np.float64)),
        "numpy: np.add.at, converted arrays (ours)": lambda: np.add.at(dense, hit_docs, hit_scores),
        "numpy: np.bincount(minlength=docs), converted (allocates the slots)":
            lambda: np.bincount(hit_docs, weights=hit_scores, minlength=len(dense)),
        "numpy: dense[docs] += scores per term, converted": lambda: [
            dense.__setitem__(part, dense[part] + values) for part, values in wide],
    }
    loop = _numba_scatter()
    if loop is not None:
        ways[NUMBA_WAY] = lambda: [loop(dense, part, values) for part, values in zip(doc_parts, score_parts)]
    return ways


def scatter_costs(index, slices_per_query: list[list[tuple[int, int]]], rounds: int) -> dict[str, float]:
    """ns per posting of each of `scatter_ways` over the queries' (start, end) posting slices, best of `rounds` each."""
    dense = np.zeros(index.n_docs)
    totals: dict[str, float] = {}
    postings = 0
    for slices in slices_per_query:
        doc_parts = [index.postings_docs[start:end] for start, end in slices]
        score_parts = [index.postings_scores[start:end] for start, end in slices]
        postings += sum(map(len, doc_parts))
        for name, run in scatter_ways(dense, doc_parts, score_parts).items():
            totals[name] = totals.get(name, 0.0) + _best_of(run, rounds)
        dense.fill(0.0)
    return {name: 1e9 * seconds / postings for name, seconds in totals.items()}


@functools.cache
def _numba_scatter():
    """A numba loop adding scores into slots (compiled once, on first use), or None without numba."""
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(nogil=True)
    def scatter(dense, docs, scores):
        for i in range(len(docs)):
            dense[docs[i]] += scores[i]
    scatter(np.zeros(2), np.zeros(1, np.int32), np.ones(1, np.float32))  # compile outside any timing
    return scatter


def _bm25s_numba(docs_tokens: list[list[str]], k1: float, b: float):
    """bm25s lucene with its numba backend, as benchmarks/bm25.py times it, or None without bm25s/numba."""
    try:
        import bm25s
        import numba  # noqa: F401
    except ImportError:
        return None
    retriever = bm25s.BM25(method="lucene", k1=k1, b=b, backend="numba")
    retriever.index(docs_tokens, show_progress=False)

    def search(tokens: list[str]):
        if tokens:
            retriever.retrieve([tokens], k=K, show_progress=False, n_threads=0, backend_selection="numba")
    search(docs_tokens[0][:3])  # numba's JIT compilation, outside the timing
    return search


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bm25_floor", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=at_least(100), default=100_000, help="documents (default 100000)")
    parser.add_argument("--queries", type=at_least(20), default=1000, help="queries (default 1000)")
    parser.add_argument("--rounds", type=at_least(1), default=5, help="runs per query, the best kept (default 5)")
    parser.add_argument("--k1", type=float, default=0.9)
    parser.add_argument("--b", type=float, default=0.4)
    args = parser.parse_args(argv)

    from adapters.bm25_index import BM25Index, BM25Settings
    from adapters.tokenizer import Tokenizer
    from benchmarks.bm25 import query_sample
    from benchmarks.stdlib_corpus import load_items

    items = load_items(limit=args.size, sources=("stdlib", "site-packages"))
    tokenize = Tokenizer()
    docs_tokens = [tokenize(item.text) for item in items]
    query_tokens = [tokenize(item.query) for item in query_sample(items, len(items), args.queries)]
    index = BM25Index.from_tokens([item.id for item in items], docs_tokens, BM25Settings(k1=args.k1, b=args.b))
    term_ids = index.term_ids
    queries = [[term_ids[token] for token in tokens if token in term_ids] for tokens in query_tokens]
    reference = [bm25_search.exhaustive_top_k(index, terms, K) for terms in queries]
    exact_kth = {_key(terms): float(top[-1]) * (1 - 1e-7)
                 for terms, (_docs, top) in zip(queries, reference) if len(top) == K}

    shipped_accumulator = bm25_search.Accumulator(index.n_docs)
    scorers: dict[str, Callable] = {
        "ours (as shipped)": lambda terms: bm25_search.pruned_top_k(index, terms, K, shipped_accumulator)}
    for fraction in ORACLE_FRACTIONS:
        scorers[f"ours from an oracle threshold, {fraction:g} x the exact 10th score"] = oracle_scorer(
            index, exact_kth, fraction)
    for name, search in scorers.items():  # every variant is exact: the same ids, scores and order
        for terms, want in zip(queries, reference):
            got = search(terms)
            if not (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])):
                raise SystemExit(f"benchmarks.bm25_floor: {name} differs from exhaustive_top_k on {terms}")
    timed = {name: (lambda search: lambda i: search(queries[i]))(search) for name, search in scorers.items()}
    numba_search = _bm25s_numba(docs_tokens, args.k1, args.b)
    if numba_search is not None:
        timed["bm25s lucene, numba backend"] = lambda i: numba_search(query_tokens[i])
    best = time_interleaved(timed, list(range(len(queries))), args.rounds)

    shipped = best["ours (as shipped)"]
    by_time = sorted(range(len(queries)), key=shipped.__getitem__)
    around_p95 = by_time[int(0.925 * len(by_time)):int(0.975 * len(by_time))]
    summed = {name: [summed_parts(search, queries[i]) for i in around_p95] for name, search in scorers.items()}
    print(f"# {len(items)} documents, {len(queries)} queries, best of {args.rounds} per query, one process")
    numba_p95 = percentile(best["bm25s lucene, numba backend"], 95) if numba_search else None
    print(f"{'scorer':<62}{'p50 ms':>8}{'p95 ms':>8}{'p95 / numba':>12}{'summed at p95':>15}")
    for name, times in best.items():
        p95 = percentile(times, 95)
        ratio = f"{p95 / numba_p95:.2f}" if numba_p95 else ""
        postings = (f"{statistics.median(sum(end - start for start, end in parts) for parts in summed[name]):.0f}"
                    if name in summed else "")
        print(f"{name:<62}{1000 * percentile(times, 50):>8.3f}{1000 * p95:>8.3f}{ratio:>12}{postings:>15}")
    print(f"('summed at p95': median postings added into the slots, over the {len(around_p95)} queries "
          "at ranks p92.5 to p97.5 of the shipped scorer)")

    costs = scatter_costs(index, summed["ours (as shipped)"], args.rounds)
    floor = costs.get(NUMBA_WAY)
    print(f"\n{'adding those postings into a float64 slot per document':<78}{'ns/posting':>11}{'/ numba':>9}")
    for name, cost in costs.items():
        print(f"{name:<78}{cost:>11.2f}{(f'{cost / floor:.2f}' if floor else ''):>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
