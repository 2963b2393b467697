"""Tests for adapters.model_optimise and adapters.graph_rewrite: the rewritten-graph cache and its fallbacks.

The tiny model (tests/tiny_onnx.py) exercises the cache: built, reused, rebuilt when corrupt
or stale, refused when its vectors differ, and the plain model whenever the rewrite cannot
be had. The real default model, when fetched, checks the attention fusion itself.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import require_default_model, require_modules

require_modules("numpy", "onnxruntime", "tokenizers", "onnx")
import numpy as np  # noqa: E402
import onnx  # noqa: E402

from adapters import graph_rewrite  # noqa: E402
from adapters.embedder import EmbedOptions, Embedder  # noqa: E402
from tests.tiny_onnx import reference, write_model, write_tokenizer  # noqa: E402

TEXTS = ["alpha beta gamma", "delta", "epsilon zeta eta theta alpha", "theta theta"]


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "cache"))
    model, table, type_table = write_model(tmp_path / "model.onnx")
    tokenizer = write_tokenizer(tmp_path / "tokenizer.json")
    return model, tokenizer, reference(TEXTS, table, type_table)


def optimised_folder(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "models" / "optimised"


def load(model: Path, tokenizer: Path, graph: str = "fused") -> tuple[Embedder, list[str]]:
    messages: list[str] = []
    return Embedder(model, tokenizer, EmbedOptions(graph=graph), log=messages.append), messages


def test_the_rewritten_graph_is_built_once_then_read_back(tiny, tmp_path):
    model, tokenizer, expected = tiny
    first, messages = load(model, tokenizer)
    assert first.graph == "fused"
    assert any("building" in message for message in messages)
    np.testing.assert_allclose(first.embed(TEXTS), expected, rtol=1e-5, atol=1e-6)
    graphs = sorted(optimised_folder(tmp_path).glob("*.onnx"))
    sidecars = sorted(optimised_folder(tmp_path).glob("*.json"))
    assert len(graphs) == 1 and len(sidecars) == 1
    record = json.loads(sidecars[0].read_text())
    assert record["accepted"] and record["key"]["source_sha256"] == first.model_digest
    second, messages = load(model, tokenizer)
    assert second.graph == "fused" and messages == []  # a cache hit says nothing
    np.testing.assert_allclose(second.embed(TEXTS), expected, rtol=1e-5, atol=1e-6)
    # cached passage vectors of the rewritten graph are kept apart from the plain model's,
    # keyed by the graph file's own bytes
    plain, _ = load(model, tokenizer, "plain")
    graph_digest = hashlib.sha256(graphs[0].read_bytes()).hexdigest()
    assert second.identity() == {**plain.identity(), "graph": "fused", "graph_sha256": graph_digest}


def test_passage_vectors_of_an_earlier_recipe_are_not_served_by_a_new_graph(tiny, monkeypatch):
    # An int8 recipe change once computed other vectors under the same cache key: a graph
    # built by another recipe (other bytes) must get a cache folder of its own.
    from adapters.embedding_cache import identity_key

    model, tokenizer, _ = tiny
    earlier, _ = load(model, tokenizer)
    real_build = graph_rewrite.build

    def other_recipe(source, variant):
        built, note = real_build(source, variant)
        rewritten = onnx.load_from_string(built)
        rewritten.doc_string = "built by another recipe"  # other bytes, the same vectors
        return rewritten.SerializeToString(), note

    monkeypatch.setattr(graph_rewrite, "RECIPE", "another recipe")
    monkeypatch.setattr(graph_rewrite, "build", other_recipe)
    later, messages = load(model, tokenizer)
    assert later.graph == "fused" and any("building" in message for message in messages)
    assert identity_key(later) != identity_key(earlier)
    assert {**later.identity(), "graph_sha256": None} == {**earlier.identity(), "graph_sha256": None}


def test_batches_side_by_side_run_the_cached_rewritten_graph(tiny, tmp_path):
    """Built, then read back: either way the parallel session is made from the cached file's checked bytes."""
    model, tokenizer, expected = tiny
    for _ in ("built", "read back"):
        embedder = Embedder(model, tokenizer, EmbedOptions(graph="fused", batch_size=1, threads=2))
        assert embedder.graph == "fused"
        np.testing.assert_allclose(embedder.embed(TEXTS), expected, rtol=1e-5, atol=1e-6)
        assert embedder.parallel_session is not None
    (graph,) = optimised_folder(tmp_path).glob("*.onnx")
    assert embedder._graph_file == graph
    # A graph altered in the cache after start-up is not loaded: the batches run one by one.
    embedder = Embedder(model, tokenizer, EmbedOptions(graph="fused", batch_size=1, threads=2))
    graph.write_bytes(graph.read_bytes() + b"\0")
    np.testing.assert_allclose(embedder.embed(TEXTS), expected, rtol=1e-5, atol=1e-6)
    assert embedder.parallel_session is None


