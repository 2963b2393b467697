"""Throughput scaling of `--workers N` (1, 2, 4), local processes and Ray actors: requests per second over the shipped sets.

Two backends, measured in the same run: the BM25 reference adapter (CPU-bound, so on a 2-core
machine scaling stops at 2) and a stand-in backend that spends a fixed time per query off-CPU
(like a backend behind a network call), where workers overlap the waits. Each executor: local
(`--workers N` adapter processes) and, when Ray is importable, `--executor ray` on one local Ray
instance with 4 CPUs started for the benchmark. Every rate is also given as a ratio to one local
worker. Ray's start-up cost is stated separately: starting a local instance (a run without
--ray-address) and, per run, joining a running cluster and starting the actors and adapters.

Each configuration runs --rounds times, the configurations taking turns each round, and the
median rate is shown (the machine is shared: one run can be 10-20% off). The ratio to one local
worker is paired: each round's time against that round's one-local-worker run, the median of
the rounds' ratios and their range shown, so a load that comes and goes between rounds hits
both sides of a ratio alike. The load average is printed with every round.

Run: python -m benchmarks.workers [--repeats 3] [--rounds 3] [--service-ms 5] [--executors local,ray]
     [--backends bm25,sleepy] [--workers 1,2,4] [--blocks 10]

Then, with Ray, BM25 at 1 worker once more, interleaved (--blocks, 0 to skip): one local adapter
and one Ray actor started side by side in this process, asked every set's requests (--repeats
each) in turns, through the path a run asks by (harness.adapter.asking), so that a burst of load
from elsewhere on the machine hits both sides of each block's ratio alike; a first block each,
untimed, warms them up. The separate runs above each pay their own load.

Targets (docs/performance.md, docs/scale.md): BM25 on Ray at 1 worker at least 0.9x of one local worker, scaling with
workers; the 5 ms backend on Ray at 2 and 4 workers at least 1.9x and 3.6x of one local worker.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.arguments import at_least, list_of, names_from

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
os.environ["RAY_worker_niceness"] = "0"  # as a run's own local instance (harness/adapter/ray_instance.py)
ray.init(num_cpus=int(sys.argv[1]), include_dashboard=False, log_to_driver=False, logging_level="ERROR",
         object_store_memory=200 * 1024 * 1024, runtime_env={"env_vars": {"PYTHONPATH": sys.argv[2]}},
         _temp_dir=sys.argv[3])  # its session files, removed with the benchmark's scratch folder
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


def interleaved(address: str, repeats: int, blocks: int) -> list[tuple[float, float, float]]:
    """(local seconds, Ray seconds, load average) per block: BM25 at 1 worker on each executor, asked in turns."""
    from harness.adapter.asking import _replies, _requests, local_workers
    from harness.adapter.backends import backend_argv
    from harness.adapter.options import RunOptions
    from harness.adapter.ray_executor import RayWorkers
    from harness.api import load_inputs
    from harness.layout import resolve
    from harness.sets.materialise import materialise_corpora

    query_sets = load_inputs(["all"], layout=resolve(), offline=False, k=None, gated=False).query_sets
    with tempfile.TemporaryDirectory() as scratch, contextlib.ExitStack() as stack:
        corpus_dir = Path(scratch, "corpora")
        corpus_dir.mkdir()
        materialise_corpora(query_sets, corpus_dir)
        options = RunOptions(argv=backend_argv("bm25"), repeats=repeats, log_path=Path(scratch, "adapter.log"))
        local = local_workers(options, corpus_dir, stack)[0]
        ray = RayWorkers(address=address)(options, corpus_dir, stack)[0]
        requests = _requests(query_sets, 0, 1, options)

        def seconds(worker) -> float:
            start = time.perf_counter()
            for _ in _replies(worker, requests):
                pass
            return time.perf_counter() - start
        seconds(local), seconds(ray)  # warm-up
        timings = []
        for number in range(blocks):
            first, second = (local, ray) if number % 2 == 0 else (ray, local)
            took = {first: seconds(first), second: seconds(second)}
            timings.append((took[local], took[ray], os.getloadavg()[0]))
        return timings


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
    parser.add_argument("--executors", type=names_from(("local", "ray")), default=["local", "ray"])
    parser.add_argument("--backends", type=names_from(("bm25", "sleepy")), default=["bm25", "sleepy"])
    parser.add_argument("--workers", type=list_of(1), default=[1, 2, 4])
    parser.add_argument("--blocks", type=at_least(0), default=10)
    args = parser.parse_args()
    executors = args.executors
    if "local" not in executors or 1 not in args.workers:
        parser.error("the ratios need the reference configuration: --executors with local and --workers with 1")
    executors.sort(key=("local", "ray").index)
    if "ray" in executors and not ray_available():
        print("ray is not importable (pip install -e '.[ray]'): measuring local workers only")
        executors = [e for e in executors if e != "ray"]
    root = str(Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory() as scratch:
        sleepy = Path(scratch) / "sleepy.py"
        sleepy.write_text(SLEEPY_ADAPTER)
        backends = {label: argv for key, label, argv in (
            ("bm25", "bm25 (CPU-bound)", ["--backend", "bm25"]),
            ("sleepy", f"sleepy {args.service_ms:g} ms (off-CPU)",
             ["--adapter", "--expect-banner", "--", sys.executable, str(sleepy), str(args.service_ms)]))
            if key in args.backends}
        holder = None
        executor_args = {"local": []}
        if "ray" in executors:
            # A throwaway instance on this machine: its runs join without Ray's token authentication
            # (with it, a second driver process was refused by the instance in our runs).
            os.environ["RAY_AUTH_MODE"] = "disabled"
            holder = subprocess.Popen([sys.executable, "-c", RAY_HOLDER, "4", root, str(Path(scratch, "ray"))],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            executor_args["ray"] = ["--executor", "ray", "--ray-address", holder.stdout.readline().strip()]
        try:
            print(f"--set all, --repeats {args.repeats}, {os.cpu_count()} cpus; requests/s while asking "
                  f"(start-up excluded), median of {args.rounds} rounds, ratio to 1 local worker")
            ray_startups = []
            configurations = [(label, executor, workers) for label in backends for executor in executors
                              for workers in args.workers]
            timings: dict[tuple, list[tuple[float, int]]] = {configuration: [] for configuration in configurations}
            for number in range(args.rounds):
                loads = [os.getloadavg()[0]]
                for label, executor, workers in configurations:
                    seconds, requests, record = run_once(backends[label], workers, args.repeats,
                                                         Path(scratch) / "r.json", executor_args[executor])
                    if record:
                        ray_startups.append((workers, record["startup_seconds"], record["connect_seconds"]))
                    timings[(label, executor, workers)].append((seconds, requests))
                    loads.append(os.getloadavg()[0])
                print(f"round {number + 1}: load average {min(loads):.1f} to {max(loads):.1f}", flush=True)
            print(f"{'backend':<28}{'executor':>9}{'workers':>8}{'requests':>10}{'seconds':>10}{'req/s':>10}"
                  f"{'x local 1':>11}  {'range of the rounds':>20}")
            for label, executor, workers in configurations:
                runs = timings[(label, executor, workers)]
                seconds = statistics.median(s for s, _ in runs)
                requests = runs[0][1]
                # Paired: this round's one local worker against this round's run of the configuration.
                ratios = [single / s for (single, _), (s, _) in zip(timings[(label, "local", 1)], runs)]
                print(f"{label:<28}{executor:>9}{workers:>8}{requests:>10}{seconds:>10.2f}{requests / seconds:>10.0f}"
                      f"{statistics.median(ratios):>10.2f}x  {min(ratios):>9.2f}x - {max(ratios):.2f}x")
            if "ray" in executors and args.blocks:
                timings = interleaved(executor_args["ray"][-1], args.repeats, args.blocks)
                ratios = [local / ray for local, ray, _ in timings]
                print(f"\nbm25, 1 worker, interleaved in one process: {len(timings)} blocks of every set's requests "
                      f"(--repeats {args.repeats}), load average {min(l for *_, l in timings):.1f} to "
                      f"{max(l for *_, l in timings):.1f}")
                print(f"  local {statistics.median(l for l, _, _ in timings):.3f} s, Ray "
                      f"{statistics.median(r for _, r, _ in timings):.3f} s a block (medians); Ray / local "
                      f"throughput {statistics.median(ratios):.2f}x (blocks {min(ratios):.2f}x - {max(ratios):.2f}x; "
                      f"{sum(ratio >= 0.9 for ratio in ratios)} of {len(ratios)} at 0.9x or more)")
            if "ray" in executors:
                _, _, record = run_once(["--backend", "bm25"], 1, 1, Path(scratch) / "r.json",
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
