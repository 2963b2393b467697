"""Paired latency's false alarms and detection on this machine, with `python -m harness --set all` looping beside it.

Each run starts two stand-in backends (benchmarks/delayed_adapter.py) the way a run with
`--baseline-adapter` does (harness.adapter.asking: both pinned to one CPU, asked each query in
ABBA order), asks `--queries` synthetic queries, and decides the paired latency gate with the
default policy (harness.gating.gates: WARN when the 95% CI of the p50 or p95 ratio lies above
1.5x, FAIL above 5x). Per tier (the baseline backend's p50: 0.1, 1, 10 and 100 ms; the stand-in
holds each answer for the tier less the measured round-trip floor) three cases, `--runs` runs
each: the same backend against itself, a 2x and a 10x per-query slowdown (the run holds each
answer so that its per-query time is 2x or 10x the tier). The 100 ms tier's runs go 20 at a time
(they sleep; run one by one it would take 10 minutes); the others one at a time. Another harness
run loops beside the whole benchmark (started here, stopped at the end) to keep the machine busy.

Run: python -m benchmarks.paired_latency [--runs 20] [--queries 50] [--repeats 1] [--tiers 0.1,1,10,100] [--quick]

Targets (docs/performance.md, "Paired latency"): the same backend warns in 0 of 20 runs; a 2x
slowdown shows (WARN or FAIL) in at least 19 of 20 runs at every tier; a 10x slowdown shows in
every run and fails by the default policy.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.arguments import at_least
from harness.adapter.asking import ask_sets
from harness.adapter.options import RunOptions
from harness.gating.gates import paired_latency_gate
from harness.gating.policy import GatePolicy
from harness.records import Document, Query, QuerySet, SetResult

TIERS_MS = (0.1, 1.0, 10.0, 100.0)
CASES = (("same", 1.0), ("2x", 2.0), ("10x", 10.0))
PARALLEL_FROM_MS = 100.0  # tiers this slow run their runs 20 at a time: they sleep, the CPU stays free
PARALLEL_RUNS = 20


def synthetic_set(queries: int) -> QuerySet:
    rows = tuple(Query(qid=f"q{i:03d}", query=f"query {i}", relevant={"d1": 1}, category="a", split="development",
                       source="synthetic") for i in range(queries))
    return QuerySet("synthetic", "synthetic", 1, "synthetic queries", 10, "", rows, (Document("d1", "x", "0" * 64),),
                    "0" * 64, "inline")


def adapter(delay_ms: float) -> list[str]:
    return [sys.executable, "-m", "benchmarks.delayed_adapter", "--delay-ms", f"{delay_ms:.6f}"]


def paired_run(query_set: QuerySet, run_delay_ms: float, base_delay_ms: float, repeats: int = 1) -> SetResult:
    """One paired run, as `--baseline-adapter` asks: the evaluated result with both sides' latencies."""
    with tempfile.TemporaryDirectory() as folder:
        options = RunOptions(argv=adapter(run_delay_ms), baseline_adapter=tuple(adapter(base_delay_ms)),
                             log_path=Path(folder) / "adapter.log", repeats=repeats)
        with ask_sets([query_set], options, Path(folder)) as run:
            run.start()
            run.ask()
        if run.outcome.error is not None:
            raise SystemExit(f"paired run failed: {run.outcome.error}")
        return run.outcome.results[0]


