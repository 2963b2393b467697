"""adapters/embedding_cache.py: vectors cached per document content hash, verified on load, pruned on request."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.conftest import require_modules

require_modules("numpy", "onnxruntime", "tokenizers", "onnx")
import numpy as np  # noqa: E402

from adapters import embedding_cache  # noqa: E402
from adapters.embedder import EmbedOptions, Embedder  # noqa: E402
from adapters.embedding_cache import cached_passage_embeddings, prune, summarise  # noqa: E402
from tests.tiny_onnx import reference, write_model, write_tokenizer  # noqa: E402

TEXTS = ["alpha beta gamma", "delta", "epsilon zeta eta theta alpha beta gamma delta epsilon",
         "theta theta", "gamma unknownword alpha beta zeta", "eta", "beta alpha"]


@pytest.fixture
def tiny(tmp_path: Path):
    model, table, type_table = write_model(tmp_path / "model.onnx")
    tokenizer = write_tokenizer(tmp_path / "tokenizer.json")
    return model, tokenizer, table, type_table


class CountingEmbedder:
    """Wraps an Embedder and counts the passages it actually embeds."""

    def __init__(self, embedder: Embedder) -> None:
        self.inner = embedder
        self.embedded: list[str] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_passages(self, texts, progress=None):
        self.embedded.extend(texts)
        return self.inner.embed_passages(texts, progress=progress)


def packs(cache: Path) -> list[Path]:
    return sorted(cache.glob("*/*.pack"))


def test_changing_one_document_embeds_only_that_document(tiny, tmp_path):
    model, tokenizer, table, type_table = tiny
    cache = tmp_path / "embeddings"
    first = CountingEmbedder(Embedder(model, tokenizer, EmbedOptions()))
    matrix, outcome = cached_passage_embeddings(first, TEXTS, "corpus-1", folder=cache)
    assert (outcome.state, outcome.reused, outcome.embedded, outcome.store_vectors) == ("miss", 0, 7, 7)
    assert outcome.store_bytes == packs(cache)[0].stat().st_size
    np.testing.assert_allclose(matrix, reference(TEXTS, table, type_table), rtol=1e-5, atol=1e-6)
    # Same corpus, another batch size and thread count: all reused.
    second = CountingEmbedder(Embedder(model, tokenizer, EmbedOptions(batch_size=2, threads=1)))
    again, outcome = cached_passage_embeddings(second, TEXTS, "corpus-1", folder=cache)
    assert (outcome.state, second.embedded) == ("hit", [])
    np.testing.assert_array_equal(again, matrix)
    # One document edited, one added, order changed: only those two are embedded.
    edited = ["beta alpha", "theta theta", "delta gamma", *TEXTS[:2], *TEXTS[4:6], "zeta"]
    vectors, outcome = cached_passage_embeddings(second, edited, "corpus-2", folder=cache)
    assert sorted(second.embedded) == ["delta gamma", "zeta"]
    assert (outcome.state, outcome.reused, outcome.embedded, outcome.store_vectors) == ("partial", 6, 2, 9)
    np.testing.assert_allclose(vectors, reference(edited, table, type_table), rtol=1e-5, atol=1e-6)
    assert len(packs(cache)) == 2


def test_an_unusable_cache_costs_speed_not_the_start(tiny, tmp_path, monkeypatch):
    # A file where the cache folder belongs (or a full, read-only disk) used to end the
    # adapter with a traceback, after all the embedding was done.
    model, tokenizer, table, type_table = tiny
    expected = reference(TEXTS, table, type_table)
    messages: list[str] = []
    (tmp_path / "rg").mkdir()
    (tmp_path / "rg" / "embeddings").write_text("a file where the folder belongs")
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "rg"))
    matrix, outcome = cached_passage_embeddings(Embedder(model, tokenizer, EmbedOptions()), TEXTS, "c",
                                                log=messages.append)
    np.testing.assert_allclose(matrix, expected, rtol=1e-5, atol=1e-6)
    assert (outcome.state, outcome.embedded) == ("off", len(TEXTS))
    assert len(messages) == 1 and "no vector cache" in messages[0] and "embedding every time" in messages[0]
    # the folder is there, but its store cannot be written: the vectors are still returned
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    first = Embedder(model, tokenizer, EmbedOptions())
    from adapters.embedding_cache import identity_key

    (blocked / identity_key(first)).write_text("a file where the store belongs")
    messages.clear()
    matrix, outcome = cached_passage_embeddings(first, TEXTS, "c", folder=blocked, log=messages.append)
    np.testing.assert_allclose(matrix, expected, rtol=1e-5, atol=1e-6)
    assert outcome.state == "miss" and outcome.embedded == len(TEXTS)
    assert any("cannot write the vector cache" in message and f"{len(TEXTS)} new vectors are used but not kept"
               in message for message in messages)


def test_options_that_change_vectors_get_their_own_store(tiny, tmp_path):
    model, tokenizer, _, _ = tiny
    cache = tmp_path / "embeddings"
    base = cached_passage_embeddings(Embedder(model, tokenizer, EmbedOptions()), TEXTS, "c", folder=cache)[0]
    for options in (EmbedOptions(passage_prefix="eta "), EmbedOptions(pooling="cls"), EmbedOptions(max_length=3)):
        outcome = cached_passage_embeddings(Embedder(model, tokenizer, options), TEXTS, "c", folder=cache)[1]
        assert outcome.state == "miss"
    other_model, _, _ = write_model(tmp_path / "other.onnx", seed=8)
    changed, outcome = cached_passage_embeddings(Embedder(other_model, tokenizer, EmbedOptions()), TEXTS, "c",
                                                 folder=cache)
    assert outcome.state == "miss" and not np.allclose(changed, base)
    assert len([path for path in cache.iterdir() if path.is_dir()]) == 5
    off = CountingEmbedder(Embedder(model, tokenizer, EmbedOptions()))
    assert cached_passage_embeddings(off, TEXTS, "c", folder=cache, use_cache=False)[1].state == "off"
    assert len(off.embedded) == 7 and len(packs(cache)) == 5


@pytest.mark.parametrize("damage", ["truncate", "one value changed"])
def test_a_damaged_pack_is_recomputed_not_trusted(tiny, tmp_path, damage):
    model, tokenizer, _, _ = tiny
    cache = tmp_path / "embeddings"
    embedder = CountingEmbedder(Embedder(model, tokenizer, EmbedOptions()))
    honest, _ = cached_passage_embeddings(embedder, TEXTS, "c", folder=cache)
    (pack,) = packs(cache)
    data = bytearray(pack.read_bytes())
    if damage == "truncate":
        data = data[:100]
    else:
        data[-4:] = np.float32(123.0).tobytes()  # shape and dtype intact, checksum not
    pack.write_bytes(bytes(data))
    messages: list[str] = []
    matrix, outcome = cached_passage_embeddings(embedder, TEXTS, "c", folder=cache, log=messages.append)
    assert (outcome.state, len(embedder.embedded)) == ("miss", 14)
    assert messages == [f"{pack}: unusable cache entry, embedding again"]
    np.testing.assert_array_equal(matrix, honest)
    assert cached_passage_embeddings(embedder, TEXTS, "c", folder=cache)[1].state == "hit"


def test_many_small_updates_are_merged_into_one_pack(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(embedding_cache, "MAX_PACKS", 3)
    model, tokenizer, table, type_table = tiny
    cache = tmp_path / "embeddings"
    embedder = Embedder(model, tokenizer, EmbedOptions())
    for count in range(1, 6):
        cached_passage_embeddings(embedder, TEXTS[:count], f"c{count}", folder=cache)
    assert len(packs(cache)) <= 3
    matrix, outcome = cached_passage_embeddings(embedder, TEXTS[:5], "c5", folder=cache)
    assert outcome.state == "hit" and outcome.store_vectors == 5
    np.testing.assert_allclose(matrix, reference(TEXTS[:5], table, type_table), rtol=1e-5, atol=1e-6)


def test_prune_keeps_what_recent_corpora_use_and_drops_the_rest(tiny, tmp_path):
    model, tokenizer, _, _ = tiny
    cache = tmp_path / "embeddings"
    embedder = Embedder(model, tokenizer, EmbedOptions())
    cached_passage_embeddings(embedder, TEXTS[:4], "old-corpus", folder=cache)
    cached_passage_embeddings(embedder, TEXTS[2:], "new-corpus", folder=cache)
    cached_passage_embeddings(Embedder(model, tokenizer, EmbedOptions(pooling="cls")), TEXTS, "old-corpus",
                              folder=cache)
    (legacy := cache / "whole-corpus.emb").write_bytes(b"format 2")
    long_ago = time.time() - 90 * 86400
    for manifest in cache.glob("*/corpus-old-corpus*.json"):
        os.utime(manifest, (long_ago, long_ago))
    assert sorted(summary.vectors for summary in summarise(cache)) == [7, 7]
    removed, freed = prune(cache, older_than_days=30)
    assert removed == 2 + 7 and freed > 0 and not legacy.exists()
    (summary,) = summarise(cache)
    assert (summary.vectors, summary.corpora) == (5, 1)
    counting = CountingEmbedder(embedder)
    assert cached_passage_embeddings(counting, TEXTS[2:], "new-corpus", folder=cache)[1].state == "hit"
    assert cached_passage_embeddings(counting, TEXTS[:4], "old-corpus", folder=cache)[1].embedded == 2


def test_an_unreadable_manifest_is_reported_as_keeping_nothing_and_pruned(tiny, tmp_path, monkeypatch, capsys):
    from adapters import cache as command

    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "rg"))
    model, tokenizer, _, _ = tiny
    cache = tmp_path / "rg" / "embeddings"
    embedder = Embedder(model, tokenizer, EmbedOptions())
    cached_passage_embeddings(embedder, TEXTS[:4], "kept", folder=cache)
    cached_passage_embeddings(embedder, TEXTS[4:], "broken", folder=cache)
    (broken,) = cache.glob("*/corpus-broken*.json")
    broken.write_text("{not json")
    (summary,) = summarise(cache)
    assert (summary.vectors, summary.corpora, summary.unreadable) == (7, 1, 1)
    assert command.main(["info"]) == 0
    assert "used by 1 corpora, 1 unreadable manifest(s) that keep nothing" in capsys.readouterr().out
    removed, _ = prune(cache, older_than_days=30)  # recent, but unreadable: it names no vector
    assert removed == len(TEXTS) - 4 and not broken.exists()
    (summary,) = summarise(cache)
    assert (summary.vectors, summary.corpora, summary.unreadable) == (4, 1, 0)


def test_unfinished_writes_are_counted_and_pruned_once_abandoned(tiny, tmp_path, monkeypatch, capsys):
    from adapters import cache as command

    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "rg"))
    model, tokenizer, _, _ = tiny
    cache = tmp_path / "rg" / "embeddings"
    cached_passage_embeddings(Embedder(model, tokenizer, EmbedOptions()), TEXTS, "c", folder=cache)
    (store,) = [path for path in cache.iterdir() if path.is_dir()]
    # what an adapter killed mid-write leaves (harness.fsutil's temp names), and one being written now
    abandoned = store / ".pack-1.abc123.tmp"
    abandoned.write_bytes(b"x" * 3_000_000)
    os.utime(abandoned, (time.time() - 2 * 3600,) * 2)
    (tmp_path / "rg" / "bm25").mkdir(parents=True)
    in_progress = tmp_path / "rg" / "bm25" / ".index.bm25.def456.tmp"
    in_progress.write_bytes(b"y" * 1_000_000)
    assert command.main(["info"]) == 0
    assert "unfinished writes: 2 temp file(s), 4.0 MB" in capsys.readouterr().out
    assert command.main(["prune"]) == 0  # the store is in use: only the abandoned write goes
    assert "pruned 0 embedding vectors, 0 BM25 index files, 0 stale model graphs and 1 unfinished writes, " \
        "3.0 MB freed" in capsys.readouterr().out
    assert not abandoned.exists() and in_progress.exists() and any(store.glob("*.pack"))


def test_cache_command_reports_sizes_and_prunes(tiny, tmp_path, monkeypatch, capsys):
    from adapters import cache as command

    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "rg"))
    model, tokenizer, _, _ = tiny
    cached_passage_embeddings(Embedder(model, tokenizer, EmbedOptions()), TEXTS, "c",
                              folder=tmp_path / "rg" / "embeddings")
    stale = tmp_path / "rg" / "bm25" / "stale.bm25"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"x" * 10)
    os.utime(stale, (time.time() - 40 * 86400,) * 2)
    assert command.main(["info"]) == 0
    out = capsys.readouterr().out
    assert ": 7 vectors, " in out and "used by 1 corpora" in out and "bm25 stale.bm25" in out
    assert command.main(["prune"]) == 0
    assert capsys.readouterr().out.startswith("pruned 0 embedding vectors, 1 BM25 index files, 0 stale model graphs")
    assert command.main(["prune", "--older-than", "0"]) == 0
    assert capsys.readouterr().out.startswith("pruned 7 embedding vectors")


def test_prune_removes_the_model_graphs_this_install_never_loads(tiny, tmp_path, monkeypatch, capsys):
    # Each rewrite recipe or onnxruntime upgrade builds a new graph (90 MB for the default
    # model); the old ones are never loaded again and were kept for good.
    import json

    from adapters import cache as command

    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "rg"))
    model, tokenizer, _, _ = tiny
    Embedder(model, tokenizer, EmbedOptions(graph="fused"))  # builds the current graph
    folder = tmp_path / "rg" / "models" / "optimised"
    (current,) = folder.glob("*.json")
    record = json.loads(current.read_text())
    old_recipe = folder / "aaaaaaaaaaaa-fused-0000000000000000"
    record_old = {**record, "key": {**record["key"], "recipe": "an earlier recipe"}}
    old_recipe.with_suffix(".json").write_text(json.dumps(record_old))
    old_recipe.with_suffix(".onnx").write_bytes(b"x" * 2_000_000)
    withdrawn = folder / "bbbbbbbbbbbb-int8-0000000000000000"  # a variant that no longer exists
    withdrawn.with_suffix(".json").write_text(json.dumps({**record, "key": {**record["key"], "variant": "int8"}}))
    withdrawn.with_suffix(".onnx").write_bytes(b"y" * 1_000_000)
    building = folder / "cccccccccccc-fused-0000000000000000.onnx"  # its sidecar is written last
    building.write_bytes(b"z" * 10)
    abandoned = folder / "dddddddddddd-fused-0000000000000000.onnx"
    abandoned.write_bytes(b"w" * 10)
    os.utime(abandoned, (time.time() - 2 * 3600,) * 2)
    assert command.main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"graph {current.stem}: " in out and out.count("used by this install") == 1
    assert out.count("stale: another recipe or version") == 4
    assert command.main(["prune"]) == 0
    assert ", 3 stale model graphs and " in capsys.readouterr().out
    assert sorted(path.name for path in folder.iterdir()) == sorted(
        [current.name, current.with_suffix(".onnx").name, building.name])
    messages: list[str] = []
    Embedder(model, tokenizer, EmbedOptions(graph="fused"), log=messages.append)
    assert messages == []  # the current graph is still read back, not rebuilt


@pytest.mark.parametrize("command", [["info"], ["prune"]])
def test_an_unusable_cache_folder_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, command):
    from adapters import cache as cache_command

    (tmp_path / "rg").mkdir()
    (tmp_path / "rg" / "bm25").write_text("a file where the BM25 cache folder belongs")
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "rg"))
    assert cache_command.main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cache: error: ") and str(tmp_path / "rg" / "bm25") in err
