"""Benchmark: our BM25 adapter against bm25s (method lucene) and rank_bm25 on the same corpus and tokens.

    python -m benchmarks.bm25                 # ~20k and ~120k documents, then 1M short documents
    python -m benchmarks.bm25 --sizes 20000 --skip-1m

Corpus: functions and classes of the installed stdlib then site-packages
(benchmarks/stdlib_corpus.py); queries: first docstring sentences, each with its own item
as the single relevant document. Everything is tokenised once with our tokeniser and the
same token lists go to every engine, so the engines differ only in indexing and scoring.
Each engine runs in its own child process so its build time, query latency and memory
(Linux VmHWM, reset after the tokens are loaded) are its own. Queries run one at a time,
top 10. rank_bm25 is slow (a Python loop over every document per query term), so it gets a
subsample of the queries. Needs the [bench] extra: pip install bm25s rank_bm25.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.arguments import at_least, list_of
from harness.scoring.metrics import percentile

K = 10
ENGINES = ("ours", "bm25s", "bm25s-numba", "rank_bm25")
SHORT_DOCS = 1_000_000
MEMORY_LIMIT_MB = 4096


# -- measurements shared by workers ------------------------------------------------------

def _status_mb(field: str, pid: int | str = "self") -> float:
    """A memory field of /proc/PID/status (VmRSS, VmHWM) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def _reset_peak() -> None:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so the peak measured is the build's."""
    Path("/proc/self/clear_refs").write_text("5")


# -- one engine in one process -----------------------------------------------------------

def _engine(name: str, ids: list[str], docs_tokens: list[list[str]], k1: float, b: float):
    """Build engine `name`; return a function query_tokens -> [(id, score)] (top K, score > 0)."""
    import numpy as np

    if name == "ours":
        from adapters.bm25_index import BM25Index, BM25Settings

        index = BM25Index.from_tokens(ids, docs_tokens, BM25Settings(k1=k1, b=b))
        return lambda tokens: index.search_tokens(tokens, K)
    if name in ("bm25s", "bm25s-numba"):
        import bm25s

        backend = "numba" if name == "bm25s-numba" else "numpy"
        retriever = bm25s.BM25(method="lucene", k1=k1, b=b, backend=backend)
        retriever.index(docs_tokens, show_progress=False)

        def search(tokens: list[str]):
            if not tokens:
                return []
            docs, scores = retriever.retrieve([tokens], k=min(K, len(ids)), show_progress=False, n_threads=0,
                                              backend_selection=backend)
            return [(ids[int(doc)], float(score)) for doc, score in zip(docs[0], scores[0]) if score > 0]
        return search
    if name == "rank_bm25":
        from rank_bm25 import BM25Okapi

        okapi = BM25Okapi(docs_tokens, k1=k1, b=b)

        def search(tokens: list[str]):
            if not tokens:
                return []
            scores = okapi.get_scores(tokens)
            top = np.argpartition(-scores, min(K, len(ids) - 1))[:K]
            top = top[np.argsort(-scores[top], kind="stable")]
            return [(ids[int(doc)], float(scores[doc])) for doc in top if scores[doc] > 0]
        return search
    raise ValueError(f"unknown engine {name!r}; choose from {ENGINES}")


