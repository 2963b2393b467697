"""Tests for adapters.hybrid and adapters.fusion: fusion by hand, and the fused adapter against its two parts run separately."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from adapters.fusion import FusionSettings, fuse, normalised, read_table
from adapters.hybrid import reciprocal_rank_fusion
from tests.conftest import REPO_ROOT, require_modules
from tests.process_helpers import ask_adapter_module

ROOT = REPO_ROOT


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


@pytest.fixture
def setup(tmp_path: Path):
    require_modules("numpy", "onnxruntime", "tokenizers", "onnx")
    from tests.tiny_onnx import write_model_dir

    model_dir = write_model_dir(tmp_path / "model")
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
    code, bm25_lines, stderr = ask_adapter_module("adapters.bm25", [], [{**q, "k": max(q["k"], candidates)} for q in QUERIES], env)
    assert code == 0, stderr
    code, embed_lines, stderr = ask_adapter_module("adapters.onnx_embed", ["--model-dir", str(model_dir)],
                                    [{**q, "k": max(q["k"], candidates)} for q in QUERIES], env)
    assert code == 0, stderr
    code, hybrid_lines, stderr = ask_adapter_module("adapters.hybrid", ["--model-dir", str(model_dir), "--candidates",
                                                         str(candidates), "--rrf-k", "10", "--fusion", "rrf",
                                                         "--weight", "0.5"],
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
    assert banner["fusion"] == {"tiny": {"method": "rrf", "weight": 0.5, "rrf_k": 10.0, "candidates": 4}}
    assert banner["bm25"]["name"] == "bm25" and banner["embedder"]["dimensions"] == 6
    assert set(banner["index"]["tiny"]) == {"bm25", "embedder"}
    assert banner["index"]["tiny"]["embedder"]["cache"] == "hit"  # onnx_embed above filled the shared cache


def reference_zscore(lexical: dict, semantic: dict, weight: float) -> list[str]:
    """Independent z-score fusion over each part's ids and scores (population std; missing gets the list's min z)."""
    def z(part: dict) -> dict:
        values = list(part.values())
        mean = sum(values) / len(values)
        std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        return {doc_id: ((v - mean) / std if std else 0.0) for doc_id, v in part.items()}
    lz, sz = z(lexical), z(semantic)
    floor_l, floor_s = min(lz.values()), min(sz.values())
    totals = {doc_id: (1 - weight) * lz.get(doc_id, floor_l) + weight * sz.get(doc_id, floor_s)
              for doc_id in set(lz) | set(sz)}
    return sorted(totals, key=lambda doc_id: (-totals[doc_id], doc_id))


def reference_weighted_rrf(lexical: list[str], semantic: list[str], weight: float, rrf_k: float) -> list[tuple[str, float]]:
    """Independent weighted RRF: (1 - w) / (k + lexical rank) + w / (k + semantic rank), ranks from 1."""
    totals: dict[str, float] = {}
    for share, ranking in ((1 - weight, lexical), (weight, semantic)):
        for rank, doc_id in enumerate(ranking, start=1):
            totals[doc_id] = totals.get(doc_id, 0.0) + share / (rrf_k + rank)
    return sorted(totals.items(), key=lambda pair: (-pair[1], pair[0]))


def test_default_hybrid_is_weighted_rrf_of_its_parts(setup):
    # The defaults for a corpus the tuned table does not know (docs/performance.md): RRF, weight 0.6,
    # k 10, 100 candidates, the embedder reading every window (this corpus's documents are one window each).
    model_dir, env = setup
    depth = 100  # the default candidate depth covers this 12-document corpus
    requests = [{**q, "k": depth} for q in QUERIES]
    _, bm25_lines, _ = ask_adapter_module("adapters.bm25", [], requests, env)
    _, embed_lines, _ = ask_adapter_module("adapters.onnx_embed", ["--model-dir", str(model_dir), "--long-documents", "windows"],
                            requests, env)
    code, hybrid_lines, stderr = ask_adapter_module("adapters.hybrid", ["--model-dir", str(model_dir)], QUERIES, env)
    assert code == 0, stderr
    assert hybrid_lines[0]["fusion"] == {"tiny": {"method": "rrf", "weight": 0.6, "rrf_k": 10.0, "candidates": 100}}
    for query, lexical, semantic, fused in zip(QUERIES, bm25_lines[1:], embed_lines[1:], hybrid_lines[1:]):
        expected = reference_weighted_rrf(lexical["ids"], semantic["ids"], 0.6, 10.0)[: query["k"]]
        assert fused["ids"] == [doc_id for doc_id, _ in expected], query
        assert fused["scores"] == pytest.approx([score for _, score in expected], abs=1e-12)


def test_zscore_hybrid_is_zscore_fusion_of_its_parts(setup):
    model_dir, env = setup
    depth = 20
    requests = [{**q, "k": depth} for q in QUERIES]
    _, bm25_lines, _ = ask_adapter_module("adapters.bm25", [], requests, env)
    _, embed_lines, _ = ask_adapter_module("adapters.onnx_embed", ["--model-dir", str(model_dir)], requests, env)
    code, hybrid_lines, stderr = ask_adapter_module("adapters.hybrid", ["--model-dir", str(model_dir), "--fusion", "zscore",
                                                         "--weight", "0.5", "--candidates", "20"], QUERIES, env)
    assert code == 0, stderr
    assert hybrid_lines[0]["fusion"] == {"tiny": {"method": "zscore", "weight": 0.5, "candidates": 20}}
    for query, lexical, semantic, fused in zip(QUERIES, bm25_lines[1:], embed_lines[1:], hybrid_lines[1:]):
        expected = reference_zscore(dict(zip(lexical["ids"], lexical["scores"])),
                                    dict(zip(semantic["ids"], semantic["scores"])), 0.5)
        assert fused["ids"] == expected[: query["k"]], query


def test_weighted_rrf_hand_computed():
    lexical = [("x", 9.0), ("y", 5.0)]
    semantic = [("y", 0.9), ("z", 0.1)]
    fused = fuse(lexical, semantic, FusionSettings("rrf", weight=0.8, rrf_k=0, candidates=10))
    # x: 0.2 * 1/1 = 0.2; y: 0.2 * 1/2 + 0.8 * 1/1 = 0.9; z: 0.8 * 1/2 = 0.4
    assert fused == [("y", pytest.approx(0.9)), ("z", pytest.approx(0.4)), ("x", pytest.approx(0.2))]
    # weight 0.5 ranks exactly as plain RRF
    plain = [doc for doc, _ in reciprocal_rank_fusion([["x", "y"], ["y", "z"]], 60)]
    assert [doc for doc, _ in fuse(lexical, semantic, FusionSettings("rrf", 0.5, 60, 10))] == plain


def test_minmax_and_zscore_hand_computed():
    lexical = [("a", 10.0), ("b", 6.0), ("c", 2.0)]
    semantic = [("c", 0.8), ("d", 0.6), ("a", 0.4)]
    # minmax: lexical a 1, b 0.5, c 0; semantic c 1, d 0.5, a 0; missing = 0.
    # weight 0.5: a 0.5, b 0.25, c 0.5, d 0.25 -> a, c (id order), b, d
    fused = fuse(lexical, semantic, FusionSettings("minmax", 0.5, 60, 10))
    assert [doc for doc, _ in fused] == ["a", "c", "b", "d"]
    assert [score for _, score in fused] == pytest.approx([0.5, 0.5, 0.25, 0.25])
    # zscore of (10, 6, 2): mean 6, std sqrt(32/3) = 3.266; z = 1.2247, 0, -1.2247; missing gets -1.2247
    values, floor = normalised(lexical, "zscore", 60)
    assert values == {"a": pytest.approx(1.224745), "b": 0.0, "c": pytest.approx(-1.224745)}
    assert floor == pytest.approx(-1.224745)
    fused = dict(fuse(lexical, semantic, FusionSettings("zscore", 0.25, 60, 10)))
    # d: 0.75 * -1.2247 (missing from lexical) + 0.25 * 0 = -0.9186
    assert fused["d"] == pytest.approx(-0.918559, abs=1e-6)
    # candidate depth cuts each part before normalising: with 1 candidate each part has one doc
    assert fuse(lexical, semantic, FusionSettings("minmax", 0.5, 60, 1)) == [("a", 0.5), ("c", 0.5)]
    with pytest.raises(ValueError, match="repeats an id"):
        fuse([("a", 1.0), ("a", 2.0)], [], FusionSettings())


@pytest.mark.parametrize("args, message", [
    (["--weight", "1.5"], "argument --weight: must be between 0 and 1, got 1.5"),
    (["--fusion", "max"], "argument --fusion: invalid choice: 'max' (choose from 'rrf', 'minmax', 'zscore')"),
    (["--rrf-k", "-1"], "argument --rrf-k: must be a finite number >= 0, got -1"),
    (["--candidates", "0"], "argument --candidates: must be at least 1, got 0"),
])
def test_bad_fusion_options_exit_2(setup, args, message):
    model_dir, env = setup
    code, lines, stderr = ask_adapter_module("adapters.hybrid", ["--model-dir", str(model_dir), *args], [], env)
    assert (code, lines) == (2, [])
    assert stderr.strip().endswith(message)


def _table(path: Path, entries: list[dict]) -> Path:
    path.write_text(json.dumps({"format": 1, "corpora": entries}))
    return path


def test_the_tuned_table_gives_its_corpus_its_settings_and_options_replace_them_field_by_field(setup, tmp_path):
    model_dir, env = setup
    corpus = Path(env["HARNESS_CORPUS_DIR"]) / "tiny.jsonl"
    sha = hashlib.sha256(corpus.read_bytes()).hexdigest()
    tuned = {"method": "rrf", "weight": 0.25, "rrf_k": 2.0, "candidates": 20}
    table = _table(tmp_path / "table.json", [{"kind": "tiny", "corpus_sha256": sha, "fusion": tuned},
                                              {"kind": "tiny", "corpus_sha256": "f" * 64,
                                               "fusion": {"method": "zscore", "weight": 1.0, "candidates": 5}}])
    requests = [{**q, "k": 20} for q in QUERIES]
    _, bm25_lines, _ = ask_adapter_module("adapters.bm25", [], requests, env)
    _, embed_lines, _ = ask_adapter_module("adapters.onnx_embed", ["--model-dir", str(model_dir)], requests, env)
    model = ["--model-dir", str(model_dir), "--fusion-table", str(table)]
    code, lines, stderr = ask_adapter_module("adapters.hybrid", model, QUERIES, env)
    assert code == 0, stderr
    assert lines[0]["fusion"] == {"tiny": tuned} and lines[0]["settings"]["fusion"] == {"tiny": tuned}
    for query, lexical, semantic, fused in zip(QUERIES, bm25_lines[1:], embed_lines[1:], lines[1:]):
        expected = reference_weighted_rrf(lexical["ids"], semantic["ids"], 0.25, 2.0)[: query["k"]]
        assert fused["ids"] == [doc_id for doc_id, _ in expected], query
    _, lines, _ = ask_adapter_module("adapters.hybrid", [*model, "--weight", "0.9"], [], env)  # one field replaced
    assert lines[0]["fusion"] == {"tiny": {**tuned, "weight": 0.9}}
    _, lines, _ = ask_adapter_module("adapters.hybrid", [*model, "--untuned"], [], env)  # the defaults
    assert lines[0]["fusion"] == {"tiny": {"method": "rrf", "weight": 0.6, "rrf_k": 10.0, "candidates": 100}}
    corpus.write_text(corpus.read_text() + json.dumps({"id": "doc-new", "text": "omega"}) + "\n")
    _, lines, _ = ask_adapter_module("adapters.hybrid", model, [], env)  # another corpus under the same kind: not tuned for
    assert lines[0]["fusion"] == {"tiny": {"method": "rrf", "weight": 0.6, "rrf_k": 10.0, "candidates": 100}}


@pytest.mark.parametrize("document, message", [
    ("[1, 2", "not JSON"),
    ('{"format": 2, "corpora": []}', "format: expected 1"),
    ('{"format": 1, "corpora": [{"kind": "tiny"}]}', "corpora[0]: needs a kind and a corpus_sha256 (strings)"),
    ('{"format": 1, "corpora": [{"kind": "tiny", "corpus_sha256": "ab", "fusion": {"method": "rrf", "weight": 2, '
     '"candidates": 5}}]}', "corpora[0].fusion: weight: must be between 0 and 1, got 2.0"),
    ('{"format": 1, "corpora": [{"kind": "tiny", "corpus_sha256": "ab", "fusion": {"method": "rrf", "weight": 1, '
     '"candidates": 5, "k": 3}}]}', "corpora[0].fusion: unknown key 'k'"),
])
def test_a_bad_table_is_one_line_naming_the_file_and_field_and_exit_2(setup, tmp_path, document, message):
    model_dir, env = setup
    table = tmp_path / "table.json"
    table.write_text(document)
    code, lines, stderr = ask_adapter_module("adapters.hybrid", ["--model-dir", str(model_dir), "--fusion-table", str(table)], [], env)
    assert (code, lines) == (2, [])
    assert stderr.strip().splitlines()[-1].endswith(f"{table}: {message}")


def test_read_table_maps_kind_and_corpus_to_settings(tmp_path):
    table = _table(tmp_path / "t.json", [{"kind": "a", "corpus_sha256": "1" * 64, "sets": ["a"],
                                          "fusion": {"method": "minmax", "weight": 0.3, "candidates": 50}}])
    assert read_table(table) == {("a", "1" * 64): FusionSettings("minmax", 0.3, 60.0, 50)}
    with pytest.raises(ValueError, match=r"t.json: corpora\[0\].fusion.candidates: must be an integer"):
        read_table(_table(tmp_path / "t.json", [{"kind": "a", "corpus_sha256": "1",
                                                  "fusion": {"method": "rrf", "weight": 0.3, "candidates": 5.0}}]))


SHIPPED = ("code", "code-agent", "dedupe", "dedupe-hard", "memory", "memory-hard", "wiki", "wiki-hard")


def test_the_shipped_table_holds_settings_for_every_shipped_set_as_its_corpus_is_now(tmp_path):
    # A set whose corpus changed since tuning would silently get the defaults: re-tune
    # (python -m benchmarks.tune_hybrid --write) whenever this fails.
    from adapters.fusion import TUNED_TABLE
    from harness.errors import SetError
    from harness.sets.loader import load_set
    from harness.sets.materialise import materialise_corpora

    entries = json.loads(TUNED_TABLE.read_text(encoding="utf-8"))["corpora"]
    table = read_table(TUNED_TABLE)
    for name in SHIPPED:
        try:
            query_set = load_set(ROOT / "sets" / name, offline=True)
        except SetError as error:  # the code sets' archives are fetched once: `python -m harness sets verify code`
            if os.environ.get("CI") == "true":
                pytest.fail(f"set {name} not available offline ({error})")
            continue
        folder = tmp_path / name
        folder.mkdir()
        sha = hashlib.sha256(materialise_corpora([query_set], folder)[query_set.kind].read_bytes()).hexdigest()
        assert (query_set.kind, sha) in table, f"{name}: no tuned fusion for its corpus as it is now"
        assert any(entry["kind"] == query_set.kind and name in entry["sets"] for entry in entries), name
