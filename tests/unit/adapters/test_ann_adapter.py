"""`python -m adapters.ann`: the HNSW graph (exact when its effort covers the corpus, one graph per seed, another
graph for another seed), and the adapter as a real subprocess on the tiny model and a tiny corpus."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import require_modules
from tests.process_helpers import ask_adapter_module

require_modules("numpy", "onnxruntime", "tokenizers", "onnx")
require_modules("faiss", extra="ann")

import numpy as np  # noqa: E402

from adapters.ann import HnswIndex  # noqa: E402
from tests.tiny_onnx import reference, write_model, write_tokenizer  # noqa: E402

DOCS = [
    {"id": "d-two", "text": "alpha beta"},
    {"id": "d-one", "text": "gamma"},
    {"id": "d-three", "text": "delta epsilon zeta"},
    {"id": "d-four", "text": "theta eta"},
]


def unit_vectors(count: int, dimensions: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, dimensions)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def exact_top(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    """Brute force by numpy: the k rows of highest dot product."""
    return [int(i) for i in np.argsort(-(matrix @ query), kind="stable")[:k]]


def test_with_effort_covering_the_corpus_the_graph_finds_the_exact_top_k():
    matrix, queries = unit_vectors(300, 16, 1), unit_vectors(20, 16, 2)
    ids = [f"doc-{i:03d}" for i in range(300)]
    index = HnswIndex(ids, matrix, m=16, ef_construction=300, ef_search=300, seed=5)
    for query in queries:
        hits = index.search(query, 10)
        assert [doc_id for doc_id, _ in hits] == [ids[i] for i in exact_top(matrix, query, 10)]
        np.testing.assert_allclose([score for _, score in hits], np.sort(matrix @ query)[::-1][:10], rtol=1e-5)


def test_one_seed_is_one_graph_and_another_seed_another():
    matrix, queries = unit_vectors(2000, 32, 3), unit_vectors(100, 32, 4)
    ids = [str(i) for i in range(2000)]

    def rankings(seed: int) -> list[list[str]]:
        index = HnswIndex(ids, matrix, m=4, ef_construction=16, ef_search=10, seed=seed)
        return [[doc_id for doc_id, _ in index.search(query, 10)] for query in queries]

    first = rankings(1)
    assert rankings(1) == first  # rebuilt with the same seed: the same graph, the same answers
    assert rankings(2) != first  # low effort over a hard corpus: another seed misses other neighbours


def test_an_empty_corpus_answers_nothing():
    assert HnswIndex([], np.zeros((0, 4), dtype=np.float32), m=4, ef_construction=8, ef_search=8, seed=0) \
        .search(np.ones(4, dtype=np.float32), 5) == []


def run_adapter(args: list[str], requests: list[dict], tmp_path: Path) -> tuple[int, list[dict], str]:
    corpus = tmp_path / "corpus"
    corpus.mkdir(exist_ok=True)
    (corpus / "tiny.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in DOCS))
    env = {**os.environ, "RETRIEVAL_GATE_CACHE": str(tmp_path / "cache"), "HARNESS_CORPUS_DIR": str(corpus)}
    return ask_adapter_module("adapters.ann", args, requests, env)


@pytest.fixture
def tiny_model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-model"
    folder.mkdir()
    write_model(folder / "model.onnx")
    write_tokenizer(folder / "tokenizer.json")
    return folder


def test_the_adapter_answers_as_cosine_search_with_its_graph_in_the_banner(tiny_model_dir, tmp_path):
    args = ["--model-dir", str(tiny_model_dir), "--threads", "1", "--seed", "7", "--ef-search", "8", "--m", "4"]
    code, lines, stderr = run_adapter(args, [{"kind": "tiny", "query": "alpha beta gamma", "k": 3}], tmp_path)
    assert code == 0, stderr
    banner, answer = lines
    assert banner["ready"] is True and banner["name"] == "ann"
    assert {key: banner["settings"][key] for key in ("m", "ef_search", "ef_construction")} == \
        {"m": 4, "ef_search": 8, "ef_construction": 40}
    assert "seed" not in banner["settings"] and banner["index"]["tiny"]["seed"] == 7  # runs of other seeds: one backend
    # four documents, effort 8: the graph reaches every one, so the answer is exact cosine, recomputed by numpy
    _, table, type_table = write_model(tmp_path / "same.onnx")
    scores = reference([doc["text"] for doc in DOCS], table, type_table) @ \
        reference(["alpha beta gamma"], table, type_table)[0]
    expected = sorted(zip([doc["id"] for doc in DOCS], scores.tolist()), key=lambda pair: -pair[1])[:3]
    assert answer["ids"] == [doc_id for doc_id, _ in expected]
    np.testing.assert_allclose(answer["scores"], [score for _, score in expected], rtol=1e-5)


@pytest.mark.parametrize("args, message", [
    (["--m", "1"], "ann: error: --m: must be at least 2, got 1\n"),
    (["--ef-search", "0"], "ann: error: --ef-search: must be at least 1, got 0\n"),
])
def test_bad_graph_options_exit_2_with_one_line(tiny_model_dir, tmp_path, args, message):
    code, lines, stderr = run_adapter(["--model-dir", str(tiny_model_dir), *args], [], tmp_path)
    assert (code, lines, stderr) == (2, [], message)
