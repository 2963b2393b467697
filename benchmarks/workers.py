"""Throughput scaling of `--workers N` (1, 2, 4), local processes and Ray actors: requests per second over the shipped sets.

Two backends, measured in the same run: the BM25 reference adapter (CPU-bound, so on a 2-core
machine scaling stops at 2) and a stand-in backend that spends a fixed time per query off-CPU
(like a backend behind a network call), where workers overlap the waits. Each executor: local
(`--workers N` adapter processes) and, when Ray is importable, `--executor ray` on one local Ray
instance with 4 CPUs started for the benchmark. Every rate is also given as a ratio to one local
worker. Ray's start-up cost is stated separately: starting a local instance (a run without
--ray-address) and, per run, joining a running cluster and starting the actors and adapters.

Each configuration runs --rounds times, the configurations taking turns each round, and the
median rate is shown (the machine is shared: one run can be 10-20% off).

Run: python -m benchmarks.workers [--repeats 3] [--rounds 3] [--service-ms 5] [--executors local,ray]

Targets (docs/performance.md, docs/scale.md): BM25 on Ray at 1 worker at least 0.9x of one local worker, scaling with
workers; the 5 ms backend on Ray at 2 and 4 workers at least 1.9x and 3.6x of one local worker.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.arguments import at_least

SLEEPY_ADAPTER = """
import sys, time, json
delay = float(sys.argv[1]) / 1000
print(json.dumps({"ready": True, "name": "sleepy"}), flush=True)
for line in sys.stdin:
    time.sleep(delay)
    sys.stdout.write('{"ids": []}\\n')
    sys.stdout.flush()
"""


# Holds a local Ray instance for the benchmark's runs: prints its address, ends it when stdin closes.
RAY_HOLDER = """
import os, sys, ray
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
ray.init(num_cpus=int(sys.argv[1]), include_dashboard=False, log_to_driver=False, logging_level="ERROR",
         object_store_memory=200 * 1024 * 1024, runtime_env={"env_vars": {"PYTHONPATH": sys.argv[2]}})
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()
ray.shutdown()
"""


def run_once(backend_args: list[str], workers: int, repeats: int, out: Path,
             executor_args: list[str] = ()) -> tuple[float, int, dict]:
    """(seconds spent asking, requests asked, provenance.executor or {}) for one harness run."""
    command = [sys.executable, "-m", "harness", "--set", "all", "--no-gate", "--quiet", "--out", str(out),
               "--workers", str(workers), "--repeats", str(repeats), *executor_args, *backend_args]
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)
    report = json.loads(out.read_text())
    requests = sum(len(s["queries"]) for s in report["sets"]) * repeats
    return report["provenance"]["asking_seconds"], requests, report["provenance"].get("executor", {})


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=at_least(1), default=3)
    parser.add_argument("--rounds", type=at_least(1), default=3)
    parser.add_argument("--service-ms", type=float, default=5.0)
    parser.add_argument("--executors", default="local,ray")
    args = parser.parse_args()
    executors = args.executors.split(",")
    if "ray" in executors and not ray_available():
        print("ray is not importable (pip install -e '.[ray]'): measuring local workers only")
        executors = [e for e in executors if e != "ray"]
    root = str(Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory() as scratch:
        sleepy = Path(scratch) / "sleepy.py"
        sleepy.write_text(SLEEPY_ADAPTER)
        backends = {
            "bm25 (CPU-bound)": ["--backend", "bm25"],
            f"sleepy {args.service_ms:g} ms (off-CPU)": ["--adapter", "--expect-banner", "--",
                                                         sys.executable, str(sleepy), str(args.service_ms)],
        }
        holder = None
        executor_args = {"local": []}
        if "ray" in executors:
            # A throwaway instance on this machine: its runs join without Ray's token authentication
            # (with it, a second driver process was refused by the instance in our runs).
            os.environ["RAY_AUTH_MODE"] = "disabled"
            holder = subprocess.Popen([sys.executable, "-c", RAY_HOLDER, "4", root], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
            executor_args["ray"] = ["--executor", "ray", "--ray-address", holder.stdout.readline().strip()]
        try:
            print(f"--set all, --repeats {args.repeats}, {os.cpu_count()} cpus; requests/s while asking "
                  f"(start-up excluded), median of {args.rounds} rounds, ratio to 1 local worker")
            print(f"{'backend':<28}{'executor':>9}{'workers':>8}{'requests':>10}{'seconds':>10}{'req/s':>10}"
                  f"{'x local 1':>11}")
            ray_startups = []
            configurations = [(label, executor, workers) for label in backends for executor in executors
                              for workers in (1, 2, 4)]
            timings: dict[tuple, list[tuple[float, int]]] = {configuration: [] for configuration in configurations}
            for _ in range(args.rounds):
                for label, executor, workers in configurations:
                    seconds, requests, record = run_once(backends[label], workers, args.repeats,
                                                         Path(scratch) / "r.json", executor_args[executor])
                    if record:
                        ray_startups.append((workers, record["startup_seconds"], record["connect_seconds"]))
                    timings[(label, executor, workers)].append((seconds, requests))
            for label, executor, workers in configurations:
                seconds = statistics.median(s for s, _ in timings[(label, executor, workers)])
                requests = timings[(label, executor, workers)][0][1]
                single_seconds = statistics.median(s for s, _ in timings[(label, executors[0], 1)])
                rate = requests / seconds
                print(f"{label:<28}{executor:>9}{workers:>8}{requests:>10}{seconds:>10.2f}{rate:>10.0f}"
                      f"{single_seconds / seconds:>10.2f}x")
            if "ray" in executors:
                _, _, record = run_once(backends["bm25 (CPU-bound)"], 1, 1, Path(scratch) / "r.json",
                                        ["--executor", "ray"])
                print(f"\nRay start-up: a local instance started by the run (no --ray-address): "
                      f"{record['connect_seconds']:.1f} s to start Ray, {record['startup_seconds']:.1f} s until "
                      f"1 worker's adapter was ready")
                for workers, startup, connect in ray_startups[:3]:
                    print(f"  joining the running instance with {workers} worker(s): {connect:.1f} s to connect, "
                          f"{startup:.1f} s until every adapter was ready")
        finally:
            if holder is not None:
                holder.stdin.close()
                holder.wait(timeout=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
