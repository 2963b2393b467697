"""Tests for adapters/bm25_search.py: the pruned top k equals a brute-force dense reference, bit for bit."""

from __future__ import annotations

import random
import threading

import pytest

from tests.conftest import require_modules

require_modules("numpy")
import numpy as np  # noqa: E402

import adapters.bm25_search as bm25_search  # noqa: E402
from adapters.bm25_index import BM25Index, BM25Settings  # noqa: E402
from adapters.bm25_search import Accumulator, exhaustive_top_k, kth_largest, pruned_top_k  # noqa: E402


def dense_reference(index: BM25Index, terms: list[int], k: int) -> tuple[list[int], list[float]]:
    """Every posting of every query term (repeats included) added into one float64 slot per
    document in query order, then all documents sorted by score descending, index ascending."""
    dense = np.zeros(index.n_docs)
    for term in terms:
        part = slice(index.offsets[term], index.offsets[term + 1])
        dense[index.postings_docs[part]] += index.postings_scores[part]  # a term's documents are distinct
    hits = np.flatnonzero(dense > 0)
    order = sorted(hits.tolist(), key=lambda doc: (-dense[doc], doc))[:k]
    return order, [float(dense[doc]) for doc in order]


def zipf_corpus(seed: int, n_docs: int, n_words: int, ties: bool) -> tuple[BM25Index, list[str], random.Random]:
    """Zipf-like word use (a few very long posting lists, many short ones); `ties` repeats documents."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(n_words)]
    weights = [1 / (rank + 1) for rank in range(n_words)]
    docs = [rng.choices(words, weights, k=rng.randint(1, 30)) for _ in range(n_docs)]
    if ties:  # exact duplicates tie exactly, also at the cut
        docs = [docs[rng.randrange(len(docs) // 4)] if rng.random() < 0.5 else doc for doc in docs]
    ids = [f"d{i:05d}" for i in rng.sample(range(10 * n_docs), n_docs)]
    return BM25Index.from_tokens(ids, docs, BM25Settings()), words, rng


def queries(rng: random.Random, index: BM25Index, words: list[str]) -> list[list[int]]:
    known = [index.term_ids[word] for word in words if word in index.term_ids]
    common = known[:5]  # the longest lists
    found = [[]]  # empty query
    for _ in range(40):
        query = rng.sample(known, rng.randint(2, 12)) + rng.sample(common, rng.randint(0, 3))
        if rng.random() < 0.3:
            query += query[:2]  # repeated tokens
        found.append(query)
    found += [[known[-1]], [known[0]], [known[-1], known[-2]], common, [known[0]] * 3]
    return found


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ties", [False, True])
def test_pruned_equals_the_dense_reference_on_random_corpora(seed: int, ties: bool, monkeypatch) -> None:
    looked_up = []
    original = bm25_search._look_up
    monkeypatch.setattr(bm25_search, "_look_up", lambda *args: looked_up.append(1) or original(*args))
    index, words, rng = zipf_corpus(seed, n_docs=rng_size(seed), n_words=300, ties=ties)
    for query in queries(rng, index, words):
        for k in (1, 3, 10, 25, index.n_docs + 5):  # 25 > THRESHOLD_RANK; the last is more than any match
            docs, scores = pruned_top_k(index, query, k, Accumulator(index.n_docs))
            want_docs, want_scores = dense_reference(index, query, k)
            assert docs.tolist() == want_docs, (query, k)
            assert scores.tolist() == want_scores, (query, k)  # exact, not approximate
            reference = exhaustive_top_k(index, query, k)
            assert docs.tolist() == reference[0].tolist() and scores.tolist() == reference[1].tolist()
    assert looked_up, "no query took the pruned path: the corpus does not exercise it"


def rng_size(seed: int) -> int:
    return (200, 900, 2500)[seed % 3]


def test_the_index_answers_through_the_pruned_path_with_unknown_and_empty_queries() -> None:
    index, words, _ = zipf_corpus(7, n_docs=1500, n_words=200, ties=True)
    for query in (["w0", "w3", "w150"], ["w0", "nope", "w1", "w1"], ["nope"], []):
        terms = [index.term_ids[token] for token in query if token in index.term_ids]
        docs, scores = index.top_k(query, 10)
        assert (docs.tolist(), scores.tolist()) == dense_reference(index, terms, 10)
    assert index.search_tokens(["nope"], 5) == [] and index.search_tokens([], 5) == []


def test_a_query_beyond_the_exact_range_falls_back_to_the_reference(monkeypatch) -> None:
    index, words, rng = zipf_corpus(8, n_docs=800, n_words=100, ties=False)
    called = []
    original = bm25_search.exhaustive_top_k
    monkeypatch.setattr(bm25_search, "exhaustive_top_k", lambda *args: called.append(1) or original(*args))
    monkeypatch.setattr(bm25_search, "EXACT_RATIO", 1.0)
    query = [index.term_ids[word] for word in ("w0", "w1", "w50")]
    assert [part.tolist() for part in pruned_top_k(index, query, 10)] == list(dense_reference(index, query, 10))
    assert called


def test_the_accumulator_is_left_zeroed_and_lent_to_one_query_at_a_time() -> None:
    index, words, rng = zipf_corpus(9, n_docs=3000, n_words=300, ties=False)
    accumulator = Accumulator(index.n_docs)
    for query in queries(rng, index, words):
        pruned_top_k(index, query, 10, accumulator)
        with accumulator.borrowed() as dense:
            assert not dense.any()
    with accumulator.borrowed() as first:
        with accumulator.borrowed() as second:  # another thread's query meanwhile: its own array
            assert first is not second and not second.any()
    with pytest.raises(RuntimeError):
        with accumulator.borrowed() as dense:
            dense[0] = 1.0
            raise RuntimeError("query failed halfway")
    with accumulator.borrowed() as dense:  # the dirty array was dropped, not lent again
        assert not dense.any()


def test_concurrent_queries_agree_with_the_reference() -> None:
    index, words, rng = zipf_corpus(10, n_docs=2000, n_words=300, ties=True)
    batch = queries(rng, index, words)
    expected = [dense_reference(index, query, 10) for query in batch]
    failures = []

    def run() -> None:
        for query, want in zip(batch, expected):
            docs, scores = index.top_k([index.vocab[term] for term in query], 10)
            if (docs.tolist(), scores.tolist()) != want:
                failures.append(query)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_kth_largest_matches_a_sort_on_long_arrays_with_ties() -> None:
    rng = np.random.default_rng(0)
    for size in (10, 300, 5000, 40_000):
        values = rng.integers(0, 50, size).astype(np.float64)  # many ties
        for k in (1, 10, 100):
            if k <= size:
                assert kth_largest(values, k) == np.sort(values)[-k]


def test_term_statistics_are_stored_and_checked() -> None:
    index, _, _ = zipf_corpus(11, n_docs=500, n_words=80, ties=False)
    for term in range(index.vocab_size):
        scores = index.postings_scores[index.offsets[term]:index.offsets[term + 1]]
        assert index.term_max[term] == scores.max() and index.term_min[term] == scores.min()
        assert index.term_kth[term] == (np.sort(scores)[-10] if len(scores) >= 10 else 0)
    again = BM25Index.from_bytes(index.to_bytes("k"), "k", BM25Settings())
    for name in ("term_max", "term_min", "term_kth"):
        assert np.array_equal(getattr(again, name), getattr(index, name))
