"""Tests for `python -m adapters.bm25` run as a real subprocess speaking protocol v1, and its Python API."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, require_modules

require_modules("numpy")

from adapters import bm25  # noqa: E402
from adapters.corpus_dir import CorpusFileError  # noqa: E402
from adapters.tokenizer import tokenize  # noqa: E402

REPO = REPO_ROOT
TIMEOUT_SECONDS = 60  # a hang must fail the test, not the CI job

CODE = [
    {"id": "src/config.py", "text": "def parseConfigFile(path):\n    \"\"\"Parse a config file.\"\"\""},
    {"id": "src/http.py", "text": "class HTTPResponse:\n    \"\"\"A response from http.client.\"\"\""},
    {"id": "src/io.py", "text": "def read_config(stream): return stream.read()"},
    {"id": "docs/a.md", "text": "How to read a file and parse it."},
    {"id": "docs/b.md", "text": "How to read a file and parse it."},  # exact duplicate of a.md: a tie
]
FACTS = [
    {"id": "fact-1", "text": "The build server runs on Tuesdays."},
    {"id": "fact-2", "text": "Deploys are frozen on Fridays."},
]


def reference_ranking(docs: list[dict[str, str]], query: str, k1: float = 0.9,
                      b: float = 0.4) -> list[tuple[str, float]]:
    """Lucene BM25 written out plainly over the tokeniser's tokens (an independent re-implementation)."""
    tokens = {doc["id"]: tokenize(doc["text"]) for doc in docs}
    n_docs = len(tokens)
    avgdl = sum(map(len, tokens.values())) / n_docs
    scored = []
    for doc_id, doc in tokens.items():
        score = 0.0
        for token in tokenize(query):
            tf = doc.count(token)
            if tf:
                df = sum(1 for other in tokens.values() if token in other)
                idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
                score += idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        if score > 0:
            scored.append((doc_id, score))
    return sorted(scored, key=lambda pair: (-round(pair[1], 9), pair[0]))


