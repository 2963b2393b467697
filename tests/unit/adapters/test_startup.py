"""adapters/startup.py: the one start-up path (dependency check, one-line error, exit 2) every reference adapter uses."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from adapters import bm25, http, hybrid, onnx_embed
from adapters.bm25_index import BM25SettingsError
from adapters.corpus_dir import CorpusFileError
from adapters.embedder import EmbedderError
from adapters.model_store import ModelStoreError
from adapters.startup import AdapterStartupError, MissingDependency, require, run_adapter
from tests.conftest import REPO_ROOT, require_modules

ROOT = REPO_ROOT


def test_require_names_the_missing_module_and_the_hint() -> None:
    require(["json", "os"], "never shown")
    with pytest.raises(MissingDependency) as caught:
        require(["json", "no_such_module_rg_xyz"], "pip install thing")
    assert str(caught.value) == "missing no_such_module_rg_xyz; install with: pip install thing"


def test_run_adapter_turns_a_startup_error_into_one_line_and_exit_2(capsys) -> None:
    def prepare():
        raise AdapterStartupError("corpus.jsonl:3: id: appears twice\nsecond line never printed")

    assert run_adapter("demo", prepare) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "demo: error: corpus.jsonl:3: id: appears twice\n")


def test_run_adapter_leaves_other_exceptions_alone() -> None:
    def prepare():
        raise KeyError("a bug keeps its traceback")

    with pytest.raises(KeyError):
        run_adapter("demo", prepare)


def test_run_adapter_serves_what_prepare_returns(monkeypatch) -> None:
    stdin = io.BytesIO(b'{"kind": "k", "query": "q", "k": 1, "qid": "1"}\n')
    stdout = io.BytesIO()
    monkeypatch.setattr(sys, "stdin", type("S", (), {"buffer": stdin})())
    monkeypatch.setattr(sys, "stdout", type("S", (), {"buffer": stdout})())
    assert run_adapter("demo", lambda: ((lambda kind, query, k: ["d1"]), {"name": "demo"})) == 0
    lines = stdout.getvalue().decode().splitlines()
    assert json.loads(lines[0])["ready"] is True and json.loads(lines[1])["ids"] == ["d1"]


@pytest.mark.parametrize("error", [CorpusFileError, EmbedderError, ModelStoreError, BM25SettingsError,
                                   onnx_embed.ConfigError, http.UrlError, http.NotLoopback, MissingDependency])
def test_every_adapter_error_is_a_startup_error_not_a_value_error(error) -> None:
    assert issubclass(error, AdapterStartupError) and not issubclass(error, ValueError)


@pytest.mark.parametrize("module, argv, message", [
    ("adapters.bm25", ["--b", "2", "--corpus", "x={corpus}"], "bm25: error: b: must be between 0 and 1, got 2.0"),
    ("adapters.bm25", ["--corpus", "x={tmp}/absent.jsonl"], "bm25: error: {tmp}/absent.jsonl: cannot read"),
    ("adapters.http", ["--url", "ftp://127.0.0.1/"], "http: error: --url 'ftp://127.0.0.1/': only http://"),
    ("adapters.onnx_embed", ["--model", "{tmp}/m.onnx", "--corpus", "x={corpus}"],
     "onnx_embed: error: --model and --tokenizer go together"),
    ("adapters.hybrid", ["--b", "-1", "--corpus", "x={corpus}"], "hybrid: error: b: must be between 0 and 1"),
    ("adapters.ann", ["--m", "1", "--corpus", "x={corpus}"], "ann: error: --m: must be at least 2, got 1"),
])
def test_each_reference_adapter_fails_start_up_the_same_way(tmp_path, module, argv, message) -> None:
    if module in ("adapters.onnx_embed", "adapters.hybrid"):  # they check their imports before their options
        require_modules("numpy", "onnxruntime", "tokenizers")
    corpus = tmp_path / "x.jsonl"
    corpus.write_text('{"id": "a", "text": "alpha"}\n', encoding="utf-8")
    argv = [part.format(corpus=corpus, tmp=tmp_path) for part in argv]
    done = subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "RETRIEVAL_GATE_CACHE": str(tmp_path / "cache")},
                          stdin=subprocess.DEVNULL, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(message.format(tmp=tmp_path)) and len(done.stderr.splitlines()) == 1


def test_the_adapters_define_prepare() -> None:
    for module in (bm25, http, hybrid, onnx_embed):
        assert callable(module.prepare)


def test_progress_reports_every_step_not_every_document(capsys) -> None:
    from adapters.startup import Progress

    progress = Progress("demo", "embedding k", fraction=0.1, every=500)
    for done in range(1, 101):
        progress(done, 100)
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [line["progress"]["done"] for line in lines] == list(range(10, 101, 10))
    assert lines[0] == {"progress": {"stage": "embedding k", "done": 10, "total": 100}}
    assert captured.err.splitlines()[-1].startswith("demo: embedding k: 100/100")


@pytest.mark.parametrize("module, stages", [
    ("adapters.bm25", ["indexing x"]),
    ("adapters.onnx_embed", ["embedding x"]),
    ("adapters.hybrid", ["indexing x", "embedding x"]),
])
def test_reference_adapters_report_progress_before_the_banner(tmp_path, module, stages) -> None:
    require_modules("numpy", "onnxruntime", "tokenizers", "onnx")
    from tests.tiny_onnx import write_model_dir

    model_dir = write_model_dir(tmp_path / "model")
    corpus = tmp_path / "x.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": f"alpha beta {i}"}) + "\n" for i in range(300)),
                      encoding="utf-8")
    argv = ["--corpus", f"x={corpus}"] + (["--model-dir", str(model_dir)] if module != "adapters.bm25" else [])
    done = subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "RETRIEVAL_GATE_CACHE": str(tmp_path / "cache")},
                          stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    *progress, banner = lines
    assert banner["ready"] is True
    assert progress and all(set(line) == {"progress"} for line in progress)
    assert [stage for stage in stages] == list(dict.fromkeys(line["progress"]["stage"] for line in progress))
    for stage in stages:
        counts = [line["progress"]["done"] for line in progress if line["progress"]["stage"] == stage]
        assert counts == sorted(counts) and counts[-1] == 300 and len(counts) <= 60