def test_a_corrupt_cached_graph_is_rebuilt_not_run(tiny, tmp_path):
    model, tokenizer, expected = tiny
    load(model, tokenizer)
    (graph,) = optimised_folder(tmp_path).glob("*.onnx")
    good = graph.read_bytes()
    graph.write_bytes(good[: len(good) // 2])
    embedder, messages = load(model, tokenizer)
    assert any("sha256 does not match its sidecar" in message and "rebuilding" in message for message in messages)
    assert embedder.graph == "fused" and graph.read_bytes() == good
    np.testing.assert_allclose(embedder.embed(TEXTS), expected, rtol=1e-5, atol=1e-6)


def test_a_sidecar_for_another_onnxruntime_version_is_rebuilt(tiny, tmp_path):
    model, tokenizer, _ = tiny
    load(model, tokenizer)
    (sidecar,) = optimised_folder(tmp_path).glob("*.json")
    record = json.loads(sidecar.read_text())
    record["key"]["onnxruntime"] = "0.0.1"
    sidecar.write_text(json.dumps(record))
    embedder, messages = load(model, tokenizer)
    assert any("not for this model and version; rebuilding" in message for message in messages)
    assert json.loads(sidecar.read_text())["key"]["onnxruntime"] != "0.0.1"
    assert embedder.graph == "fused"


@pytest.mark.parametrize("error, says", [
    (ImportError("No module named 'onnx'"), "optimisation unavailable"),
    (graph_rewrite.RewriteError("not a bert graph"), "rewrite failed"),
])
def test_without_the_rewrite_the_plain_model_runs(tiny, tmp_path, monkeypatch, error, says):
    model, tokenizer, expected = tiny

    def broken(source, variant):
        raise error

    monkeypatch.setattr(graph_rewrite, "build", broken)
    embedder, messages = load(model, tokenizer)
    assert embedder.graph == "plain"
    assert len(messages) == 2 and says in messages[1] and "using the plain model" in messages[1]
    np.testing.assert_allclose(embedder.embed(TEXTS), expected, rtol=1e-5, atol=1e-6)
    assert "graph" not in embedder.identity()
    assert not list(optimised_folder(tmp_path).glob("*.onnx"))


def test_a_graph_with_other_vectors_is_refused_and_remembered(tiny, tmp_path, monkeypatch):
    model, tokenizer, expected = tiny
    other, _, _ = write_model(tmp_path / "other.onnx", seed=99)
    monkeypatch.setattr(graph_rewrite, "build", lambda source, variant: (other.read_bytes(), "swapped"))
    embedder, messages = load(model, tokenizer)
    assert embedder.graph == "plain"
    assert any("rejected" in message and "probe cosine" in message for message in messages)
    np.testing.assert_allclose(embedder.embed(TEXTS), expected, rtol=1e-5, atol=1e-6)

    def must_not_build(source, variant):
        raise AssertionError("a rejected rewrite was built again")

    monkeypatch.setattr(graph_rewrite, "build", must_not_build)
    again, messages = load(model, tokenizer)
    assert again.graph == "plain" and any("rejected earlier" in message for message in messages)


def test_an_unloadable_model_is_still_an_error_not_a_fallback(tiny):
    from adapters.embedder import EmbedderError

    model, tokenizer, _ = tiny
    model.write_bytes(b"\x08\x07garbage" * 10)
    with pytest.raises(EmbedderError, match="not a loadable ONNX model"):
        load(model, tokenizer)


def test_the_real_model_gets_fused_attention_and_the_same_vectors(tmp_path, monkeypatch):
    folder = require_default_model()
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "cache"))
    texts = ["Return the absolute value of a number.", "json.dumps: serialise obj to a JSON formatted str",
             "x", "Split the string at the first occurrence of sep, and return a 3-tuple " * 12]
    plain = Embedder(folder / "model.onnx", folder / "tokenizer.json", EmbedOptions(graph="plain", batch_size=4))
    fused = Embedder(folder / "model.onnx", folder / "tokenizer.json", EmbedOptions(graph="fused", batch_size=4))
    assert fused.graph == "fused" and fused.graph_note.startswith("6 attention blocks fused")
    assert fused.model_digest == plain.model_digest  # the same model: the banner's model_digest stays
    (graph,) = optimised_folder(tmp_path).glob("*.onnx")
    ops = [node.op_type for node in onnx.load(str(graph)).graph.node]
    assert ops.count("Attention") == 6 and "Softmax" not in ops and "IsNaN" not in ops
    # SkipLayerNormalization stays unfused (its CPU kernel is slower): in the file and as a
    # session loads it, where onnxruntime would otherwise fuse it back.
    assert "SkipLayerNormalization" not in ops and ops.count("LayerNormalization") == 13
    from adapters.embedder import session_options

    loaded = session_options(1)
    loaded.optimized_model_filepath = str(tmp_path / "as-loaded.onnx")
    fused._new_session(graph.read_bytes(), loaded)
    ran = [node.op_type for node in onnx.load(str(tmp_path / "as-loaded.onnx")).graph.node]
    assert "SkipLayerNormalization" not in ran and ran.count("LayerNormalization") == 13
    for batch_size in (1, 4):  # alone and padded in one batch
        fused.options = EmbedOptions(graph="fused", batch_size=batch_size)
        cosine = (plain.embed(texts) * fused.embed(texts)).sum(axis=1)
        assert cosine.min() >= 0.99999, cosine


