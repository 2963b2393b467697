"""Tests for `python -m adapters.onnx_embed`: a real subprocess speaking protocol v1, tie-breaking, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.fsutil import file_sha256

from tests.conftest import REPO_ROOT, require_default_model, require_modules
from tests.process_helpers import ask_adapter_module

require_modules("numpy", "onnxruntime", "tokenizers", "onnx")

import numpy as np  # noqa: E402

from adapters import model_store  # noqa: E402
from adapters.onnx_embed import EmbeddingIndex, top_k_indices  # noqa: E402
from tests.tiny_onnx import DIM, reference, write_model, write_tokenizer  # noqa: E402

ROOT = REPO_ROOT
DOCS = [
    {"id": "d-two", "text": "alpha beta"},
    {"id": "d-one", "text": "gamma"},
    {"id": "d-three", "text": "delta epsilon zeta"},
    {"id": "d-copy", "text": "alpha beta"},  # same text as d-two: equal scores, tie broken by id
]


def run_adapter(args: list[str], requests: list[dict], *, cache: Path, corpus_dir: Path | None = None,
                extra_env: dict[str, str] | None = None) -> tuple[int, list[dict], str]:
    env = {**os.environ, "RETRIEVAL_GATE_CACHE": str(cache), **(extra_env or {})}
    env.pop("HARNESS_CORPUS_DIR", None)
    if corpus_dir is not None:
        env["HARNESS_CORPUS_DIR"] = str(corpus_dir)
    return ask_adapter_module("adapters.onnx_embed", args, requests, env)


@pytest.fixture
def tiny_model_dir(tmp_path: Path) -> Path:
    """A model folder like a sentence-transformers export: model.onnx, tokenizer.json, 1_Pooling (cls)."""
    folder = tmp_path / "tiny-model"
    folder.mkdir()
    write_model(folder / "model.onnx")
    write_tokenizer(folder / "tokenizer.json")
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": False,
                                                                  "pooling_mode_mean_tokens": True}))
    return folder


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "tiny.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in DOCS))
    return folder


def test_serves_exact_cosine_top_k_with_banner_and_cache(tiny_model_dir, corpus_dir, tmp_path):
    cache = tmp_path / "cache"
    query = {"kind": "tiny", "query": "alpha beta gamma", "k": 3}
    args = ["--model-dir", str(tiny_model_dir), "--query-prefix", "eta ", "--threads", "1"]
    code, lines, stderr = run_adapter(args, [query, {"kind": "other", "query": "x", "k": 1}],
                                      cache=cache, corpus_dir=corpus_dir)
    assert code == 0, stderr
    banner, answer, unknown = lines
    assert banner["ready"] is True and banner["name"] == "onnx_embed"
    embedder = banner["embedder"]
    assert embedder["model_sha256"] == file_sha256(tiny_model_dir / "model.onnx")
    assert (embedder["dimensions"], embedder["pooling"], embedder["query_prefix"], embedder["passage_prefix"]) == \
        (DIM, "mean", "eta ", "")
    assert banner["index"]["tiny"]["cache"] == "miss" and banner["index"]["tiny"]["docs"] == 4
    assert isinstance(banner["model"], str) and "dims=6" in banner["model"] and "pooling=mean" in banner["model"]

    # Expected ranking recomputed with numpy: cosine of the prefixed query with every document.
    _, table, type_table = write_model(tmp_path / "same.onnx")  # same seed: the same tables
    docs = reference([doc["text"] for doc in DOCS], table, type_table)
    scores = docs @ reference(["eta alpha beta gamma"], table, type_table)[0]
    expected = sorted(zip([doc["id"] for doc in DOCS], scores.tolist()), key=lambda pair: (-pair[1], pair[0]))[:3]
    assert answer["ids"] == [doc_id for doc_id, _ in expected]
    assert answer["ids"].index("d-copy") < answer["ids"].index("d-two")  # equal scores: id ascending
    np.testing.assert_allclose(answer["scores"], [score for _, score in expected], rtol=1e-5)
    assert unknown == {"ids": [], "error": "unknown kind 'other': this adapter serves ['tiny']"}

    code, lines, stderr = run_adapter(args, [query], cache=cache, corpus_dir=corpus_dir)
    assert code == 0, stderr
    assert lines[0]["index"]["tiny"]["cache"] == "hit"
    assert lines[1] == answer


def test_cli_pooling_overrides_the_pooling_config(tiny_model_dir, corpus_dir, tmp_path):
    code, lines, stderr = run_adapter(["--model", str(tiny_model_dir / "model.onnx"), "--tokenizer",
                                       str(tiny_model_dir / "tokenizer.json"), "--pooling", "cls", "--no-cache"],
                                      [{"kind": "tiny", "query": "gamma", "k": 10}], cache=tmp_path / "cache",
                                      corpus_dir=corpus_dir)
    assert code == 0, stderr
    assert lines[0]["embedder"]["pooling"] == "cls" and lines[0]["index"]["tiny"]["cache"] == "off"
    # cls pooling without prefixes: every vector is E[CLS] + T[0], so all four tie and ids decide.
    assert lines[1]["ids"] == ["d-copy", "d-one", "d-three", "d-two"]
    assert not (tmp_path / "cache" / "embeddings").exists() or not any((tmp_path / "cache" / "embeddings").iterdir())


@pytest.mark.parametrize("args, message", [
    (["--offline"], "the default model is not in {cache}/models/all-MiniLM-L6-v2-int8 and --offline forbids "
                    "fetching it; run `python -m adapters.onnx_embed fetch-model` first"),
    (["--model", "m.onnx"], "--model and --tokenizer go together (or use --model-dir)"),
])
def test_configuration_errors_exit_2_with_one_line(corpus_dir, tmp_path, args, message):
    cache = tmp_path / "empty-cache"
    code, lines, stderr = run_adapter(args, [], cache=cache, corpus_dir=corpus_dir)
    assert (code, lines) == (2, [])
    assert stderr == f"onnx_embed: error: {message.format(cache=cache)}\n"


def test_a_corrupt_model_exits_2_naming_the_file(tiny_model_dir, corpus_dir, tmp_path):
    model = tiny_model_dir / "model.onnx"
    model.write_bytes(b"\x08\x07garbage" * 10)
    code, lines, stderr = run_adapter(["--model-dir", str(tiny_model_dir)], [], cache=tmp_path / "c",
                                      corpus_dir=corpus_dir)
    assert (code, lines) == (2, [])
    assert stderr.startswith(f"onnx_embed: error: {model}: not a loadable ONNX model: ")
    assert stderr.count("\n") == 1


def test_a_corrupt_default_model_in_the_cache_is_named_with_the_fix(corpus_dir, tmp_path):
    """Pointing the cache at a copy whose model.onnx lost bytes: verification names it and the fix."""
    folder = tmp_path / "cache" / "models" / model_store.DEFAULT_MODEL.folder
    folder.mkdir(parents=True)
    for pinned in model_store.DEFAULT_MODEL.files:
        (folder / pinned.keep_as).parent.mkdir(parents=True, exist_ok=True)
        (folder / pinned.keep_as).write_bytes(b"{}")
    code, lines, stderr = run_adapter(["--offline"], [], cache=tmp_path / "cache", corpus_dir=corpus_dir)
    assert (code, lines) == (2, [])
    assert "1_Pooling/config.json: sha256 " in stderr or "model.onnx: sha256 " in stderr
    assert "run `python -m adapters.onnx_embed fetch-model --force`" in stderr


def test_no_corpus_is_a_configuration_error(tiny_model_dir, tmp_path):
    code, lines, stderr = run_adapter(["--model-dir", str(tiny_model_dir)], [], cache=tmp_path / "c")
    assert (code, lines) == (2, [])
    assert stderr.startswith("onnx_embed: error: no corpus: set HARNESS_CORPUS_DIR")


def test_top_k_breaks_ties_by_id_even_at_the_cut():
    ids = ["e", "b", "d", "a", "c"]
    id_rank = np.array([4, 1, 3, 0, 2])  # rank of each id in sorted order: a=0, b=1, c=2, d=3, e=4
    scores = np.array([0.5, 0.9, 0.5, 0.5, 0.1], dtype=np.float32)
    # 0.9 first (b), then the three tied at 0.5 in id order: a, d, e; k=2 cuts inside the tie.
    assert [ids[i] for i in top_k_indices(scores, id_rank, 2)] == ["b", "a"]
    assert [ids[i] for i in top_k_indices(scores, id_rank, 4)] == ["b", "a", "d", "e"]
    assert [ids[i] for i in top_k_indices(scores, id_rank, 50)] == ["b", "a", "d", "e", "c"]


def test_embedding_index_orders_scores_and_ids():
    matrix = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    index = EmbeddingIndex(["z", "y", "x", "w"], matrix)
    hits = index.search(np.array([1, 0], dtype=np.float32), 3)
    assert hits == [("x", 1.0), ("z", 1.0), ("w", pytest.approx(0.6))]
    assert EmbeddingIndex([], np.zeros((0, 2), np.float32)).search(np.array([1, 0], np.float32), 3) == []


def test_default_model_adapter_end_to_end(tmp_path):
    """The pinned model through the real adapter, offline: banner digest is the pinned one; the paraphrase wins."""
    folder = require_default_model()
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    (cache / "models" / model_store.DEFAULT_MODEL.folder).symlink_to(folder)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    docs = [{"id": "paraphrase", "text": "Open the file and read everything it contains into a string."},
            {"id": "unrelated", "text": "The festival parade was cancelled because of heavy rain."}]
    (corpus / "notes.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    code, lines, stderr = run_adapter(["--offline", "--threads", "1"],
                                      [{"kind": "notes", "query": "How do I read the contents of a file?", "k": 2}],
                                      cache=cache, corpus_dir=corpus)
    assert code == 0, stderr
    banner, answer = lines
    assert banner["embedder"]["model_sha256"] == model_store.DEFAULT_MODEL.wheels[0].files[0].sha256
    assert (banner["embedder"]["dimensions"], banner["embedder"]["pooling"]) == (384, "mean")
    assert answer["ids"] == ["paraphrase", "unrelated"]


@pytest.mark.parametrize("module", ["adapters.onnx_embed", "adapters.hybrid"])
def test_a_missing_package_is_an_install_hint_not_a_traceback(module, tmp_path):
    """onnxruntime made unimportable in a real child: one line naming it and the extra to install, exit 2."""
    code = (f"import sys; sys.modules['onnxruntime'] = None; from {module} import main; "
            "sys.exit(main(['--corpus', 'x=unused.jsonl']))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                               env={**os.environ, "RETRIEVAL_GATE_CACHE": str(tmp_path)}, timeout=60, check=False)
    name = module.split(".")[1]
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr == (f"{name}: error: missing onnxruntime; install with: "
                                "pip install 'retrieval-gate[onnx]' (numpy, onnxruntime, tokenizers)\n")
