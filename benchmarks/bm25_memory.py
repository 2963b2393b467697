"""The BM25 index's memory model: build peak and held bytes per token, posting and document, at 100k and 1M documents.

    python -m benchmarks.bm25_memory                      # 100000 and 1000000 passages
    python -m benchmarks.bm25_memory --sizes 100000 --project 8800000

Passages of about 330 characters (MS MARCO's average passage length) are cut at word
boundaries from the man pages installed here (benchmarks/man_corpus.py, whole pages);
when a size needs more passages than the pages give, they are reused with a numbered
prefix word, which keeps token and posting counts real and grows the vocabulary a little.
Each size is built in its own child: tokens first (not counted), then Linux VmHWM is reset
and `BM25Index.from_tokens` runs; its build peak and the memory it keeps are read from
/proc. The figures are compared with the model in adapters/bm25_index.py
(BUILD_BYTES_PER_TOKEN, BUILD_BYTES_PER_DOC) and projected to `--project` passages.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.arguments import at_least, list_of

ROOT = Path(__file__).resolve().parents[1]
PASSAGE_CHARS = 330


def passages(count: int) -> list[str]:
    from benchmarks.man_corpus import load_docs

    pieces: list[str] = []
    for doc in load_docs(1_000_000, max_chars=1_000_000):
        words = doc.text.split()
        current: list[str] = []
        size = 0
        for word in words:
            current.append(word)
            size += len(word) + 1
            if size >= PASSAGE_CHARS:
                pieces.append(" ".join(current))
                current, size = [], 0
        if current:
            pieces.append(" ".join(current))
    if not pieces:
        raise SystemExit("no man pages on this machine")
    out = pieces[:count]
    copy = 1
    while len(out) < count:
        out.extend(f"copy{copy} {piece}" for piece in pieces[:count - len(out)])
        copy += 1
    return out


def _status_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def worker(size: int) -> dict:
    from adapters.bm25_index import BM25Index, BM25Settings, build_memory_estimate
    from adapters.tokenizer import Tokenizer

    texts = passages(size)
    tokenize = Tokenizer()
    docs_tokens = [tokenize(text) for text in texts]
    ids = [f"p{i:08d}" for i in range(size)]
    n_tokens = sum(map(len, docs_tokens))
    del texts
    gc.collect()
    before = _status_bytes("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    index = BM25Index.from_tokens(ids, docs_tokens, BM25Settings(use_cache=False, memory_check=False))
    peak = _status_bytes("VmHWM") - before
    del docs_tokens
    gc.collect()
    arrays = sum(getattr(index, name).nbytes for name in
                 ("offsets", "postings_docs", "postings_scores", "term_max", "term_min", "term_kth"))
    # What the index keeps, counted object by object (RSS keeps freed heap, so it overstates).
    strings = (sys.getsizeof(index.ids) + sum(map(sys.getsizeof, index.ids)) + sys.getsizeof(index.vocab)
               + sum(map(sys.getsizeof, index.vocab)) + sys.getsizeof(index.term_ids))
    return {"held": arrays + strings,"docs": size, "tokens": n_tokens, "postings": int(len(index.postings_docs)), "vocab": index.vocab_size,
            "build_peak": peak, "model_peak": build_memory_estimate(size, n_tokens), "array_bytes": arrays,
            "held_rss": _status_bytes("VmRSS") - before}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bm25_memory", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=list_of(1), default="100000,1000000")
    parser.add_argument("--project", type=at_least(1), default=8_800_000, help="passages to project to (default 8.8M)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0
    from adapters.bm25_index import BUILD_BYTES_PER_DOC, BUILD_BYTES_PER_TOKEN, build_memory_estimate

    rows = []
    for size in args.sizes:
        done = subprocess.run([sys.executable, "-m", "benchmarks.bm25_memory", "--worker", str(size)],
                              capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        if done.returncode != 0:
            print(f"{size}: worker failed: {done.stderr.strip()[-500:]}")
            continue
        rows.append(json.loads(done.stdout))
    mib = 2 ** 20
    print(f"# BM25 memory model: build adds {BUILD_BYTES_PER_TOKEN} B/token + {BUILD_BYTES_PER_DOC} B/doc "
          "(x1.15 safety in the refusal check)")
    print("| docs | tokens | postings | vocab | build peak MiB | peak B/token | model MiB | index held MiB "
          "| held B/doc (ids, vocab) | held B/posting (arrays) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['docs']} | {row['tokens']} | {row['postings']} | {row['vocab']} | "
              f"{row['build_peak'] / mib:.0f} | {row['build_peak'] / row['tokens']:.1f} | "
              f"{row['model_peak'] / mib:.0f} | {row['held'] / mib:.0f} | "
              f"{(row['held'] - row['array_bytes']) / row['docs']:.0f} | "
              f"{row['array_bytes'] / row['postings']:.2f} |")
    if rows:
        last = rows[-1]
        per_doc_tokens = last["tokens"] / last["docs"]
        per_doc_postings = last["postings"] / last["docs"]
        held_per_doc = (last["held"] - last["array_bytes"]) / last["docs"]
        tokens = int(args.project * per_doc_tokens)
        postings = int(args.project * per_doc_postings)
        peak = build_memory_estimate(args.project, tokens)
        held = held_per_doc * args.project + 8 * postings
        print(f"# projection to {args.project} passages ({per_doc_tokens:.1f} tokens, {per_doc_postings:.1f} "
              f"postings each): build peak {peak / 2**30:.1f} GiB (model, with safety; the index it keeps, "
              f"{held / 2**30:.1f} GiB, is part of it): {'within' if peak <= 24 * 2**30 else 'OVER'} 24 GiB "
              "(the adapter's reading of the corpus text comes on top, see docs/performance.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