def worker(engine: str, data_path: Path, n_queries: int, k1: float, b: float) -> dict[str, object]:
    """Load the shared tokens, build one engine, time n_queries queries one at a time."""
    with open(data_path, "rb") as handle:
        data = pickle.load(handle)
    gc.collect()
    rss_before = _status_mb("VmRSS")
    _reset_peak()
    started = time.perf_counter()
    search = _engine(engine, data["ids"], data["docs_tokens"], k1, b)
    build_seconds = time.perf_counter() - started
    gc.collect()
    rss_built = _status_mb("VmRSS")
    queries = data["queries"][:n_queries]
    started = time.perf_counter()
    search(queries[0][0])  # the first query: imports, allocations, numba's JIT compilation
    first_query_seconds = time.perf_counter() - started
    for tokens, _relevant in queries[:5]:  # warm-up
        search(tokens)
    latencies, results = [], []
    for tokens, _relevant in queries:
        started = time.perf_counter()
        hits = search(tokens)
        latencies.append(time.perf_counter() - started)
        results.append(hits)
    peak = _status_mb("VmHWM")
    recall = statistics.fmean(any(doc == relevant for doc, _ in hits)
                              for hits, (_tokens, relevant) in zip(results, queries))
    return {"engine": engine, "docs": len(data["ids"]), "queries": len(queries),
            "build_s": build_seconds, "first_query_s": first_query_seconds, "p50_ms": 1000 * percentile(latencies, 50),
            "p95_ms": 1000 * percentile(latencies, 95), "peak_mb": peak - rss_before,
            "held_mb": rss_built - rss_before, "recall_at_10": recall, "results": results}


def _run_worker(engine: str, data_path: Path, n_queries: int, k1: float, b: float) -> dict[str, object]:
    argv = [sys.executable, "-m", "benchmarks.bm25", "--worker", engine, "--data", str(data_path),
            "--queries", str(n_queries), "--k1", str(k1), "--b", str(b)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=_repo_root())
    if done.returncode != 0:
        raise RuntimeError(f"{engine} worker failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


# -- through the protocol ----------------------------------------------------------------

def _first_real_line(process: subprocess.Popen) -> dict:
    """The adapter's banner: the first stdout line that is not a start-up progress line."""
    while True:
        line = json.loads(process.stdout.readline())
        if "progress" not in line:
            return line


def protocol_run(ids: list[str], texts: list[str], queries: list[str], folder: Path,
                 k1: float, b: float) -> dict[str, object]:
    """Start `python -m adapters.bm25` on the corpus twice (cache miss, then hit); time queries."""
    corpus_dir = folder / "corpus"
    corpus_dir.mkdir(parents=True, exist_ok=True)
    with open(corpus_dir / "bench.jsonl", "w", encoding="utf-8") as handle:
        for doc_id, text in zip(ids, texts):
            handle.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
    env = dict(os.environ, HARNESS_CORPUS_DIR=str(corpus_dir), RETRIEVAL_GATE_CACHE=str(folder / "cache"),
               PYTHONPATH=str(_repo_root()))
    out: dict[str, object] = {}
    for attempt in ("miss", "hit"):
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-m", "adapters.bm25", "--k1", str(k1), "--b", str(b)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   env=env, cwd=_repo_root())
        banner = _first_real_line(process)
        out[f"startup_{attempt}_s"] = time.perf_counter() - started
        out[f"banner_{attempt}"] = banner["index"]["bench"]
        if attempt == "hit":
            latencies, results = [], []
            for query in queries:
                line = json.dumps({"kind": "bench", "query": query, "k": K}).encode() + b"\n"
                started = time.perf_counter()
                process.stdin.write(line)
                process.stdin.flush()
                answer = json.loads(process.stdout.readline())
                latencies.append(time.perf_counter() - started)
                results.append(answer["ids"])
            out["p50_ms"] = 1000 * percentile(latencies, 50)
            out["p95_ms"] = 1000 * percentile(latencies, 95)
            out["results"] = results
        out[f"peak_rss_{attempt}_mb"] = _status_mb("VmHWM", process.pid)
        process.stdin.close()
        process.wait()
    return out


# -- the 1M short documents check --------------------------------------------------------

def short_documents(limit: int) -> tuple[list[str], list[str]]:
    """Up to `limit` short real documents: non-blank source lines of installed Python files."""
    from benchmarks.stdlib_corpus import site_packages_root, stdlib_root

    ids: list[str] = []
    texts: list[str] = []
    for label, root in (("stdlib", stdlib_root()), ("site-packages", site_packages_root())):
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if label == "stdlib" and rel.startswith("site-packages/"):
                continue
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(lines, start=1):
                line = line.strip()
                if len(line) >= 8:
                    ids.append(f"{label}/{rel}:{number}")
                    texts.append(line)
                    if len(ids) >= limit:
                        return ids, texts
    return ids, texts


def short_docs_run(folder: Path, k1: float, b: float) -> dict[str, object]:
    """Index 1M short documents with the real adapter; report its peak RSS and start-up time."""
    ids, texts = short_documents(SHORT_DOCS)
    corpus_dir = folder / "short"
    corpus_dir.mkdir(parents=True, exist_ok=True)
    with open(corpus_dir / "lines.jsonl", "w", encoding="utf-8") as handle:
        for doc_id, text in zip(ids, texts):
            handle.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
    del ids, texts
    env = dict(os.environ, HARNESS_CORPUS_DIR=str(corpus_dir), RETRIEVAL_GATE_CACHE=str(folder / "cache1m"),
               PYTHONPATH=str(_repo_root()))
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "adapters.bm25", "--k1", str(k1), "--b", str(b)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=env, cwd=_repo_root())
    banner = _first_real_line(process)
    startup = time.perf_counter() - started
    process.stdin.write(b'{"kind":"lines","query":"open a file for reading","k":10}\n')
    process.stdin.flush()
    answer = json.loads(process.stdout.readline())
    peak = _status_mb("VmHWM", process.pid)
    process.stdin.close()
    process.wait()
    return {"docs": banner["index"]["lines"]["docs"], "vocab": banner["index"]["lines"]["vocab"],
            "startup_s": startup, "peak_rss_mb": peak, "answered": len(answer.get("ids", []))}


