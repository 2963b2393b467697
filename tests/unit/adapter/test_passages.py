"""Passages on the wire (protocol, serve, adapter/windows.py), through a run, and the adapters' passage mode."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from harness.adapter.protocol import decode_response, encode_response
from harness.adapter.serve import serve
from harness.adapter.windows import check_windows
from harness.commands.cli import main
from harness.errors import ProtocolError
from tests.builders import PAGE, query, write_set
from tests.conftest import REPO_ROOT, require_modules

REPO = REPO_ROOT
FIXTURE = REPO / "tests" / "fixtures" / "adapters" / "windows.py"


def test_decode_passages_and_their_shape_errors():
    line = '{"ids": ["a", "b"], "passages": [{"start": 0, "end": 5}, null]}'
    assert decode_response(line, qid="q", k=10).passages == ((0, 5), None)
    assert decode_response('{"ids": ["a"]}', qid="q", k=10).passages is None
    for bad, why in (('[{"start": 0, "end": 5}]', "'passages' must be a list as long as 'ids'"),
                     ('[{"start": 5, "end": 5}, null]', r"'passages'\[0\] must be null or"),
                     ('[{"start": -1, "end": 5}, null]', r"'passages'\[0\]"),
                     ('[null, {"start": 0, "end": 2.5}]', r"'passages'\[1\]"),
                     ('[null, {"start": 0, "end": 2, "x": 1}]', r"'passages'\[1\]"),
                     ('[null, [0, 2]]', r"'passages'\[1\]")):
        with pytest.raises(ProtocolError, match=r"query q: " + why):
            decode_response('{"ids": ["a", "b"], "passages": %s}' % bad, qid="q", k=10)
    assert json.loads(encode_response(["a", "b"], [1.0, 0.5], passages=[(0, 5), None]))["passages"] == [
        {"start": 0, "end": 5}, None]


def test_serve_accepts_hits_with_a_window():
    def search(kind, text, k):
        return [("a", 2.0, (3, 9)), ("b", 1.0)] if text == "mixed" else [("a", 2.0, None)]
    out = io.BytesIO()
    serve(search, stdin=io.BytesIO(b'{"kind": "x", "query": "mixed", "k": 5}\n{"kind": "x", "query": "q", "k": 5}\n'),
          stdout=out)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["passages"] == [{"start": 3, "end": 9}, None] and second["passages"] == [None]


def test_window_bounds_and_limit():
    check_windows(["a", "b"], [(0, 10), None], {"a": 10}, 10, "q")  # exactly the limit, exactly the end
    with pytest.raises(ProtocolError, match=r"query q: passages: window 0-11 of 'a' \(rank 1\) is 11 characters, "
                                            r"more than --max-window 10"):
        check_windows(["a"], [(0, 11)], {"a": 100}, 10, "q")
    with pytest.raises(ProtocolError, match=r"window 5-12 of 'a' \(rank 1\) ends past the document \(10 characters\)"):
        check_windows(["a"], [(5, 12)], {"a": 10}, 100, "q")
    check_windows(["unknown"], [(0, 50)], {}, 100, "q")  # not in the corpus: only the limit applies
    check_windows(["a"], [None], {"a": 10}, 10, "q")  # a short document shown whole is fine
    with pytest.raises(ProtocolError, match=r"null \(the whole of 'a', rank 1, 11 characters\) is longer"):
        check_windows(["a"], [None], {"a": 11}, 10, "q")


def _run(tmp_path, window, *extra):
    folder = write_set(tmp_path / "ev", [query()])
    out = tmp_path / "report.json"
    env = {**os.environ, "WINDOW": window}
    code = subprocess.run([sys.executable, "-m", "harness", "--set", str(folder), "--out", str(out), "--no-gate",
                           *extra, "--adapter", "--", sys.executable, str(FIXTURE)],
                          capture_output=True, text=True, timeout=60, cwd=REPO, env=env)
    return code, json.loads(out.read_text()) if out.exists() else None


def test_a_run_scores_the_window_shown(tmp_path):
    # The window 0..27 holds "The limit is 500 now." (6..27): current evidence at rank 1.
    completed, report = _run(tmp_path, "0,27")
    assert completed.returncode == 0, completed.stderr
    row = report["sets"][0]["queries"][0]
    assert row["passages"] == [[0, 27], None]
    assert row["evidence"]["ku@1"] == 1.0 and row["evidence"]["stale_before_current"] == 0.0
    # 0..26 cuts the current span by one character, and the stale one is not shown either
    completed, report = _run(tmp_path, "0,26")
    assert report["sets"][0]["queries"][0]["evidence"]["ku@1"] == 0.0
    assert report["sets"][0]["aggregates"]["evidence"]["overall"]["ku@1"] == {
        "mean": 0.0, "judged": 1, "null": 0, "sum": 0.0}


def test_a_window_longer_than_max_window_is_a_backend_failure(tmp_path):
    completed, _ = _run(tmp_path, "0,27", "--max-window", "20")
    assert completed.returncode == 3
    assert "query q1: passages: window 0-27 of 'page' (rank 1) is 27 characters, more than --max-window 20" \
        in completed.stderr
    completed, _ = _run(tmp_path, f"0,{len(PAGE) + 1}")
    assert completed.returncode == 3 and "ends past the document" in completed.stderr


def test_a_passage_list_of_the_wrong_length_is_a_protocol_error(tmp_path):
    folder = write_set(tmp_path / "ev", [query()])
    code = main(["--set", str(folder), "--out", str(tmp_path / "r.json"), "--no-gate", "--adapter", "--",
                 sys.executable, str(FIXTURE), "--bad-shape"])
    assert code == 3


# -- the reference adapters' passage mode (adapters/passages.py) -------------------------------

passages = pytest.importorskip("adapters.passages")


def test_split_windows_with_overlap():
    settings = passages.WindowSettings(window=10, overlap=4)
    # step 6: 0-10, 6-16, then the last one is moved back to end at 20: 10-20
    assert passages.split(20, settings) == [(0, 10), (6, 16), (10, 20)]
    assert passages.split(7, settings) == [(0, 7)]
    assert passages.split(16, settings) == [(0, 10), (6, 16)]
    with pytest.raises(ValueError, match="--window-overlap"):
        passages.WindowSettings(window=10, overlap=10).check()


def test_each_document_takes_its_best_window():
    corpus = passages.PassageCorpus.build(["a", "b"], ["x" * 20, "y" * 5], "hash", passages.WindowSettings(10, 4))
    assert corpus.owner == [0, 0, 0, 1] and corpus.spans[2] == (10, 20)
    asked = []

    def search(depth):
        asked.append(depth)
        ranked = [(2, 3.0), (0, 2.5), (1, 2.0), (3, 1.0)]  # windows of a crowd the top
        return ranked[:depth]
    assert passages.best_windows(corpus, search, 2) == [("a", 3.0, (10, 20)), ("b", 1.0, (0, 5))]
    assert asked == [4]  # 4k = 8 capped at the 4 windows there are
    fused = passages.attach_windows([("b", 0.5), ("a", 0.4), ("c", 0.3)],
                                    [[("a", 1.0, (0, 10)), ("b", 0.9, (0, 5))], [("b", 1.0, (1, 5))]])
    assert fused == [("b", 0.5, (1, 5)), ("a", 0.4, (0, 10)), ("c", 0.3, None)]


def test_bm25_in_passage_mode_returns_the_best_window(tmp_path):
    require_modules("numpy")
    text = "Setup. " + "filler words here. " * 20 + "The rate limit is 500 requests. " + "more filler. " * 20
    (tmp_path / "ev.jsonl").write_text(json.dumps({"id": "page", "text": text}) + "\n"
                                       + json.dumps({"id": "other", "text": "nothing relevant"}) + "\n")
    (tmp_path / "ev.passages.json").write_text('{"window": 100, "overlap": 20}')
    request = '{"kind": "ev", "query": "rate limit requests", "k": 2, "qid": "q"}\n'
    env = {**os.environ, "HARNESS_CORPUS_DIR": str(tmp_path)}
    completed = subprocess.run([sys.executable, "-m", "adapters.bm25", "--no-cache"], input=request,
                               capture_output=True, text=True, timeout=60, cwd=REPO, env=env)
    answer = json.loads(completed.stdout.splitlines()[-1])
    start, end = answer["passages"][0]["start"], answer["passages"][0]["end"]
    assert answer["ids"][0] == "page" and end - start == 100
    assert "The rate limit is 500 requests." in text[start:end]
    off = subprocess.run([sys.executable, "-m", "adapters.bm25", "--no-cache", "--passages", "off"], input=request,
                         capture_output=True, text=True, timeout=60, cwd=REPO, env=env)
    assert "passages" not in json.loads(off.stdout.splitlines()[-1])


def test_check_adapter_checks_windows_against_the_set(tmp_path):
    # The windows fixture shows 0..27 of `page` for every query: inside the page, within the limit.
    folder = write_set(tmp_path / "ev", [query()])
    for window, verdict in (("0,27", "pass"), (f"0,{len(PAGE) + 5}", "FAIL")):
        completed = subprocess.run([sys.executable, "-m", "harness", "check-adapter", "--set", str(folder),
                                    "--queries", "20", "--", sys.executable, str(FIXTURE)], capture_output=True,
                                   text=True, timeout=120, cwd=REPO, env={**os.environ, "WINDOW": window})
        row = next(line for line in completed.stdout.splitlines() if line.startswith("passages"))
        assert row.split()[1] == verdict, completed.stdout
    assert "ends past the document" in row


def test_onnx_and_hybrid_in_passage_mode_show_a_window_of_each_hit(tmp_path):
    for module in ("numpy", "onnxruntime", "tokenizers", "onnx"):
        require_modules(module)
    from tests.tiny_onnx import write_model_dir

    model_dir = write_model_dir(tmp_path / "model")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    texts = {f"doc-{i}": " ".join(words[(i * j) % 8] for j in range(30)) for i in range(1, 6)}
    (corpus / "tiny.jsonl").write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in texts.items()))
    env = {**os.environ, "RETRIEVAL_GATE_CACHE": str(tmp_path / "cache"), "HARNESS_CORPUS_DIR": str(corpus)}
    request = json.dumps({"kind": "tiny", "query": "beta gamma", "k": 3}) + "\n"
    answers = {}
    for module in ("adapters.onnx_embed", "adapters.hybrid", "adapters.bm25"):
        extra = [] if module == "adapters.bm25" else ["--model-dir", str(model_dir)]
        completed = subprocess.run([sys.executable, "-m", module, *extra, "--passages", "on", "--window-chars", "40",
                                    "--window-overlap", "10"], input=request, capture_output=True, text=True,
                                   env=env, cwd=REPO, timeout=120)
        assert completed.returncode == 0, completed.stderr
        answers[module] = json.loads(completed.stdout.splitlines()[-1])
    for module, answer in answers.items():
        assert len(answer["passages"]) == len(answer["ids"]) == 3, module
        for doc_id, window in zip(answer["ids"], answer["passages"]):
            assert window["end"] - window["start"] <= 40 and window["end"] <= len(texts[doc_id]), module
    # each fused hit shows the window one of its two parts showed for that document
    parts = {(d, w["start"]) for m in ("adapters.onnx_embed", "adapters.bm25")
             for d, w in zip(answers[m]["ids"], answers[m]["passages"])}
    hybrid = answers["adapters.hybrid"]
    shown = [(d, w["start"]) for d, w in zip(hybrid["ids"], hybrid["passages"])]
    assert any(pair in parts for pair in shown)


def test_the_stale_before_current_contract_fails_the_gate(tmp_path):
    # PAGE: "Setup\nThe limit is 500 now.\nHistory\nUntil 2024-03-04 the limit was 300.\n"; the
    # window from 28 shows the History line (stale) and not the current one: the contract breaks.
    folder = write_set(tmp_path / "ev", [query(forbid_stale_before_current=True)])
    baseline = tmp_path / "baseline.json"

    def gate(window, *extra):
        return subprocess.run([sys.executable, "-m", "harness", "--set", str(folder), "--baseline", str(baseline),
                               "--out", str(tmp_path / "r.json"), *extra, "--adapter", "--", sys.executable,
                               str(FIXTURE)], capture_output=True, text=True, timeout=60, cwd=REPO,
                              env={**os.environ, "WINDOW": window})
    assert gate("0,27", "--update-baseline", "--yes").returncode == 0
    assert gate("0,27").returncode == 0
    broken = gate(f"28,{len(PAGE)}")
    assert broken.returncode == 1
    assert "1 hard contract(s) broken in q1" in broken.stdout
