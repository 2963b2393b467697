"""benchmarks/bm25_floor.py: its oracle scorer stays exact and really starts higher; its ways to sum agree."""

from __future__ import annotations

import random

import numpy as np
import pytest

from adapters import bm25_search
from adapters.bm25_index import BM25Index, BM25Settings
from benchmarks import bm25_floor

WORDS = [f"w{i}" for i in range(60)]


@pytest.fixture(scope="module")
def corpus():
    """400 documents of 5 to 40 words drawn with a skew (a few words in most documents, most words rare)."""
    rng = random.Random(7)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    docs = [rng.choices(WORDS, weights, k=rng.randint(5, 40)) for _ in range(400)]
    index = BM25Index.from_tokens([f"d{i}" for i in range(len(docs))], docs, BM25Settings(k1=0.9, b=0.4))
    queries = [[index.term_ids[word] for word in rng.choices(WORDS, weights, k=rng.randint(3, 12))]
               for _ in range(60)]
    return index, queries


def _exact_kth(index, queries):
    out = {}
    for terms in queries:
        _docs, scores = bm25_search.exhaustive_top_k(index, terms, bm25_floor.K)
        if len(scores) == bm25_floor.K:
            out[bm25_floor._key(terms)] = float(scores[-1]) * (1 - 1e-7)
    return out


def test_the_oracle_scorer_is_exact_sums_fewer_postings_and_puts_the_real_threshold_back(corpus):
    index, queries = corpus
    exact_kth = _exact_kth(index, queries)
    shipped = lambda terms: bm25_search.pruned_top_k(index, terms, bm25_floor.K)  # noqa: E731
    real_threshold, real_sum = bm25_search._first_threshold, bm25_search._sum_essential
    summed = {"shipped": 0, 0.5: 0, 1.0: 0}
    for fraction in (0.5, 1.0):
        oracle = bm25_floor.oracle_scorer(index, exact_kth, fraction)
        for terms in queries:
            got, want = oracle(terms), bm25_search.exhaustive_top_k(index, terms, bm25_floor.K)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), terms
            summed[fraction] += sum(end - start for start, end in bm25_floor.summed_parts(oracle, terms))
    summed["shipped"] = sum(sum(end - start for start, end in bm25_floor.summed_parts(shipped, terms))
                            for terms in queries)
    assert bm25_search._first_threshold is real_threshold and bm25_search._sum_essential is real_sum
    # A higher starting threshold leaves more terms to be looked up, so fewer postings are summed.
    assert summed[1.0] < summed["shipped"] and summed[1.0] <= summed[0.5] <= summed["shipped"]


def test_summed_parts_are_the_slices_of_the_summed_terms(corpus):
    index, _queries = corpus
    rare, common = index.term_ids["w50"], index.term_ids["w0"]
    # One rare term alone is answered without pruning: nothing goes through the summing step.
    assert bm25_floor.summed_parts(lambda terms: bm25_search.pruned_top_k(index, terms, 3), [rare]) == []
    parts = bm25_floor.summed_parts(lambda terms: bm25_search.pruned_top_k(index, terms, 3), [rare, common])
    owned = {(int(index.offsets[t]), int(index.offsets[t + 1])) for t in (rare, common)}
    assert parts and set(parts) <= owned


def test_every_way_to_sum_gives_the_same_sums_as_a_plain_loop():
    rng = np.random.default_rng(3)
    doc_parts = [np.sort(rng.choice(50, size, replace=False)).astype(np.int32) for size in (7, 20, 1)]
    score_parts = [rng.random(len(part)).astype(np.float32) for part in doc_parts]
    expected = np.zeros(50)
    for part, values in zip(doc_parts, score_parts):
        for doc, value in zip(part.tolist(), values.tolist()):
            expected[doc] += value
    dense = np.zeros(50)
    ways = bm25_floor.scatter_ways(dense, doc_parts, score_parts)
    assert len(ways) >= 4
    for name, run in ways.items():
        dense.fill(0.0)
        result = run()
        if name == bm25_floor.CONVERSION:
            docs, scores = result
            assert docs.dtype == np.intp and scores.dtype == np.float64 and len(docs) == 28
            continue
        summed = result if name.startswith("numpy: np.bincount") else dense
        assert np.allclose(summed, expected, rtol=0, atol=1e-12), name


def test_scatter_costs_are_per_posting_for_each_way(corpus):
    index, queries = corpus
    slices = [bm25_floor.summed_parts(lambda terms: bm25_search.pruned_top_k(index, terms, 10), terms)
              for terms in queries[:5]]
    costs = bm25_floor.scatter_costs(index, [part for part in slices if part], rounds=1)
    assert set(costs) >= {bm25_floor.CONVERSION, "numpy: np.add.at, converted arrays (ours)"}
    assert all(np.isfinite(cost) and cost > 0 for cost in costs.values())
