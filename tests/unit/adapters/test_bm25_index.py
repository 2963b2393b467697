"""Tests for adapters/bm25_index.py: exact Lucene BM25 scores, tie order, cache reuse and invalidation."""

from __future__ import annotations

import math
import random

import pytest

from tests.conftest import require_modules

require_modules("numpy")
import numpy as np  # noqa: E402

from adapters.bm25_index import BM25Index, BM25Settings, BM25SettingsError, cache_key, load_or_build  # noqa: E402
from adapters.tokenizer import tokenize  # noqa: E402


def reference_ranking(ids: list[str], docs: list[list[str]], query: list[str],
                      k1: float = 0.9, b: float = 0.4) -> list[tuple[str, float]]:
    """Lucene BM25 written out plainly, in float64, one document and one query token at a time."""
    n_docs = len(docs)
    avgdl = sum(len(doc) for doc in docs) / n_docs
    df = {token: sum(1 for doc in docs if token in doc) for token in query}
    scored = []
    for doc_id, doc in zip(ids, docs):
        score = 0.0
        for token in query:  # a repeated query token counts each time
            tf = doc.count(token)
            if tf == 0:
                continue
            idf = math.log(1 + (n_docs - df[token] + 0.5) / (df[token] + 0.5))
            score += idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        if score > 0:
            scored.append((doc_id, score))
    # Equal scores must tie, but float64 noise can differ in the last bit (idf*tf/tf is not
    # always idf): compare at 9 decimals, far below any real score difference here.
    return sorted(scored, key=lambda pair: (-round(pair[1], 9), pair[0]))


def build(ids: list[str], texts: list[str], **settings: object) -> BM25Index:
    return BM25Index.build(ids, texts, BM25Settings(**settings))  # type: ignore[arg-type]


def test_hand_computed_scores() -> None:
    index = build(["d1", "d2", "d3"], ["a b", "a", "c c c"])
    # N=3, avgdl=(2+1+3)/3=2. Query "a": df=2, idf=ln(1+1.5/2.5)=ln(1.6)=0.470003629.
    # d1: dl=2, norm=0.9*(0.6+0.4*2/2)=0.9,  tf part 1/1.9  -> 0.247370331
    # d2: dl=1, norm=0.9*(0.6+0.4*1/2)=0.72, tf part 1/1.72 -> 0.273257924 (shorter doc wins)
    assert index.search("a", 10) == [("d2", pytest.approx(0.273257924, abs=1e-6)),
                                     ("d1", pytest.approx(0.247370331, abs=1e-6))]
    # Query "c": df=1, idf=ln(1+2.5/1.5)=0.980829253; d3: tf=3, dl=3, norm=0.9*(0.6+0.6)=1.08,
    # tf part 3/4.08 -> 0.721197980
    assert index.search("c", 10) == [("d3", pytest.approx(0.721197980, abs=1e-6))]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k1, b", [(0.9, 0.4), (1.2, 0.75), (0.0, 0.0), (2.0, 1.0)])
