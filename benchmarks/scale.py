"""The harness itself at scale: one set of 1,000 / 10,000 / 100,000 queries against an adapter that answers instantly.

For each size, one harness run (`python -m harness --no-gate`, in a child process that reports its
own resource usage): wall time from start to report written, peak RSS of the harness process
(the adapter excluded), the harness's own CPU time (user + system, adapter excluded) per query,
wall time per query, and the asking phase alone per query (provenance.asking_seconds: the round
trips, without start-up, set loading or report writing), each also as a ratio to the 1,000-query
figure. Flat ratios mean the
harness's per-query cost does not grow with the set (nothing quadratic in loading, asking,
evaluating or writing the report).

Run: python -m benchmarks.scale [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.arguments import list_of

DOCUMENTS = 100
# Answers at once, with one id: the cheapest a process can reply, so what is left is the harness.
INSTANT_ADAPTER = """
import sys
out = sys.stdout.buffer
print('{"ready": true, "name": "instant", "version": "1"}', flush=True)
for line in sys.stdin.buffer:
    out.write(b'{"ids": ["d0"]}\\n')
    out.flush()
"""
# Runs the CLI in-process and reports this process's own usage (RUSAGE_SELF: the adapter excluded).
MEASURE = """
import json, resource, sys, time
from harness.commands.cli import main
started = time.perf_counter()
code = main(sys.argv[1:])
wall = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"code": code, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mb": usage.ru_maxrss / 1024}), file=sys.stderr)
"""


def write_set(folder: Path, queries: int) -> Path:
    """A valid format-1 set: DOCUMENTS pinned documents, `queries` queries each judging one of them."""
    folder.mkdir(parents=True)
    texts = {f"d{i}": f"document number {i} about topic {i % 7}" for i in range(DOCUMENTS)}
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as handle:
        for doc_id, text in texts.items():
            handle.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as handle:
        for i in range(queries):
            handle.write(json.dumps({"qid": f"q{i:06d}", "query": f"query {i} about topic {i % 7}",
                                     "relevant": {f"d{i % DOCUMENTS}": 1}, "category": f"c{i % 5}",
                                     "split": "development" if i % 2 else "held-out", "source": "synthetic"}) + "\n")
    pins = {doc_id: hashlib.sha256(text.encode("utf-8")).hexdigest() for doc_id, text in texts.items()}
    (folder / "set.json").write_text(json.dumps({
        "format": 1, "name": "scale", "kind": "scale", "revision": 1, "description": "benchmark set",
        "k": 10, "corpus": {"source": "jsonl", "path": "corpus.jsonl"}, "pins": pins}))
    return folder


def measure(queries: int, scratch: Path, adapter: Path) -> dict[str, float]:
    set_folder = write_set(scratch / f"set-{queries}", queries)
    command = [sys.executable, "-c", MEASURE, "--set", str(set_folder), "--no-gate", "--quiet",
               "--out", str(scratch / f"report-{queries}.json"), "--adapter", "--expect-banner", "--",
               sys.executable, str(adapter)]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    figures = json.loads(done.stderr.strip().splitlines()[-1])
    if figures["code"] != 0:
        raise SystemExit(f"harness run failed: {done.stderr}")
    report = json.loads((scratch / f"report-{queries}.json").read_text())
    figures["asking"] = report["provenance"]["asking_seconds"]
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=list_of(1), default="1000,10000,100000")
    args = parser.parse_args()
    sizes = args.sizes
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        adapter = scratch / "instant.py"
        adapter.write_text(INSTANT_ADAPTER)
        print("one set, an adapter answering instantly; harness process only (adapter excluded) for CPU and RSS")
        print(f"{'queries':>9}{'wall s':>9}{'peak RSS MB':>13}{'CPU us/q':>10}{'x 1k':>7}"
              f"{'wall us/q':>11}{'x 1k':>7}{'asking us/q':>13}{'x 1k':>7}")
        first = None
        for size in sizes:
            figures = measure(size, scratch, adapter)
            cpu_per_query = figures["cpu"] / size * 1e6
            wall_per_query = figures["wall"] / size * 1e6
            asking_per_query = figures["asking"] / size * 1e6
            first = first or (cpu_per_query, wall_per_query, asking_per_query)
            print(f"{size:>9}{figures['wall']:>9.2f}{figures['peak_rss_mb']:>13.1f}"
                  f"{cpu_per_query:>10.1f}{cpu_per_query / first[0]:>7.2f}{wall_per_query:>11.1f}"
                  f"{wall_per_query / first[1]:>7.2f}{asking_per_query:>13.1f}{asking_per_query / first[2]:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