def short_docs_worker(engine: str, corpus_path: Path, k1: float, b: float) -> dict[str, object]:
    """Peak RSS of building `engine` over the short documents (tokens made first, then reset)."""
    from adapters.corpus_dir import read_corpus
    from adapters.tokenizer import Tokenizer

    corpus = read_corpus("lines", corpus_path)
    ids, texts = corpus.ids, corpus.texts
    del corpus
    tokenize = Tokenizer()
    docs_tokens = [tokenize(text) for text in texts]
    del texts
    gc.collect()
    rss_before = _status_mb("VmRSS")
    _reset_peak()
    started = time.perf_counter()
    _engine(engine, ids, docs_tokens, k1, b)
    return {"engine": engine, "build_s": time.perf_counter() - started,
            "peak_mb": _status_mb("VmHWM") - rss_before, "tokens_mb": rss_before}


# -- the comparison ----------------------------------------------------------------------

def _overlap(ours: list[list[str]], theirs: list[list[str]]) -> tuple[float, float]:
    """Mean |ours ∩ theirs| / |theirs| over queries where theirs is non-empty, and exact-list agreement."""
    shares = [len(set(a) & set(t)) / len(t) for a, t in zip(ours, theirs) if t]
    exact = [a == t for a, t in zip(ours, theirs)]
    return (statistics.fmean(shares) if shares else 1.0), statistics.fmean(exact)


def _same_up_to_ties(ours: list[tuple[str, float]], theirs: list[tuple[str, float]], tolerance: float = 1e-4) -> bool:
    """The same score at every rank (float32 noise allowed): the lists differ at most inside ties.

    bm25s orders equal scores arbitrarily and we order them by id, so lists whose scores
    agree rank by rank are the same ranking even where their ids differ.
    """
    return len(ours) == len(theirs) and all(abs(a - c) <= tolerance for (_, a), (_, c) in zip(ours, theirs))


def _recall(results: list[list[tuple[str, float]]], chosen) -> float:
    return statistics.fmean(any(doc == item.id for doc, _ in hits) for hits, item in zip(results, chosen))