def test_matches_the_plain_reference_on_random_corpora(seed: int, k1: float, b: float) -> None:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(12)]
    ids = [f"doc-{i:02d}" for i in rng.sample(range(60), 40)]  # not in id order
    docs = [[rng.choice(words) for _ in range(rng.randint(0, 15))] for _ in ids]
    index = BM25Index.from_tokens(ids, docs, BM25Settings(k1=k1, b=b))
    for _ in range(10):
        query = [rng.choice(words) for _ in range(rng.randint(1, 4))]
        expected = reference_ranking(ids, docs, query, k1, b)
        for k in (1, 5, len(ids)):
            got = index.search_tokens(query, k)
            assert [doc_id for doc_id, _ in got] == [doc_id for doc_id, _ in expected[:k]]
            assert [score for _, score in got] == pytest.approx([s for _, s in expected[:k]], abs=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_matches_the_reference_with_rare_and_common_terms(seed: int) -> None:
    # Zipf-like word use over 600 documents: rare-term queries take the sparse path
    # (few postings), common ones the dense path; both must agree with the reference.
    rng = random.Random(100 + seed)
    words = [f"t{i}" for i in range(400)]
    weights = [1 / (rank + 1) for rank in range(len(words))]
    ids = [f"d{i:04d}" for i in rng.sample(range(10_000), 600)]
    docs = [rng.choices(words, weights, k=rng.randint(1, 20)) for _ in ids]
    index = BM25Index.from_tokens(ids, docs, BM25Settings())
    queries = [["t0", "t1"], ["t300", "t350", "t399"], ["t2", "t390"], ["t5", "t5", "t120"]]
    queries += [rng.sample(words, rng.randint(2, 5)) for _ in range(15)]
    for query in queries:
        expected = reference_ranking(ids, docs, query)
        got = index.search_tokens(query, 10)
        assert [doc_id for doc_id, _ in got] == [doc_id for doc_id, _ in expected[:10]], query
        assert [score for _, score in got] == pytest.approx([s for _, s in expected[:10]], abs=1e-6)


def test_ties_break_by_id_ascending_even_inside_the_cut() -> None:
    # Four identical documents tie exactly; insertion order is deliberately not id order.
    index = build(["c", "a", "d", "b", "z"], ["same words"] * 4 + ["other"])
    assert [doc_id for doc_id, _ in index.search("same", 10)] == ["a", "b", "c", "d"]
    assert [doc_id for doc_id, _ in index.search("same", 2)] == ["a", "b"]
    scores = [score for _, score in index.search("same", 10)]
    assert len(set(scores)) == 1


def test_ties_below_a_better_hit_are_ordered_by_id() -> None:
    index = build(["m", "b", "a", "top"], ["x", "x", "x", "x y"])
    # "top" has both terms and wins; the three one-term documents tie and follow by id.
    assert [doc_id for doc_id, _ in index.search("x y", 3)] == ["top", "a", "b"]


def test_repeated_query_token_counts_twice() -> None:
    index = build(["d1", "d2"], ["alpha beta", "beta"])
    once = dict(index.search("alpha", 5))
    twice = dict(index.search("alpha alpha", 5))
    assert twice["d1"] == pytest.approx(2 * once["d1"], rel=1e-6)


def test_only_matching_documents_come_back() -> None:
    index = build(["d1", "d2", "d3"], ["alpha", "beta", ""])
    assert index.search("alpha", 10) == [("d1", pytest.approx(index.search("alpha", 1)[0][1]))]
    assert index.search("unknown words", 10) == []
    assert index.search("", 10) == []
    assert index.search("!!!", 10) == []


def test_counts_and_code_queries_use_the_tokeniser() -> None:
    index = build(["a.py", "b.py"], ["def parseConfigFile(path):", "def load(x): return x"])
    assert index.n_docs == 2
    assert index.vocab_size == len(set(tokenize("def parseConfigFile(path):") + tokenize("def load(x): return x")))
    assert index.search("parse config file", 1)[0][0] == "a.py"
    # the snake form shares the parts (not the whole token), so it still finds the camel form
    assert index.search("parse_config_file", 1)[0][0] == "a.py"
    assert index.search("parseConfigFile", 1)[0][0] == "a.py"


def test_stopwords_and_stem_settings_change_matching() -> None:
    texts = ["the files", "a file"]
    plain = build(["d1", "d2"], texts)
    assert [doc for doc, _ in plain.search("file", 5)] == ["d2"]
    stemmed = build(["d1", "d2"], texts, stem=True)
    assert sorted(doc for doc, _ in stemmed.search("file", 5)) == ["d1", "d2"]
    stopped = build(["d1", "d2"], texts, stopwords=True)
    assert stopped.search("the", 5) == []


def test_empty_corpus_answers_nothing() -> None:
    index = build([], [])
    assert (index.n_docs, index.vocab_size) == (0, 0)
    assert index.search("anything", 3) == []


@pytest.mark.parametrize("settings", [BM25Settings(k1=-0.1), BM25Settings(b=1.5), BM25Settings(k1=float("nan"))])
def test_parameters_outside_bm25s_domain_are_refused(settings: BM25Settings) -> None:
    with pytest.raises(BM25SettingsError):
        BM25Index.build(["d"], ["text"], settings)


def test_bad_k_is_refused() -> None:
    with pytest.raises(ValueError):
        build(["d"], ["text"]).search("text", 0)


# -- on-disk cache ----------------------------------------------------------------------

IDS = ["d1", "d2", "d3"]
TEXTS = ["open a file for reading", "close the file", "read lines from a socket"]


def test_bytes_round_trip_and_key_check() -> None:
    index = build(IDS, TEXTS)
    data = index.to_bytes("key-1")
    again = BM25Index.from_bytes(data, "key-1", BM25Settings())
    assert again.ids == index.ids and again.vocab == index.vocab
    for name in ("offsets", "postings_docs", "postings_scores"):
        assert np.array_equal(getattr(again, name), getattr(index, name))
    assert again.search("read file", 3) == index.search("read file", 3)
    with pytest.raises(ValueError):
        BM25Index.from_bytes(data, "key-2", BM25Settings())


def test_cache_is_reused_then_invalidated_by_corpus_or_settings(tmp_path) -> None:
    first = load_or_build(IDS, TEXTS, "hash-1", BM25Settings(), tmp_path)
    assert first.provenance["cache"] == "miss" and "build_seconds" in first.provenance
    second = load_or_build(IDS, TEXTS, "hash-1", BM25Settings(), tmp_path)
    assert second.provenance["cache"] == "hit" and "load_seconds" in second.provenance
    assert second.search("file", 3) == first.search("file", 3)
    # A changed corpus (new content hash) must not reuse the old index.
    changed = load_or_build(IDS[:2], TEXTS[:2], "hash-2", BM25Settings(), tmp_path)
    assert changed.provenance["cache"] == "miss" and changed.n_docs == 2
    # Nor may different scoring settings.
    other = load_or_build(IDS, TEXTS, "hash-1", BM25Settings(k1=1.2), tmp_path)
    assert other.provenance["cache"] == "miss"
    assert other.search("file", 1)[0][1] != pytest.approx(first.search("file", 1)[0][1])
    assert len(list(tmp_path.glob("*.bm25"))) == 3
    # use_cache does not change the key
    assert cache_key("h", BM25Settings(use_cache=False)) == cache_key("h", BM25Settings())


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_a_damaged_cache_file_is_rebuilt_not_trusted(tmp_path, capsys, damage: str) -> None:
    good = load_or_build(IDS, TEXTS, "hash-1", BM25Settings(), tmp_path)
    (path,) = tmp_path.glob("*.bm25")
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) - 5])
    elif damage == "flip":  # one bit of the last posting score
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    elif damage == "garbage":
        path.write_bytes(b"not an index at all")
    else:
        path.write_bytes(b"")
    rebuilt = load_or_build(IDS, TEXTS, "hash-1", BM25Settings(), tmp_path)
    assert rebuilt.provenance["cache"] == "miss"
    assert "rebuilding" in capsys.readouterr().err
    assert rebuilt.search("file socket", 3) == good.search("file socket", 3)
    assert path.read_bytes() == data  # the damaged file was replaced by a good one
    assert load_or_build(IDS, TEXTS, "hash-1", BM25Settings(), tmp_path).provenance["cache"] == "hit"


