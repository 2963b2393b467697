"""Start-up and quality on a corpus of realistic size, built at run time from text installed on this machine.

    python -m benchmarks.real_corpus                       # 6,000 man pages, onnx and hybrid (and bm25)
    python -m benchmarks.real_corpus --docs 5000 --queries 300 --backends onnx

The corpus (benchmarks/man_corpus.py: one document per English man page, up to 4,000
characters, its NAME line's description as the query; or, without man pages, the stdlib
docstrings of benchmarks/stdlib_corpus.py) is written into a temporary query set that is
never committed. Every backend is then run through the harness exactly as a user would
(`python -m harness --set DIR --backend NAME --no-gate`, default --startup-timeout), three
times on its own fresh cache folder (the default model linked in): cold (nothing cached),
warm (same corpus again) and edited (one document changed, the rest cached). Each run is
a child process whose peak RSS (the largest of the harness and the adapter) is measured.
Reported: whether the run completed, start-up seconds to the ready banner, documents per
second of indexing (the adapter's own figure for its slowest part), recall@10 and the
query p50/p95.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.arguments import at_least

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("bm25", "onnx", "hybrid")
RUN_TIMEOUT_SECONDS = 3600


def build_set(folder: Path, docs: int, queries: int, max_chars: int) -> tuple[str, int]:
    """Write a query set (set.json, corpus.jsonl, queries.jsonl with pins) into `folder`; returns (source, docs)."""
    from benchmarks.man_corpus import load_docs
    from harness.sets.loader import compute_pins, load_set

    items = [(doc.id, doc.text, doc.query) for doc in load_docs(docs, max_chars)]
    source = "man pages (/usr/share/man)"
    if len(items) < docs:
        from benchmarks.stdlib_corpus import load_items

        items = [(item.id, item.text[:max_chars], item.query) for item in load_items(docs)]
        source = "python stdlib functions and classes"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for doc_id, text, _ in items:
            out.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
    with_query = [(doc_id, query) for doc_id, _, query in items if query]
    step = max(1, len(with_query) // queries)
    chosen = with_query[::step][:queries]
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as out:
        for number, (doc_id, query) in enumerate(chosen, start=1):
            out.write(json.dumps({"qid": f"real-{number:04d}", "query": query, "relevant": {doc_id: 1},
                                  "category": "description", "split": "held-out", "source": "man"}) + "\n")
    meta = {"format": 1, "name": "real", "kind": "real", "revision": 1, "k": 10,
            "description": f"built at run time from {source}; never committed",
            "corpus": {"source": "jsonl", "path": "corpus.jsonl"}}
    (folder / "set.json").write_text(json.dumps(meta), encoding="utf-8")
    loaded = load_set(folder, check_pins=False)
    meta["pins"] = compute_pins(list(loaded.queries), {doc.id: doc for doc in loaded.documents})
    (folder / "set.json").write_text(json.dumps(meta), encoding="utf-8")
    return source, len(items)


def edit_one_document(folder: Path) -> str:
    """Change one document that no query names (so the pins still hold); returns its id."""
    named = {doc_id for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
             for doc_id in json.loads(line)["relevant"]}
    lines = (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        doc = json.loads(line)
        if doc["id"] not in named:
            doc["text"] = doc["text"][:-40] + " (edited for the incremental-cache benchmark)"
            lines[number] = json.dumps(doc, ensure_ascii=False)
            (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
            return doc["id"]
    raise RuntimeError("every document is named by a query")


def run_once(set_dir: Path, backend: str, cache: Path, out: Path) -> dict:
    """One harness run in a child; returns its figures (peak RSS over the harness and its adapter)."""
    argv = [sys.executable, "-m", "harness", "--set", str(set_dir), "--backend", backend, "--no-gate",
            "--out", str(out)]
    env = {**os.environ, "RETRIEVAL_GATE_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    code = ("import resource, subprocess, sys, json; "
            f"done = subprocess.run({argv!r}, capture_output=True, text=True, timeout={RUN_TIMEOUT_SECONDS}); "
            "sys.stderr.write(done.stderr[-3000:]); "
            "print(json.dumps({'rc': done.returncode, "
            "'peak_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))")
    started = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                           check=False)
    wall = time.perf_counter() - started
    status = json.loads(child.stdout.strip().splitlines()[-1])
    row = {"backend": backend, "rc": status["rc"], "wall_s": wall, "peak_mib": status["peak_kib"] / 1024}
    if not out.is_file():
        row["error"] = child.stderr.strip().splitlines()[-1] if child.stderr.strip() else "no report"
        return row
    report = json.loads(out.read_text(encoding="utf-8"))
    adapter = report["provenance"]["adapter"]
    row["complete"] = report["complete"]
    row["error"] = report.get("error")
    row["startup_s"] = adapter.get("startup_seconds")
    if report["sets"]:
        result = report["sets"][0]
        row["recall@10"] = result["aggregates"]["overall"]["recall@10"]
        row["p50_ms"], row["p95_ms"] = result["latency_ms"]["p50"], result["latency_ms"]["p95"]
    index = (adapter.get("banner") or {}).get("index", {}).get("real", {})
    row["index"] = index
    return row


def rate(row: dict, docs: int) -> str:
    """Documents per second of the slowest start-up part, from the adapter's own banner figures."""
    index = row.get("index") or {}
    part = index.get("embedder", index) if isinstance(index.get("embedder"), dict) else index
    seconds = part.get("seconds", part.get("build_seconds", part.get("load_seconds")))
    embedded = part.get("embedded", docs if part.get("cache") in ("miss", "off") else 0)
    if not seconds:
        return "-"
    if part.get("cache") == "hit" or not embedded:
        return f"(load {seconds:.1f} s)"
    return f"{embedded / seconds:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.real_corpus", description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=at_least(2), default=6000, help="documents (default 6000; at least 5000 for the issue)")
    parser.add_argument("--queries", type=at_least(1), default=400, help="queries, one per sampled document (default 400)")
    parser.add_argument("--max-chars", type=at_least(1), default=4000, help="characters per document (default 4000)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="comma list (default bm25,onnx,hybrid)")
    parser.add_argument("--keep", type=Path, help="build the set and caches here and keep them (default: a temp folder)")
    args = parser.parse_args(argv)
    if args.queries >= args.docs:
        parser.error(f"--queries {args.queries}: must be fewer than --docs {args.docs} (one document is left "
                     "unnamed, to be edited for the incremental-cache figure)")
    from adapters import model_store

    model_folder = model_store.model_dir()
    with tempfile.TemporaryDirectory(prefix="rg-real-") as scratch:
        base = args.keep or Path(scratch)
        set_dir = base / "set"
        source, docs = build_set(set_dir, args.docs, args.queries, args.max_chars)
        lengths = [len(json.loads(line)["text"]) for line in (set_dir / "corpus.jsonl").open(encoding="utf-8")]
        print(f"# {docs} documents from {source}, median {sorted(lengths)[len(lengths) // 2]} characters, "
              f"{sum(length >= args.max_chars for length in lengths)} cut at {args.max_chars}; "
              f"{sum(1 for _ in (set_dir / 'queries.jsonl').open())} queries; cpus {os.cpu_count()}, "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
        original = (set_dir / "corpus.jsonl").read_bytes()
        rows = []
        for backend in args.backends.split(","):
            cache = base / f"cache-{backend}"
            (cache / "models").mkdir(parents=True, exist_ok=True)
            link = cache / "models" / model_folder.name
            if not link.exists():
                link.symlink_to(model_folder, target_is_directory=True)
            (set_dir / "corpus.jsonl").write_bytes(original)
            for condition in ("cold", "warm", "edited"):
                if condition == "edited":
                    edit_one_document(set_dir)
                row = run_once(set_dir, backend, cache, base / f"{backend}-{condition}.json")
                row["condition"] = condition
                rows.append(row)
                print(f"  {backend} {condition}: rc {row['rc']}, start-up {row.get('startup_s') or 0:.1f} s, "
                      f"{row['wall_s']:.1f} s wall, index {json.dumps(row.get('index'))[:300]}",
                      file=sys.stderr, flush=True)
        (set_dir / "corpus.jsonl").write_bytes(original)
    print("| backend | cache | completed | start-up s | docs/s indexed | peak RSS MiB | recall@10 | p50 ms | p95 ms |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        done = "yes" if row.get("complete") and row["rc"] == 0 else f"NO (exit {row['rc']}: {row.get('error')})"
        recall = row.get("recall@10")
        print(f"| {row['backend']} | {row['condition']} | {done} | {row.get('startup_s') or 0:.1f} | "
              f"{rate(row, docs)} | {row['peak_mib']:.0f} | {recall if recall is None else f'{recall:.3f}'} | "
              f"{row.get('p50_ms', 0):.1f} | {row.get('p95_ms', 0):.1f} |")
    print(f"# load average at end {os.getloadavg()[0]:.2f}; shared 2-core machine, figures are noisy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
