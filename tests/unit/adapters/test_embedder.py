"""Tests for adapters.embedder: pooling, normalisation, batching and progress on a tiny ONNX model.

The tiny model's hidden state for token t is a row of a random table (plus a token-type row),
so every expected vector is recomputed here with plain numpy from the token ids.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import require_default_model, require_modules

require_modules("numpy", "onnxruntime", "tokenizers", "onnx")
import numpy as np  # noqa: E402
import onnx  # noqa: E402


from adapters.embedder import (  # noqa: E402
    EmbedderError, EmbedOptions, Embedder, plan_batches, pooling_from_config)
from tests.tiny_onnx import DIM, reference, write_model, write_tokenizer  # noqa: E402

@pytest.fixture
def tiny(tmp_path: Path):
    model, table, type_table = write_model(tmp_path / "model.onnx")
    tokenizer = write_tokenizer(tmp_path / "tokenizer.json")
    return model, tokenizer, table, type_table


# Lengths 1..9 words, in no order, so length sorting reorders them and batches pad.
TEXTS = ["alpha beta gamma", "delta", "epsilon zeta eta theta alpha beta gamma delta epsilon",
         "theta theta", "gamma unknownword alpha beta zeta", "eta", "beta alpha"]


@pytest.mark.parametrize("batch_size, batch_tokens", [(1, 256), (3, 256), (16, 256), (16, 12)])
def test_mean_pooling_and_normalisation_match_numpy(tiny, batch_size, batch_tokens):
    model, tokenizer, table, type_table = tiny
    embedder = Embedder(model, tokenizer, EmbedOptions(pooling="mean", normalize=True, batch_size=batch_size,
                                                       batch_tokens=batch_tokens))
    vectors = embedder.embed(TEXTS)
    expected = reference(TEXTS, table, type_table)
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert embedder.dimensions == DIM


def test_texts_tokenised_in_chunks_embed_as_one_call_would(tiny, monkeypatch):
    """More texts than a tokenising chunk (one of 2 here): every text keeps its own ids and its place."""
    import adapters.embedder as embedder_module

    model, tokenizer, table, type_table = tiny
    monkeypatch.setattr(embedder_module, "TOKENIZE_CHUNK", 2)
    texts = TEXTS * 3  # 21 texts: 10 full chunks and a last one of 1
    vectors = Embedder(model, tokenizer, EmbedOptions(batch_size=4)).embed(texts, prefix="zeta ")
    expected = reference(["zeta " + text for text in texts], table, type_table)
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)


def test_batches_respect_both_the_text_and_the_token_cap():
    lengths = [10, 9, 4, 4, 3, 2, 2, 2, 1]  # sorted longest first, as embed() sorts them
    # Token cap 20: [10, 9] pads to 2 x 10 = 20; [4, 4, 3, 2, 2] pads to 5 x 4 = 20; then [2, 2, 1].
    assert plan_batches(lengths, 32, 20) == [[0, 1], [2, 3, 4, 5, 6], [7, 8]]
    # Text cap 3 binds first.
    assert plan_batches(lengths, 3, 1000) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    # A text longer than the token cap still goes alone, never dropped.
    assert plan_batches([300, 5], 32, 256) == [[0], [1]]
    assert plan_batches([], 32, 256) == []


def test_cls_pooling_without_normalisation_matches_numpy(tiny):
    model, tokenizer, table, type_table = tiny
    embedder = Embedder(model, tokenizer, EmbedOptions(pooling="cls", normalize=False, batch_size=4))
    vectors = embedder.embed(TEXTS)
    np.testing.assert_allclose(vectors, reference(TEXTS, table, type_table, pooling="cls", normalize=False),
                               rtol=1e-5, atol=1e-6)
    # cls without normalisation is exactly E[CLS] + T[0] for every text
    np.testing.assert_allclose(vectors[0], table[2] + type_table[0], rtol=1e-6)


def test_max_length_replaces_the_tokenizer_files_own_truncation_and_padding(tiny):
    """tokenizer.json says pad and cut at 8; our --max-length (here 5 and 32) decides instead."""
    model, tokenizer, table, type_table = tiny
    long_text = "alpha beta gamma delta epsilon zeta eta theta alpha beta"  # 10 words, 12 tokens
    for max_length in (5, 32):
        embedder = Embedder(model, tokenizer, EmbedOptions(max_length=max_length, normalize=False))
        got = embedder.embed([long_text, "eta"])
        expected = reference([long_text, "eta"], table, type_table, normalize=False, max_length=max_length)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_token_type_ids_fed_only_when_the_model_declares_them(tmp_path):
    tokenizer = write_tokenizer(tmp_path / "tokenizer.json")
    # A model without the input would reject a token_type_ids feed; one with it would fail without it.
    model, table, _ = write_model(tmp_path / "plain.onnx", token_types=False)
    plain = Embedder(model, tokenizer, EmbedOptions())
    assert not plain.uses_token_types
    np.testing.assert_allclose(plain.embed(TEXTS), reference(TEXTS, table, np.zeros((2, DIM), np.float32)),
                               rtol=1e-5, atol=1e-6)
    model, table, type_table = write_model(tmp_path / "typed.onnx", int32_inputs=True)
    typed = Embedder(model, tokenizer, EmbedOptions())
    assert typed.uses_token_types
    np.testing.assert_allclose(typed.embed(TEXTS), reference(TEXTS, table, type_table), rtol=1e-5, atol=1e-6)


def test_query_and_passage_prefixes_are_prepended(tiny):
    model, tokenizer, table, type_table = tiny
    embedder = Embedder(model, tokenizer, EmbedOptions(query_prefix="zeta ", passage_prefix="theta eta "))
    np.testing.assert_allclose(embedder.embed_query("alpha"), reference(["zeta alpha"], table, type_table)[0],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(embedder.embed_passages(["alpha"]),
                               reference(["theta eta alpha"], table, type_table), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("config, expected", [
    ({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}, "cls"),
    ({"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True}, "mean"),
])
def test_pooling_is_read_from_the_sentence_transformers_config(tmp_path, config, expected):
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(config))
    assert pooling_from_config(tmp_path) == expected


def test_pooling_config_absent_or_unsupported(tmp_path):
    assert pooling_from_config(tmp_path) is None
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    with pytest.raises(EmbedderError, match=r"1_Pooling/config\.json: pooling \['pooling_mode_max_tokens'\] "
                                            r"is not supported; use --pooling with one of mean, cls"):
        pooling_from_config(tmp_path)


def test_a_corrupt_model_file_is_a_clear_error(tiny):
    model, tokenizer, _, _ = tiny
    model.write_bytes(model.read_bytes()[: len(model.read_bytes()) // 2])
    with pytest.raises(EmbedderError, match=rf"^{model}: not a loadable ONNX model: "):
        Embedder(model, tokenizer, EmbedOptions())


def test_a_corrupt_tokenizer_or_missing_file_is_a_clear_error(tiny, tmp_path):
    model, tokenizer, _, _ = tiny
    tokenizer.write_text('{"version": "1.0", "model": ')
    with pytest.raises(EmbedderError, match=rf"^{tokenizer}: not a loadable tokenizer\.json: "):
        Embedder(model, tokenizer, EmbedOptions())
    with pytest.raises(EmbedderError, match=r"nothing\.onnx: cannot read: No such file"):
        Embedder(tmp_path / "nothing.onnx", tokenizer, EmbedOptions())


def test_bad_options_name_the_option(tiny):
    model, tokenizer, _, _ = tiny
    with pytest.raises(EmbedderError, match=r"--batch-size 0: must be at least 1"):
        Embedder(model, tokenizer, EmbedOptions(batch_size=0))
    with pytest.raises(EmbedderError, match=r"--batch-tokens 0: must be at least 1"):
        Embedder(model, tokenizer, EmbedOptions(batch_tokens=0))
    with pytest.raises(EmbedderError, match=r"--max-length 1: must be at least 2"):
        Embedder(model, tokenizer, EmbedOptions(max_length=1))


def test_a_max_length_beyond_the_models_positions_fails_naming_the_length(tmp_path):
    model, _, _ = write_model(tmp_path / "model.onnx", positions=8)
    tokenizer = write_tokenizer(tmp_path / "tokenizer.json")
    embedder = Embedder(model, tokenizer, EmbedOptions(max_length=12))
    assert embedder.embed(["alpha beta gamma"]).shape == (1, DIM)  # 5 tokens: within the 8 positions
    with pytest.raises(EmbedderError, match=r"inference failed on 1 text\(s\) of 12 tokens \(--max-length 12\): "):
        embedder.embed(["alpha " * 20])


def test_progress_is_reported_after_every_batch_up_to_the_total(tiny):
    model, tokenizer, _, _ = tiny
    calls: list[tuple[int, int]] = []
    Embedder(model, tokenizer, EmbedOptions(batch_size=3)).embed(TEXTS, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(3, 7), (6, 7), (7, 7)]


def test_with_many_workers_batches_run_at_once_and_land_in_order(tiny, monkeypatch):
    """threads 3: batches go to the one-thread session three at a time; vectors and progress keep their order."""
    import threading

    model, tokenizer, table, type_table = tiny
    embedder = Embedder(model, tokenizer, EmbedOptions(batch_size=1, threads=3))
    assert embedder.workers == 3 and embedder.parallel_session is None  # made on first use
    # Two runs must be inside the model at once to pass this barrier: a serial loop times out on it.
    together = threading.Barrier(2, timeout=10)
    sessions = []
    run = embedder._run

    def meeting_run(token_ids, type_ids, session=None):
        sessions.append(session)
        if len(sessions) <= 2:
            together.wait()
        return run(token_ids, type_ids, session)

    monkeypatch.setattr(embedder, "_run", meeting_run)
    calls: list[tuple[int, int]] = []
    texts = TEXTS * 3
    vectors = embedder.embed(texts, progress=lambda done, total: calls.append((done, total)))
    np.testing.assert_allclose(vectors, reference(texts, table, type_table), rtol=1e-5, atol=1e-6)
    assert calls == [(done, 21) for done in range(1, 22)]
    assert embedder.parallel_session not in (None, embedder.session)
    assert len(sessions) == 21 and all(session is embedder.parallel_session for session in sessions)
    # One text (a query) runs alone on the session with `threads` intra-op threads.
    monkeypatch.setattr(embedder, "_run", lambda token_ids, type_ids, session=None: sessions.append(session) or run(
        token_ids, type_ids, session))
    sessions.clear()
    embedder.embed_query("alpha")
    assert sessions == [None]


def test_a_failing_batch_stops_the_parallel_run_with_its_error(tiny, monkeypatch):
    """The first batch fails late; meanwhile the other worker may only finish what was queued."""
    import time

    model, tokenizer, _, _ = tiny
    embedder = Embedder(model, tokenizer, EmbedOptions(batch_size=1, threads=2))
    started = []
    run = embedder._run

    def first_fails(token_ids, type_ids, session=None):
        started.append(len(token_ids))
        if len(started) == 1:
            time.sleep(0.5)
            raise EmbedderError("model.onnx: inference failed: out of memory")
        return run(token_ids, type_ids, session)

    monkeypatch.setattr(embedder, "_run", first_fails)
    with pytest.raises(EmbedderError, match="inference failed: out of memory"):
        embedder.embed(TEXTS * 10)
    # At most two batches per worker are queued: the other 66 never start.
    assert 1 <= len(started) <= 4


def test_a_model_file_changed_after_start_up_is_not_loaded_for_the_parallel_session(tiny):
    """The second session must run the bytes the first one runs: a changed file means one batch at a time."""
    model, tokenizer, table, type_table = tiny
    said: list[str] = []
    embedder = Embedder(model, tokenizer, EmbedOptions(batch_size=1, threads=2), log=said.append)
    model.write_bytes(b"not the model any more")
    texts = TEXTS * 2
    np.testing.assert_allclose(embedder.embed(texts), reference(texts, table, type_table), rtol=1e-5, atol=1e-6)
    assert embedder.parallel_session is None
    assert said == [f"{model}: changed since start-up; embedding one batch at a time"]


def test_one_thread_keeps_a_single_session(tiny):
    model, tokenizer, table, type_table = tiny
    embedder = Embedder(model, tokenizer, EmbedOptions(batch_size=2, threads=1))
    assert embedder.workers == 1 and embedder.parallel_session is None
    np.testing.assert_allclose(embedder.embed(TEXTS), reference(TEXTS, table, type_table), rtol=1e-5, atol=1e-6)


def test_default_model_ranks_a_paraphrase_above_an_unrelated_sentence():
    folder = require_default_model()
    embedder = Embedder(folder / "model.onnx", folder / "tokenizer.json", EmbedOptions(pooling="mean"))
    query = embedder.embed_query("How do I read the contents of a file?")
    passages = embedder.embed_passages([
        "Open the file and read everything it contains into a string.",  # paraphrase
        "The festival parade was cancelled because of heavy rain.",      # unrelated
    ])
    paraphrase, unrelated = passages @ query
    assert embedder.dimensions == 384
    assert paraphrase > unrelated + 0.2, (paraphrase, unrelated)