def query_sample(items, size: int, n_queries: int) -> list:
    """Up to n_queries documented items of the first `size`, evenly spaced: each one's query has it as the answer."""
    documented = [item for item in items[:size] if item.query is not None]
    step = max(1, len(documented) // n_queries)
    return documented[::step][:n_queries]


def compare(size: int, items, docs_tokens, n_queries: int, n_slow: int, folder: Path,
            k1: float, b: float) -> list[str]:
    from adapters.tokenizer import Tokenizer

    ids = [item.id for item in items[:size]]
    chosen = query_sample(items, size, n_queries)
    tokenize = Tokenizer()
    data = {"ids": ids, "docs_tokens": docs_tokens[:size],
            "queries": [(tokenize(item.query), item.id) for item in chosen]}
    data_path = folder / f"data-{size}.pickle"
    with open(data_path, "wb") as handle:
        pickle.dump(data, handle, protocol=pickle.HIGHEST_PROTOCOL)
    rows = {}
    for engine in ENGINES:
        rows[engine] = _run_worker(engine, data_path, n_slow if engine == "rank_bm25" else n_queries, k1, b)
        print(f"  {size}: {engine} done", file=sys.stderr)
    proto = protocol_run(ids, [item.text for item in items[:size]], [item.query for item in chosen],
                         folder / f"proto-{size}", k1, b)
    ours_ids = [[doc for doc, _ in hits] for hits in rows["ours"]["results"]]
    bm25s_ids = [[doc for doc, _ in hits] for hits in rows["bm25s"]["results"]]
    share, exact = _overlap(ours_ids, bm25s_ids)
    up_to_ties = statistics.fmean(_same_up_to_ties(a, c) for a, c in zip(rows["ours"]["results"],
                                                                        rows["bm25s"]["results"]))
    proto_same = statistics.fmean(p == o for p, o in zip(proto["results"], ours_ids))
    score_gap = max((abs(a[1] - c[1]) for x, y in zip(rows["ours"]["results"], rows["bm25s"]["results"])
                     for a, c in zip(x, y) if a[0] == c[0]), default=0.0)
    base = rows["bm25s"]
    lines = [f"## {len(ids)} documents, {len(chosen)} queries (rank_bm25: first {rows['rank_bm25']['queries']})",
             f"{'engine':<22}{'build s':>9}{'x bm25s':>8}{'p50 ms':>9}{'x bm25s':>8}{'p95 ms':>9}"
             f"{'peak MB':>9}{'x bm25s':>8}{'held MB':>9}{'recall@10':>10}"]
    for engine in ENGINES:
        row = rows[engine]
        label = {"ours": "ours (in-process)", "bm25s": "bm25s lucene numpy", "bm25s-numba": "bm25s lucene numba",
                 "rank_bm25": "rank_bm25 Okapi"}[engine]
        lines.append(f"{label:<22}{row['build_s']:>9.2f}{row['build_s'] / base['build_s']:>8.2f}"
                     f"{row['p50_ms']:>9.3f}{row['p50_ms'] / base['p50_ms']:>8.2f}{row['p95_ms']:>9.3f}"
                     f"{row['peak_mb']:>9.1f}{row['peak_mb'] / max(base['peak_mb'], 0.1):>8.2f}"
                     f"{row['held_mb']:>9.1f}{row['recall_at_10']:>10.3f}")
    lines.append("first query (imports, JIT): " + ", ".join(
        f"{engine} {rows[engine]['first_query_s']:.2f} s" for engine in ENGINES))
    lines.append(f"{'ours (protocol)':<22}{proto['startup_miss_s']:>9.2f}{'':>8}{proto['p50_ms']:>9.3f}"
                 f"{proto['p50_ms'] / base['p50_ms']:>8.2f}{proto['p95_ms']:>9.3f}"
                 f"{proto['peak_rss_miss_mb']:>9.1f}{'':>8}{'':>9}{'':>10}")
    slow = rows["rank_bm25"]["queries"]
    lines.append(f"recall@10 on the {slow} queries rank_bm25 ran: " + ", ".join(
        f"{engine} {_recall(rows[engine]['results'][:slow], chosen[:slow]):.3f}" for engine in ENGINES))
    lines.append(f"top-10 agreement with bm25s: {share:.4f} of bm25s's hits (exact same list {exact:.4f}); "
                 f"same scores rank by rank (differences only among ties) {up_to_ties:.4f}; "
                 f"max |score diff| on shared hits {score_gap:.2e}; protocol top-10 == in-process: {proto_same:.4f}")
    lines.append(f"protocol start-up (tokenise + build + cache write) {proto['startup_miss_s']:.2f} s, "
                 f"from cache {proto['startup_hit_s']:.2f} s; adapter peak RSS {proto['peak_rss_miss_mb']:.0f} MB "
                 f"(whole process, cold) / {proto['peak_rss_hit_mb']:.0f} MB (cached)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bm25", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=list_of(1), default="20000,120000", help="comma-separated corpus sizes")
    parser.add_argument("--queries", type=at_least(1), default=1000, help="queries per size (timed one at a time)")
    parser.add_argument("--slow-queries", type=at_least(1), default=100, help="queries for rank_bm25")
    parser.add_argument("--k1", type=float, default=0.9)
    parser.add_argument("--b", type=float, default=0.4)
    parser.add_argument("--skip-1m", action="store_true", help="skip the 1M short documents check")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        if args.worker.endswith("-1m"):
            result = short_docs_worker(args.worker[:-3], Path(args.data), args.k1, args.b)
        else:
            result = worker(args.worker, Path(args.data), args.queries, args.k1, args.b)
        print(json.dumps(result))
        return 0
    try:
        import bm25s  # noqa: F401
        import rank_bm25  # noqa: F401
    except ImportError:
        print("benchmarks.bm25: error: needs the peers: pip install 'retrieval-gate[bench]'", file=sys.stderr)
        return 2
    from adapters.tokenizer import Tokenizer
    from benchmarks.stdlib_corpus import load_items

    sizes = sorted(args.sizes)
    started = time.perf_counter()
    items = load_items(limit=max(sizes), sources=("stdlib", "site-packages"))
    tokenize = Tokenizer()
    docs_tokens = [tokenize(item.text) for item in items]
    print(f"# BM25 benchmark, python {sys.version.split()[0]}, k1={args.k1} b={args.b}, top {K}, "
          f"{os.cpu_count()} CPUs; corpus read and tokenised in {time.perf_counter() - started:.1f} s "
          f"({sum(map(len, docs_tokens))} tokens)")
    with tempfile.TemporaryDirectory(prefix="bm25-bench-") as tmp:
        for size in sizes:
            for line in compare(min(size, len(items)), items, docs_tokens, args.queries, args.slow_queries,
                                Path(tmp), args.k1, args.b):
                print(line, flush=True)
        if not args.skip_1m:
            adapter = short_docs_run(Path(tmp), args.k1, args.b)
            peers = {}
            for engine in ("ours", "bm25s"):
                done = subprocess.run([sys.executable, "-m", "benchmarks.bm25", "--worker", f"{engine}-1m",
                                       "--data", str(Path(tmp) / "short" / "lines.jsonl"),
                                       "--k1", str(args.k1), "--b", str(args.b)],
                                      capture_output=True, text=True, cwd=_repo_root())
                peers[engine] = json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr[-500:]}
            verdict = "within" if adapter["peak_rss_mb"] <= MEMORY_LIMIT_MB else "OVER"
            print(f"## {adapter['docs']} short documents (source lines), vocabulary {adapter['vocab']}")
            print(f"adapter: start-up {adapter['startup_s']:.1f} s, peak RSS {adapter['peak_rss_mb']:.0f} MB "
                  f"({verdict} {MEMORY_LIMIT_MB} MB), answered a query with {adapter['answered']} hits")
            for engine, row in peers.items():
                if "error" in row:
                    print(f"{engine}: failed: {row['error']}")
                else:
                    print(f"{engine} from shared tokens: build {row['build_s']:.1f} s, build peak "
                          f"{row['peak_mb']:.0f} MB above the {row['tokens_mb']:.0f} MB of loaded tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