def write_corpus(folder: Path, kind: str, docs: list[dict[str, str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{kind}.jsonl"
    path.write_text("".join(json.dumps(doc) + "\n" for doc in docs), encoding="utf-8")
    return path


def run_adapter(tmp_path: Path, requests: list[dict[str, object]], *args: str,
                corpus_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "HARNESS_CORPUS_DIR"}
    env["RETRIEVAL_GATE_CACHE"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    if corpus_dir is not None:
        env["HARNESS_CORPUS_DIR"] = str(corpus_dir)
    stdin = "".join(json.dumps(request) + "\n" for request in requests)
    return subprocess.run([sys.executable, "-m", "adapters.bm25", *args], input=stdin, capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=TIMEOUT_SECONDS)


def lines(done: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    """The banner and answers; start-up progress lines (checked by tests/unit/adapters/test_startup.py) left out."""
    parsed = [json.loads(line) for line in done.stdout.splitlines()]
    return [line for line in parsed if "progress" not in line]


@pytest.fixture
def corpora(tmp_path: Path) -> Path:
    folder = tmp_path / "corpora"
    write_corpus(folder, "code", CODE)
    write_corpus(folder, "memory", FACTS)
    return folder


QUERIES = ["parse config file", "HTTPResponse", "read a file", "http.client", "nothing matches zzz"]


def test_banner_answers_and_scores_match_the_reference(tmp_path: Path, corpora: Path) -> None:
    requests = [{"kind": "code", "query": query, "k": 3, "qid": f"q{i}"} for i, query in enumerate(QUERIES)]
    done = run_adapter(tmp_path, requests, corpus_dir=corpora)
    assert done.returncode == 0, done.stderr
    banner, *answers = lines(done)
    assert banner["ready"] is True and banner["name"] == "bm25" and isinstance(banner["version"], str)
    assert banner["settings"] == {"k1": 0.9, "b": 0.4, "stopwords": False, "stem": False, "tokenizer": 1}
    code = banner["index"]["code"]
    assert code["docs"] == len(CODE)
    assert code["vocab"] == len({token for doc in CODE for token in tokenize(doc["text"])})
    assert code["content_hash"] == hashlib.sha256((corpora / "code.jsonl").read_bytes()).hexdigest()
    assert code["cache"] == "miss" and code["build_seconds"] >= 0
    assert banner["index"]["memory"]["docs"] == len(FACTS)
    assert len(answers) == len(QUERIES)
    for query, answer in zip(QUERIES, answers):
        expected = reference_ranking(CODE, query)[:3]
        assert answer["ids"] == [doc_id for doc_id, _ in expected], query
        # an empty answer carries no scores (harness.adapter.serve)
        assert answer.get("scores", []) == pytest.approx([score for _, score in expected], abs=1e-6), query
        assert "error" not in answer
    # The duplicate documents tie exactly and come back in id order.
    tied = answers[2]
    assert tied["ids"][:2] == ["docs/a.md", "docs/b.md"] and tied["scores"][0] == tied["scores"][1]
    assert answers[4]["ids"] == [] and "scores" not in answers[4] and "error" not in answers[4]


def test_second_start_reuses_the_cache_and_a_changed_corpus_does_not(tmp_path: Path, corpora: Path) -> None:
    request = [{"kind": "code", "query": "parse config", "k": 5}]
    first = lines(run_adapter(tmp_path, request, corpus_dir=corpora))
    second = lines(run_adapter(tmp_path, request, corpus_dir=corpora))
    assert second[0]["index"]["code"]["cache"] == "hit" and "load_seconds" in second[0]["index"]["code"]
    assert second[1] == first[1]
    write_corpus(corpora, "code", CODE[:2])
    third = lines(run_adapter(tmp_path, request, corpus_dir=corpora))
    assert third[0]["index"]["code"]["cache"] == "miss" and third[0]["index"]["code"]["docs"] == 2
    assert third[1]["ids"] == [doc_id for doc_id, _ in reference_ranking(CODE[:2], "parse config")]
    no_cache = lines(run_adapter(tmp_path, request, "--no-cache", corpus_dir=corpora))
    assert no_cache[0]["index"]["code"]["cache"] == "off"


def test_a_directory_where_the_index_file_belongs_costs_speed_not_the_start(tmp_path: Path, corpora: Path) -> None:
    request = [{"kind": "memory", "query": "parse config", "k": 5}]
    first = lines(run_adapter(tmp_path, request, corpus_dir=corpora))
    index_files = sorted((tmp_path / "cache" / "bm25").glob("*.bm25"))
    assert len(index_files) == 2  # code and memory
    for path in index_files:
        path.unlink()
        path.mkdir()  # what a stray `mkdir -p` or an unpacked archive leaves
    done = run_adapter(tmp_path, request, corpus_dir=corpora)
    assert done.returncode == 0, done.stderr
    banner, answer = lines(done)
    assert banner["index"]["memory"]["cache"] == "unusable" and answer == first[1]
    complaints = [line for line in done.stderr.splitlines() if "is not a regular file" in line]
    assert len(complaints) == 2 and all("building the index in memory" in line for line in complaints)
    assert "Traceback" not in done.stderr and all(path.is_dir() for path in index_files)


def test_unknown_kind_gets_an_error_reply_and_the_loop_goes_on(tmp_path: Path, corpora: Path) -> None:
    requests = [{"kind": "nope", "query": "x", "k": 3}, {"kind": "memory", "query": "Fridays deploys", "k": 1}]
    done = run_adapter(tmp_path, requests, corpus_dir=corpora)
    assert done.returncode == 0
    _banner, unknown, known = lines(done)
    assert unknown["ids"] == [] and "nope" in unknown["error"] and "memory" in unknown["error"]
    assert known["ids"] == ["fact-2"]


def test_options_reach_the_banner_and_the_scores(tmp_path: Path, corpora: Path) -> None:
    requests = [{"kind": "code", "query": "parse config file", "k": 3}]
    done = run_adapter(tmp_path, requests, "--k1", "1.2", "--b", "0.75", "--stopwords", "--stem",
                       corpus_dir=corpora)
    banner, answer = lines(done)
    assert banner["settings"] == {"k1": 1.2, "b": 0.75, "stopwords": True, "stem": True, "tokenizer": 1}
    plain = lines(run_adapter(tmp_path, requests, "--k1", "1.2", "--b", "0.75", corpus_dir=corpora))[1]
    expected = reference_ranking(CODE, "parse config file", k1=1.2, b=0.75)[:3]
    assert plain["scores"] == pytest.approx([score for _, score in expected], abs=1e-6)
    assert answer["scores"] != plain["scores"]  # stop words and stemming change the index


def test_corpus_flag_adds_a_kind_without_the_environment(tmp_path: Path) -> None:
    path = write_corpus(tmp_path / "elsewhere", "whatever", FACTS)
    done = run_adapter(tmp_path, [{"kind": "facts", "query": "build server", "k": 2}], "--corpus", f"facts={path}")
    assert done.returncode == 0, done.stderr
    banner, answer = lines(done)
    assert list(banner["index"]) == ["facts"] and answer["ids"] == ["fact-1"]


@pytest.mark.parametrize("content, where", [
    ('{"id": "a", "text": "ok"}\nnot json\n', "code.jsonl:2"),
    ('{"id": "a", "text": "ok"}\n{"id": "a", "text": "again"}\n', "code.jsonl:2: id"),
    ('{"text": "no id"}\n', "code.jsonl:1: id"),
])
def test_malformed_corpus_exits_2_before_the_banner(tmp_path: Path, content: str, where: str) -> None:
    folder = tmp_path / "corpora"
    folder.mkdir()
    (folder / "code.jsonl").write_text(content, encoding="utf-8")
    done = run_adapter(tmp_path, [{"kind": "code", "query": "x", "k": 1}], corpus_dir=folder)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and where in done.stderr


@pytest.mark.parametrize("case", ["no corpus at all", "empty folder", "missing file", "bad flag value", "bad b"])
def test_configuration_errors_exit_2_with_one_line(tmp_path: Path, case: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    args: tuple[str, ...] = ()
    corpus_dir = None
    if case == "empty folder":
        corpus_dir = empty
    elif case == "missing file":
        args = ("--corpus", f"code={tmp_path / 'absent.jsonl'}")
    elif case == "bad flag value":
        args = ("--corpus", "no-equals-sign")
    elif case == "bad b":
        args = ("--corpus", f"code={write_corpus(tmp_path / 'c', 'code', CODE)}", "--b", "2")
    done = run_adapter(tmp_path, [], *args, corpus_dir=corpus_dir)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("bm25: error: ") and len(done.stderr.strip().splitlines()) == 1


# -- the Python API hybrid fusion builds on ------------------------------------------------

def test_api_arguments_settings_and_load_indexes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "cache"))
    parser = argparse.ArgumentParser()
    bm25.add_arguments(parser)
    defaults = bm25.settings_from_args(parser.parse_args([]))
    assert (defaults.k1, defaults.b, defaults.stopwords, defaults.stem, defaults.use_cache) == (
        0.9, 0.4, False, False, True)
    settings = bm25.settings_from_args(parser.parse_args(["--k1", "1.5", "--no-cache"]))
    assert settings.k1 == 1.5 and settings.use_cache is False
    path = write_corpus(tmp_path, "code", CODE)
    indexes = bm25.load_indexes({"code": path}, defaults)
    index = indexes["code"]
    assert index.n_docs == len(CODE) and index.vocab_size == indexes["code"].provenance["vocab"]
    assert index.search("parse config file", 2) == [
        (doc_id, pytest.approx(score, abs=1e-6)) for doc_id, score in reference_ranking(CODE, "parse config file")[:2]]
    with pytest.raises(CorpusFileError):
        bm25.load_indexes({"code": tmp_path / "absent.jsonl"}, defaults)