class LoadLoop:
    """`python -m harness --set all --no-gate` over and over in a temp folder, until `stop()`."""

    def __init__(self) -> None:
        self.folder = tempfile.TemporaryDirectory()
        self.stopping = threading.Event()
        self.process: subprocess.Popen | None = None
        self.runs = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        command = [sys.executable, "-m", "harness", "--set", "all", "--no-gate", "--quiet", "--offline",
                   "--out", str(Path(self.folder.name) / "load.json")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
        while not self.stopping.is_set():
            self.process = subprocess.Popen(command, cwd=self.folder.name, env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
            self.process.wait()
            self.runs += 1

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # only the run this loop started
        self.thread.join()
        self.folder.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=at_least(1), default=20, help="runs per tier and case (default: 20)")
    parser.add_argument("--queries", type=at_least(20), default=50, help="queries per run (default: 50; the gate "
                                                                           "needs the policy's min_samples, 20)")
    parser.add_argument("--repeats", type=at_least(1), default=1, help="each query asked N times per side, its "
                                                                        "latency the median (--repeats; default: 1)")
    parser.add_argument("--tiers", default=",".join(f"{t:g}" for t in TIERS_MS),
                        help="the baseline backend's p50 per tier, ms, comma-separated (default: 0.1,1,10,100)")
    parser.add_argument("--quick", action="store_true", help="5 runs per tier and case (a smoke test, not the targets)")
    parser.add_argument("--no-load", action="store_true", help="no harness loop beside it")
    args = parser.parse_args(argv)
    try:
        tiers = [float(part) for part in args.tiers.split(",") if part.strip()]
    except ValueError:
        parser.error(f"--tiers: expected numbers, got {args.tiers!r}")
    if not tiers or min(tiers) <= 0:
        parser.error("--tiers: at least one tier, each above 0 ms")
    runs = 5 if args.quick else args.runs
    query_set, policy = synthetic_set(args.queries), GatePolicy()
    load = LoadLoop()
    if not args.no_load:
        load.start()
    started = time.monotonic()
    try:
        floor_result = paired_run(synthetic_set(200), 0.0, 0.0)
        floor_ms = floor_result.base_latency.p50 if floor_result.base_latency else 0.0
        print(f"{runs} runs per case, {args.queries} queries each; {os.cpu_count()} cpus; load beside it: "
              f"{'none' if args.no_load else 'python -m harness --set all, looping'}; round-trip floor p50 "
              f"{floor_ms:.3f} ms; policy: warn above {policy.latency_paired_warn_ratio:g}x, fail above "
              f"{policy.latency_paired_fails_ratio:g}x (95% CI wholly above)")
        print(f"{'tier':>8} {'case':>5} {'base p50':>9} {'run p50':>8} {'CI low min..max':>16} {'warned':>7} "
              f"{'failed':>7} {'shown':>6}  target")
        met_all = True
        for tier in tiers:
            base_delay = max(0.0, tier - floor_ms)
            for case, factor in CASES:
                run_delay = base_delay + (factor - 1) * tier

                def one(_: int) -> SetResult:
                    return paired_run(query_set, run_delay, base_delay, args.repeats)

                workers = PARALLEL_RUNS if tier >= PARALLEL_FROM_MS else 1
                with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                    results = list(pool.map(one, range(runs)))
                gates = [paired_latency_gate(result, policy) for result in results]
                statuses = [gate.status if gate is not None else "none" for gate in gates]
                # the decisive ratio's interval, back from the gate's ms figures (ci / baseline)
                lows = sorted(gate.ci[0] / gate.baseline for gate in gates if gate is not None and gate.ci and gate.baseline)
                warned, failed = statuses.count("warn"), statuses.count("fail")
                shown = warned + failed
                if case == "same":
                    target, met = f"0 of {runs} shown", shown == 0
                elif case == "2x":
                    need = runs - max(0, runs // 20)  # 19 of 20
                    target, met = f">= {need} of {runs} shown", shown >= need
                else:
                    target, met = f"{runs} of {runs} failed", failed == runs
                met_all &= met
                base_p50 = statistics.median(r.base_latency.p50 or 0.0 for r in results if r.base_latency)
                run_p50 = statistics.median(r.latency.p50 or 0.0 for r in results)
                spread = f"{lows[0]:.2f}..{lows[-1]:.2f}" if lows else "-"
                print(f"{tier:>6g}ms {case:>5} {base_p50:>9.3f} {run_p50:>8.3f} {spread:>16} {warned:>7} {failed:>7} "
                      f"{shown:>6}  "
                      f"{target}: {'met' if met else 'NOT MET'}", flush=True)
    finally:
        if not args.no_load:
            load.stop()
    print(f"{'all targets met' if met_all else 'some target NOT met'}; {time.monotonic() - started:.0f} s; "
          f"{load.runs} harness runs looped beside it; load average now {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
