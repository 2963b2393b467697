"""Embedding: what each remaining knob is worth against the adapter's default, measured in one process.

    python -m benchmarks.embed_options                 # 300 stdlib texts, 1 thread, 5 rounds
    python -m benchmarks.embed_options --corpus man --limit 120 --threads 2

benchmarks/embed.py compares whole configurations in separate processes (the naive loop,
sentence-transformers, peak memory). This script answers a narrower question for the items
the embedding work was asked to try: does onnxruntime session option X, I/O binding, a
different token budget per batch, or undoing one of the fused graph's fusions make the
default faster? Every variant is loaded side by side in this process on the same texts;
the rounds run them in turn (so a change in machine load hits all alike) and each variant's
throughput is its median of the rounds, in texts per CPU second of this process (at one
thread the least disturbed by other jobs; at more threads it also charges idle spinning).
Every variant's vectors are checked against the default's (the smallest cosine is printed).
Rows that bring a session of their own are read against the control row (the default's
options in a session of its own), the others against the default.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.arguments import at_least


@dataclasses.dataclass
class Variant:
    name: str
    embedder: object  # adapters.embedder.Embedder, its session or options changed as the name says


def _fused_graph(source: Path, **fusion_flags: bool) -> bytes:
    """The default fused graph (adapters/graph_rewrite.fused_model), with onnxruntime's own fusions toggled."""
    from adapters.graph_rewrite import default_fusion_options, fused_model

    options = default_fusion_options()
    for flag, value in fusion_flags.items():
        setattr(options, flag, value)
    with tempfile.TemporaryDirectory(prefix="retrieval-gate-bench-") as tmp, contextlib.redirect_stdout(sys.stderr):
        model, _ = fused_model(source, Path(tmp), options)
        return model.SerializeToString()


def _with_session(embedder, graph: bytes, configure: Callable[[object], None] | None = None,
                  also_unfused: tuple[str, ...] = ()):
    """A copy of `embedder` whose session runs `graph`, its session options changed by `configure`.

    `also_unfused` names onnxruntime fusions to keep off at load besides the embedder's own
    (graph_rewrite.LOAD_FUSIONS_OFF): without it a graph left unfused on purpose is fused
    back when the session loads it, and the row measures the default again.
    """
    from adapters.embedder import session_options

    def configured(threads: int):
        options = session_options(threads, embedder.options.spinning)
        if configure is not None:
            configure(options)
        return options

    clone = copy.copy(embedder)
    clone._session_options = configured(embedder.options.threads)
    clone.session = clone._new_session(graph, also_unfused=also_unfused)
    if clone.workers > 1:  # batches side by side run on a one-thread session: changed alike
        clone.parallel_session = clone._new_session(graph, configured(1), also_unfused)
    return clone


def _with_options(embedder, **changes):
    """A copy of `embedder` (same session) with some EmbedOptions changed."""
    clone = copy.copy(embedder)
    clone.options = dataclasses.replace(embedder.options, **changes)
    return clone


def _with_io_binding(embedder):
    """A copy whose runs bind the inputs and a preallocated output buffer (onnxruntime I/O binding)."""
    import numpy as np

    clone = copy.copy(embedder)

    def run(token_ids, type_ids, session=None):
        session = session or clone.session
        feed = clone.feed(token_ids, type_ids)
        binding = session.io_binding()
        for name, array in feed.items():
            binding.bind_cpu_input(name, array)
        batch, width = feed["input_ids"].shape
        hidden = np.empty((batch, width, clone.dimensions), dtype=np.float32)
        binding.bind_output(clone.output_name, "cpu", 0, np.float32, hidden.shape, hidden.ctypes.data)
        session.run_with_iobinding(binding)
        return clone.vectors(hidden, feed["attention_mask"])

    clone._run = run
    return clone


def _one_batch_at_a_time(embedder):
    """A copy (same session) that runs every batch on the first session's intra-op threads, as before batches ran side by side."""
    clone = copy.copy(embedder)
    clone.workers, clone.parallel_session = 1, None
    return clone