def test_no_cache_folder_means_no_files(tmp_path) -> None:
    index = load_or_build(IDS, TEXTS, "hash-1", BM25Settings(use_cache=False), None)
    assert index.provenance["cache"] == "off"
    assert list(tmp_path.iterdir()) == []


# -- memory model -----------------------------------------------------------------------

def test_a_build_that_would_not_fit_is_refused_in_one_line(monkeypatch) -> None:
    import adapters.bm25_index as bm25_index
    from adapters.bm25_index import BM25MemoryError, build_memory_estimate

    # 3 documents, 7 tokens: 1.15 * (24 * 7 + 160 * 3) = 745.2 -> 745 bytes
    assert build_memory_estimate(3, 7) == 745
    monkeypatch.setattr(bm25_index, "available_memory_bytes", lambda: 744)
    with pytest.raises(BM25MemoryError) as caught:
        build(["a", "b", "c"], ["one two three", "four five", "six seven"])
    message = str(caught.value)
    assert message.startswith("indexing 3 documents (7 tokens) needs about 0.0 GiB more memory")
    assert "--no-memory-check" in message and "\n" not in message
    monkeypatch.setattr(bm25_index, "available_memory_bytes", lambda: 745)
    assert build(["a", "b", "c"], ["one two three", "four five", "six seven"]).n_docs == 3
    monkeypatch.setattr(bm25_index, "available_memory_bytes", lambda: 1)
    unchecked = BM25Index.build(["a"], ["one"], BM25Settings(memory_check=False))
    assert unchecked.search("one", 1)[0][0] == "a"


def test_available_memory_is_read_from_the_machine() -> None:
    from adapters.startup import available_memory_bytes

    available = available_memory_bytes()
    assert available is None or available > 0


def test_a_corpus_file_too_large_to_read_is_refused_before_reading(tmp_path, monkeypatch) -> None:
    import adapters.corpus_dir as corpus_dir
    from adapters.corpus_dir import CorpusTooLarge, read_corpus

    path = tmp_path / "code.jsonl"
    path.write_text('{"id": "a", "text": "alpha"}\n', encoding="utf-8")
    assert path.stat().st_size == 29  # reading needs 4 x 29 = 116 bytes
    monkeypatch.setattr(corpus_dir, "available_memory_bytes", lambda: 115)
    with pytest.raises(CorpusTooLarge, match=r"code.jsonl: corpus for kind 'code' is 0.0 GiB; reading it needs"):
        read_corpus("code", path)
    assert read_corpus("code", path, memory_check=False).ids == ["a"]
    monkeypatch.setattr(corpus_dir, "available_memory_bytes", lambda: 116)
    assert read_corpus("code", path).ids == ["a"]
