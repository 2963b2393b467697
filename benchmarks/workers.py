"""Throughput scaling of `--workers N` (1, 2, 4): requests answered per second over the shipped sets.

Two backends, measured in the same run: the BM25 reference adapter (CPU-bound, so on a 2-core
machine scaling stops at 2) and a stand-in backend that spends a fixed time per query off-CPU
(like a backend behind a network call), where workers overlap the waits.

Run: python -m benchmarks.workers [--repeats 3] [--service-ms 5]
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

SLEEPY_ADAPTER = """
import sys, time, json
delay = float(sys.argv[1]) / 1000
print(json.dumps({"ready": True, "name": "sleepy"}), flush=True)
for line in sys.stdin:
    time.sleep(delay)
    sys.stdout.write('{"ids": []}\\n')
    sys.stdout.flush()
"""


def run_once(backend_args: list[str], workers: int, repeats: int, out: Path) -> tuple[float, int, float]:
    """(seconds spent asking, requests asked) for one harness run."""
    command = [sys.executable, "-m", "harness", "--set", "all", "--no-gate", "--quiet", "--out", str(out),
               "--workers", str(workers), "--repeats", str(repeats), *backend_args]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    report = json.loads(out.read_text())
    requests = sum(len(s["queries"]) for s in report["sets"]) * repeats
    return report["provenance"]["asking_seconds"], requests, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--service-ms", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        sleepy = Path(scratch) / "sleepy.py"
        sleepy.write_text(SLEEPY_ADAPTER)
        backends = {
            "bm25 (CPU-bound)": ["--backend", "bm25"],
            f"sleepy {args.service_ms:g} ms (off-CPU)": ["--adapter", "--expect-banner", "--",
                                                         sys.executable, str(sleepy), str(args.service_ms)],
        }
        print(f"--set all, --repeats {args.repeats}, {os.cpu_count()} cpus; requests/s while asking "
              f"(start-up excluded), speed-up vs 1 worker")
        print(f"{'backend':<28}{'workers':>8}{'requests':>10}{'seconds':>10}{'req/s':>10}{'speed-up':>10}")
        for label, backend_args in backends.items():
            single = None
            for workers in (1, 2, 4):
                seconds, requests, _ = run_once(backend_args, workers, args.repeats, Path(scratch) / "r.json")
                rate = requests / seconds
                single = single or rate
                print(f"{label:<28}{workers:>8}{requests:>10}{seconds:>10.2f}{rate:>10.0f}{rate / single:>9.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
