"""--long-documents: the embedder reads a long document's first tokens, or every window of it
(docs/adapters.md, "Passages").

With `windows`, a document scores as its best window: checked against the same adapter
serving each window as a document of its own (so the expected score is the embedder's own
cosine for that text, not a value recomputed here), and a document whose matching words sit
past its first tokens is found only that way. Hits carry no window unless the kind is in
passage mode. Real adapter processes, the tiny ONNX model of tests/tiny_onnx.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, require_modules

WINDOW, OVERLAP = 24, 6  # characters: a few of the tiny model's words per window
FILLER = "eta " * 12     # 48 characters of a word no query below asks for


@pytest.fixture
def corpus(tmp_path: Path):
    for module in ("numpy", "onnxruntime", "tokenizers", "onnx"):
        require_modules(module)
    from tests.tiny_onnx import write_model_dir

    model_dir = write_model_dir(tmp_path / "model")  # its tokenizer truncates at 8 tokens: a long tail is unseen
    docs = [{"id": "late", "text": FILLER + "beta gamma beta gamma"},    # its match past the first tokens
            {"id": "early", "text": "beta delta " + FILLER},
            {"id": "other", "text": "zeta epsilon zeta epsilon"},
            {"id": "short", "text": "alpha theta"}]
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "tiny.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    env = {**os.environ, "RETRIEVAL_GATE_CACHE": str(tmp_path / "cache"), "HARNESS_CORPUS_DIR": str(folder),
           "PYTHONPATH": str(REPO_ROOT)}
    return model_dir, docs, env, tmp_path


def ask(module: str, args: list[str], requests: list[dict], env: dict) -> list[dict]:
    stdin = "".join(json.dumps(request) + "\n" for request in requests)
    done = subprocess.run([sys.executable, "-m", module, *args], input=stdin, capture_output=True, text=True,
                          env=env, cwd=REPO_ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [line for line in map(json.loads, done.stdout.splitlines()) if "progress" not in line]


def windows_of(text: str) -> list[str]:
    """The windows adapters/passages.py cuts (written here from its docstring: every window-overlap
    characters, the last one ending at the text's end)."""
    if len(text) <= WINDOW:
        return [text]
    starts = list(range(0, len(text) - WINDOW, WINDOW - OVERLAP)) + [len(text) - WINDOW]
    return [text[start:start + WINDOW] for start in starts]


QUERY = {"kind": "tiny", "query": "gamma beta gamma", "k": 4}


def test_windows_score_a_document_by_its_best_window(corpus):
    model_dir, docs, env, tmp_path = corpus
    sizes = ["--window-chars", str(WINDOW), "--window-overlap", str(OVERLAP)]
    banner, answer = ask("adapters.onnx_embed", ["--model-dir", str(model_dir), "--long-documents", "windows",
                                                 *sizes], [QUERY], env)
    # Every window served as a document of its own, read whole (each fits the model's 8 tokens).
    split = tmp_path / "split"
    split.mkdir()
    pieces = [{"id": f"{doc['id']}#{n}", "text": text} for doc in docs for n, text in enumerate(windows_of(doc["text"]))]
    (split / "tiny.jsonl").write_text("".join(json.dumps(piece) + "\n" for piece in pieces))
    _, pieces_answer = ask("adapters.onnx_embed", ["--model-dir", str(model_dir)],
                           [{**QUERY, "k": len(pieces)}], {**env, "HARNESS_CORPUS_DIR": str(split)})
    best: dict[str, float] = {}
    for piece_id, score in zip(pieces_answer["ids"], pieces_answer["scores"]):
        best.setdefault(piece_id.split("#")[0], score)  # best first: the first seen is the best window
    assert answer["ids"][0] == "late"
    assert dict(zip(answer["ids"], answer["scores"])) == pytest.approx(best, abs=1e-6)
    assert "passages" not in answer  # the kind is not in passage mode: hits show no window
    assert banner["settings"]["long_documents"] == "windows"
    assert banner["index"]["tiny"]["passages"]["count"] == len(pieces)


def test_first_tokens_never_see_a_late_match(corpus):
    model_dir, _, env, _ = corpus
    banner, answer = ask("adapters.onnx_embed", ["--model-dir", str(model_dir)], [QUERY], env)
    assert banner["settings"]["long_documents"] == "first"  # the embedder alone: first tokens by default
    assert answer["ids"][0] != "late"


def test_the_hybrid_reads_windows_by_default_and_shows_none(corpus):
    model_dir, _, env, _ = corpus
    sizes = ["--window-chars", str(WINDOW), "--window-overlap", str(OVERLAP)]
    banner, answer = ask("adapters.hybrid", ["--model-dir", str(model_dir), *sizes], [QUERY], env)
    assert banner["settings"]["embedder"]["long_documents"] == "windows"
    assert banner["index"]["tiny"]["embedder"]["passages"]["window"] == WINDOW
    assert "passages" not in answer and answer["ids"][0] == "late"
    _, first = ask("adapters.hybrid", ["--model-dir", str(model_dir), "--long-documents", "first", "--passages",
                                       "off", *sizes], [QUERY], env)
    assert "passages" not in first
