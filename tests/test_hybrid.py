"""Tests for adapters.hybrid: RRF by hand, and the fused adapter against its two parts run separately."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.hybrid import reciprocal_rank_fusion

ROOT = Path(__file__).resolve().parents[1]


def test_rrf_hand_computed():
    lexical = ["x", "y", "z"]
    semantic = ["z", "w"]
    # z: 1/(60+3) + 1/(60+1) = 0.015873 + 0.016393 = 0.032266; x: 1/61; y: 1/62; w: 1/62 (tie: w before y)
    assert reciprocal_rank_fusion([lexical, semantic], 60) == [
        ("z", pytest.approx(1 / 63 + 1 / 61, abs=1e-15)), ("x", 1 / 61), ("w", 1 / 62), ("y", 1 / 62)]
    # k=0: plain reciprocal ranks; x 1, z 1/3 + 1 = 1.333, y 1/2, w 1/2
    assert [doc_id for doc_id, _ in reciprocal_rank_fusion([lexical, semantic], 0)] == ["z", "x", "w", "y"]


def test_rrf_symmetric_ranks_tie_exactly_and_break_by_id():
    # b is 1st and 3rd, a is 3rd and 1st: equal sums (1/61 + 1/63), so id decides; c is 2nd in both.
    fused = reciprocal_rank_fusion([["b", "c", "a"], ["a", "c", "b"]], 60)
    assert [doc_id for doc_id, _ in fused] == ["a", "b", "c"]
    assert fused[0][1] == fused[1][1]
    assert reciprocal_rank_fusion([], 60) == []
    with pytest.raises(ValueError, match="repeats an id"):
        reciprocal_rank_fusion([["a", "a"]], 60)


def reference_rrf(rankings: list[list[str]], rrf_k: float) -> list[str]:
    """Written independently of the module: sum 1/(k+rank) per id, sort by (-score, id)."""
    totals: dict[str, float] = {}
    for ranking in rankings:
        for position, doc_id in enumerate(ranking):
            totals[doc_id] = totals.get(doc_id, 0.0) + 1.0 / (rrf_k + position + 1)
    return sorted(totals, key=lambda doc_id: (-totals[doc_id], doc_id))


def run(module: str, args: list[str], requests: list[dict], env: dict[str, str]) -> tuple[int, list[dict], str]:
    stdin = "".join(json.dumps(request) + "\n" for request in requests)
    completed = subprocess.run([sys.executable, "-m", module, *args], input=stdin, capture_output=True,
                               text=True, env=env, cwd=ROOT, timeout=120, check=False)
    return completed.returncode, [json.loads(line) for line in completed.stdout.splitlines()], completed.stderr


@pytest.fixture
def setup(tmp_path: Path):
    pytest.importorskip("numpy")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("onnx")
    from tests.tiny_onnx import write_model, write_tokenizer

    model_dir = tmp_path / "model"
    model_dir.mkdir()
    write_model(model_dir / "model.onnx")
    write_tokenizer(model_dir / "tokenizer.json")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    docs = [{"id": f"doc-{i:02d}", "text": " ".join(words[j % 8] for j in range(i, i + 1 + i % 4))}
            for i in range(12)]
    (corpus / "tiny.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    env = {**os.environ, "RETRIEVAL_GATE_CACHE": str(tmp_path / "cache"), "HARNESS_CORPUS_DIR": str(corpus)}
    return model_dir, env


QUERIES = [{"kind": "tiny", "query": "beta gamma", "k": 3}, {"kind": "tiny", "query": "theta alpha alpha", "k": 5},
           {"kind": "tiny", "query": "zeta", "k": 12}]


def test_hybrid_equals_rrf_of_its_two_parts_run_separately(setup):
    model_dir, env = setup
    candidates = 4
    code, bm25_lines, stderr = run("adapters.bm25", [], [{**q, "k": max(q["k"], candidates)} for q in QUERIES], env)
    assert code == 0, stderr
    code, embed_lines, stderr = run("adapters.onnx_embed", ["--model-dir", str(model_dir)],
                                    [{**q, "k": max(q["k"], candidates)} for q in QUERIES], env)
    assert code == 0, stderr
    code, hybrid_lines, stderr = run("adapters.hybrid", ["--model-dir", str(model_dir), "--candidates",
                                                         str(candidates), "--rrf-k", "10"],
                                     [*QUERIES, {"kind": "nope", "query": "x", "k": 1}], env)
    assert code == 0, stderr
    banner, *answers, unknown = hybrid_lines
    for query, lexical, semantic, fused in zip(QUERIES, bm25_lines[1:], embed_lines[1:], answers):
        expected = reference_rrf([lexical["ids"], semantic["ids"]], 10)[: query["k"]]
        assert fused["ids"] == expected, query
        assert fused["scores"] == sorted(fused["scores"], reverse=True)
    # k=3 with 4 candidates: only the top 4 of each part can appear
    first_pool = set(bm25_lines[1]["ids"][:candidates]) | set(embed_lines[1]["ids"][:candidates])
    assert set(answers[0]["ids"]) <= first_pool
    assert unknown == {"ids": [], "error": "unknown kind 'nope': this adapter serves ['tiny']"}
    assert banner["fusion"] == {"method": "rrf", "rrf_k": 10.0, "candidates": 4}
    assert banner["bm25"]["name"] == "bm25" and banner["embedder"]["dimensions"] == 6
    assert set(banner["index"]["tiny"]) == {"bm25", "embedder"}
    assert banner["index"]["tiny"]["embedder"]["cache"] == "hit"  # onnx_embed above filled the shared cache


@pytest.mark.parametrize("args, message", [
    (["--rrf-k", "-1"], "argument --rrf-k: must be a finite number >= 0, got -1"),
    (["--candidates", "0"], "argument --candidates: must be at least 1, got 0"),
])
def test_bad_fusion_options_exit_2(setup, args, message):
    model_dir, env = setup
    code, lines, stderr = run("adapters.hybrid", ["--model-dir", str(model_dir), *args], [], env)
    assert (code, lines) == (2, [])
    assert stderr.strip().endswith(message)