def test_there_is_no_int8_graph_any_more(tmp_path):
    # The int8 opt-in was withdrawn: it moved the code set's recall@10 by 1.7 to 2.1 points,
    # over the 1 point a quantised variant may move it (docs/performance.md). A CI config that
    # still asks for it gets one line and exit 2 from the adapter, not a silent fp32 run.
    import subprocess
    import sys

    from adapters.embedder import EmbedderError

    model, _, _ = write_model(tmp_path / "model.onnx")
    tokenizer = write_tokenizer(tmp_path / "tokenizer.json")
    with pytest.raises(EmbedderError, match="--graph 'int8': expected one of plain, fused"):
        Embedder(model, tokenizer, EmbedOptions(graph="int8"))
    completed = subprocess.run([sys.executable, "-m", "adapters.onnx_embed", "--graph", "int8"],
                               capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 2 and completed.stdout == ""
    assert "invalid choice: 'int8'" in completed.stderr.splitlines()[-1]


def test_fetch_model_builds_the_default_graph_so_no_first_start_does(tmp_path):
    # fetch-model (which .ci/run and the README run first) leaves the fused graph in the cache:
    # the adapter's first start then loads it instead of paying the build's memory.
    import os
    import shutil
    import subprocess
    import sys

    folder = require_default_model()
    shutil.copytree(folder, tmp_path / "cache" / "models" / folder.name)  # the model, as fetch left it
    env = {**os.environ, "RETRIEVAL_GATE_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "adapters.onnx_embed", "fetch-model"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert first.returncode == 0, first.stderr
    assert "building from the model" in first.stderr and "graph fused ready" in first.stderr
    assert len(list(optimised_folder(tmp_path).glob("*.onnx"))) == 1
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0 and "building" not in again.stderr and "graph fused ready" in again.stderr


def test_the_fused_graph_builds_without_torch(tmp_path):
    # onnxruntime's optimizer imports torch at its opt_level 1; our build must not need it
    # (a clean install of the [onnx] extra has no torch). torch is made unimportable here.
    import subprocess
    import sys

    folder = require_default_model()
    script = ("import sys; sys.modules['torch'] = None\n"
              "from pathlib import Path\n"
              "from adapters.graph_rewrite import build\n"
              f"model, note = build(Path({str(folder / 'model.onnx')!r}).read_bytes(), 'fused')\n"
              "print(note)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "6 attention blocks fused"


@pytest.mark.parametrize("libc", ["no malloc_trim", "no libc"])
def test_returning_freed_memory_is_skipped_where_the_c_library_cannot(libc, monkeypatch):
    import ctypes

    from adapters import model_optimise

    calls = []

    class WithoutTrim:  # a C library that is not glibc: no malloc_trim symbol
        def __getattr__(self, name):
            calls.append(name)
            raise AttributeError(name)

    def load(name):
        if libc == "no libc":
            raise OSError("cannot open shared object")
        return WithoutTrim()
    monkeypatch.setattr(ctypes, "CDLL", load)
    model_optimise._return_freed_memory()  # neither raises
    assert calls == ([] if libc == "no libc" else ["malloc_trim"])


def test_a_start_from_the_cached_graph_does_not_import_onnx(tiny, tmp_path):
    """Only a build needs the onnx package: a start that reads the cached graph names its version without it."""
    import os
    import subprocess
    import sys

    model, tokenizer, expected = tiny
    built, _ = load(model, tokenizer)  # builds and caches the graph (imports onnx, in this process)
    assert built.graph == "fused" and built.graph_note
    script = ("import sys, numpy\nfrom pathlib import Path\n"
              "from adapters.embedder import EmbedOptions, Embedder\n"
              f"e = Embedder(Path({str(model)!r}), Path({str(tokenizer)!r}), EmbedOptions(graph='fused'), log=print)\n"
              "print(e.graph, 'onnx' in sys.modules, float(numpy.abs(e.embed(['delta'])).sum()))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False,
                          env=dict(os.environ), cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr[-2000:]
    graph, imported, total = done.stdout.split()[-3:]
    assert (graph, imported) == ("fused", "False"), done.stdout + done.stderr
    assert float(total) == pytest.approx(float(np.abs(built.embed(["delta"])).sum()), rel=1e-6)


def test_the_cache_key_names_the_installed_onnx_version():
    from adapters.model_optimise import cache_key

    assert cache_key("ab" * 32, "fused")["onnx"] == onnx.__version__