def variants(threads: int) -> list[Variant]:
    from adapters import onnx_embed

    parser = argparse.ArgumentParser()
    onnx_embed.add_model_arguments(parser)
    default, _ = onnx_embed.build_embedder(parser.parse_args(["--threads", str(threads)]))
    if default.graph != "fused":
        raise SystemExit(f"the fused graph is not available here ({default.graph_note}); nothing to compare")
    default.embed(["warm up"])  # learns the output width, which the I/O-binding variant needs
    fused = _fused_graph(default.model_path)
    out = [Variant("default: fused graph, batch 32, <= 256 tokens", default)]

    def option(name: str, configure: Callable[[object], None]) -> None:
        out.append(Variant(name, _with_session(default, fused, configure)))

    # The control: a session of its own with the default's options, against which the session
    # rows are read (a second session of the same graph need not run at the first one's speed).
    option("control: the default's options, a session of its own", lambda o: None)
    option("session: denormals as zero", lambda o: o.add_session_config_entry("session.set_denormal_as_zero", "1"))
    option("session: memory pattern off", lambda o: setattr(o, "enable_mem_pattern", False))
    option("session: CPU memory arena off", lambda o: setattr(o, "enable_cpu_mem_arena", False))
    option("session: weight prepacking off", lambda o: o.add_session_config_entry("session.disable_prepacking", "1"))
    out.append(Variant("I/O binding (inputs and a preallocated output)", _with_io_binding(default)))
    for tokens in (128, 512, 1024):
        out.append(Variant(f"batch 32, <= {tokens} tokens", _with_options(default, batch_tokens=tokens)))
    out.append(Variant("batch 1", _with_options(default, batch_size=1)))
    if default.workers > 1:
        out.append(Variant("batches one at a time, each split across the threads (before side by side)",
                           _one_batch_at_a_time(default)))
    out.append(Variant("graph: SkipLayerNormalization fused (onnxruntime's kernel, before)",
                       _with_session(default, _fused_graph(default.model_path, enable_skip_layer_norm=True,
                                                           enable_bias_skip_layer_norm=True))))
    out.append(Variant("graph: BiasGelu left unfused (Add + Gelu)",
                       _with_session(default, _fused_graph(default.model_path, enable_bias_gelu=False),
                                     also_unfused=("BiasGeluFusion",))))
    return out


def main(argv: list[str] | None = None) -> int:
    from benchmarks.embed import load_texts, paired_ratio

    parser = argparse.ArgumentParser(prog="python -m benchmarks.embed_options", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("stdlib", "man"), default="stdlib")
    parser.add_argument("--limit", type=at_least(1), default=300, help="texts (default 300)")
    parser.add_argument("--threads", type=at_least(0), default=1, help="onnxruntime threads (default 1)")
    parser.add_argument("--rounds", type=at_least(1), default=5, help="rounds, every variant once per round (default 5)")
    args = parser.parse_args(argv)
    _, texts, _ = load_texts(args.corpus, args.limit)
    chosen = variants(args.threads)
    reference = chosen[0].embedder.embed_passages(texts)
    cosines = {}
    for variant in chosen:
        vectors = variant.embedder.embed_passages(texts)  # also the warm-up run
        cosines[variant.name] = float((vectors * reference).sum(axis=1).min())
    rates: dict[str, list[float]] = {variant.name: [] for variant in chosen}
    print(f"# {len(texts)} {args.corpus} texts, {args.threads} thread(s), {args.rounds} rounds; "
          f"load average at start {os.getloadavg()[0]:.2f}", flush=True)
    for round_number in range(args.rounds):
        for variant in chosen:
            started = time.process_time()
            variant.embedder.embed_passages(texts)
            rates[variant.name].append(len(texts) / (time.process_time() - started))
        print(f"  round {round_number + 1} done", file=sys.stderr, flush=True)
    base = rates[chosen[0].name]
    print("| variant | texts per CPU-s (median) | vs default (median of per-round ratios) | smallest cosine to default |")
    print("| --- | ---: | ---: | ---: |")
    for variant in chosen:
        ratio = paired_ratio(rates[variant.name], base)
        print(f"| {variant.name} | {statistics.median(rates[variant.name]):.1f} | {ratio:.3f}x | "
              f"{cosines[variant.name]:.6f} |")
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
