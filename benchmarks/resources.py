"""Resource gates on the BM25 reference adapter: quiet when nothing changed, loud when memory grew.

A/A: one run of the shipped sets records a baseline (in a temp folder), then --runs more runs of
the same backend are gated against it under the default policy; every start-up, peak RSS and index
size warning among them is a false alarm. Their spread (smallest to largest of each figure over all
the runs) is printed beside the policy's floors, which must cover it.

Growth: --runs runs of the same backend behind a wrapper process that holds --grow-mib MiB more
(the wrapper starts the adapter as its child: one process group, so the tree's sum is what grows),
gated against the same baseline: each must warn on peak RSS (memory-relative).

Run: python -m benchmarks.resources [--runs 5] [--sets memory,code,dedupe] [--grow-mib 256]
     [--quick: --runs 2]
Targets (docs/gate.md, "Resource budgets"): A/A resource warnings 0 of --runs; growth warnings
--runs of --runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import harness
from benchmarks.arguments import at_least
from harness.gating.baseline import build_baseline, write_baseline
from harness.gating.gates import RESOURCE_GATES
from harness.gating.policy import GatePolicy
from harness.measured import RESOURCE_FIGURES, resource_text

# Holds N MiB (every page written), then runs the adapter as its child with the same stdin and stdout.
GROWN_WRAPPER = ("import subprocess, sys; held = b'x' * (int(sys.argv[1]) * 1024 * 1024); "
                 "sys.exit(subprocess.call(sys.argv[2:]))")


def run(sets: list[str], backend: object, baseline: Path | None, log: Path, **options: object):
    return harness.gate(sets, backend=backend, baseline=baseline, budgets=None, policy=None, log_path=log, **options)


def resource_alarms(report) -> list[str]:
    """The resource gates that did not pass, as `gate status`."""
    return [f"{g.set_name} {g.gate} {g.status}" for g in report.gates
            if g.gate.removesuffix("-relative") in RESOURCE_GATES.values() and g.status != "pass"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=at_least(1), default=5, help="A/A runs and growth runs (default 5)")
    parser.add_argument("--sets", default="memory,code,dedupe", help="comma-separated shipped sets")
    parser.add_argument("--grow-mib", type=at_least(1), default=256, help="the growth run's extra memory")
    parser.add_argument("--quick", action="store_true", help="--runs 2")
    args = parser.parse_args(argv)
    runs = 2 if args.quick else args.runs
    sets = [name.strip() for name in args.sets.split(",") if name.strip()]
    print(f"resources: {runs} A/A and {runs} growth runs of bm25 on {', '.join(sets)}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="resources-bench-") as folder:
        baseline, log = Path(folder) / "baseline.json", Path(folder) / "adapter.log"
        first = run(sets, "bm25", None, log)
        write_baseline(baseline, build_baseline(list(first.sets), first.provenance.to_dict()), merge=False)
        figures = {name: [getattr(first.sets[0].resources, name)] for name, _, _ in RESOURCE_FIGURES}
        alarms = 0
        for number in range(1, runs + 1):
            report = run(sets, "bm25", baseline, log)
            for name in figures:
                figures[name].append(getattr(report.sets[0].resources, name))
            found = resource_alarms(report)
            alarms += bool(found)
            print(f"  A/A run {number}: " + ", ".join(f"{words} {resource_text(getattr(report.sets[0].resources, name), unit)}"
                                                       for name, unit, words in RESOURCE_FIGURES)
                  + (f"  ALARM: {'; '.join(found)}" if found else ""))
        policy = GatePolicy()
        floors = {"startup_seconds": policy.resources_min_increase_seconds,
                  "peak_rss_mib": policy.resources_min_increase_mib, "index_bytes": policy.resources_min_increase_bytes}
        for name, unit, words in RESOURCE_FIGURES:
            values = [v for v in figures[name] if v is not None]
            if values:
                print(f"  {words}: {resource_text(min(values), unit)} to {resource_text(max(values), unit)} over "
                      f"{len(values)} runs (spread {resource_text(max(values) - min(values), unit)}; "
                      f"policy floor {resource_text(floors[name], unit)})")
        print(f"A/A runs with a resource warning: {alarms} of {runs} (target 0)")
        grown_backend = [sys.executable, "-c", GROWN_WRAPPER, str(args.grow_mib), sys.executable, "-m", "adapters.bm25"]
        caught = 0
        for number in range(1, runs + 1):
            started = time.monotonic()
            # the wrapper's command is not the baseline's: the same banner, another argv (allowed, on purpose)
            report = run(sets, grown_backend, baseline, log, expect_banner=True, allow_backend_change=True)
            memory = [g for g in report.gates if g.gate == "memory-relative" and g.status != "pass"]
            caught += bool(memory) and len(memory) == len(sets)
            peak = resource_text(report.sets[0].resources.peak_rss_mib, "MiB")
            print(f"  growth run {number}: peak RSS {peak}, memory-relative "
                  f"{memory[0].status if memory else 'pass'} in {len(memory)} of {len(sets)} sets "
                  f"({time.monotonic() - started:.1f} s)")
        print(f"growth runs (+{args.grow_mib} MiB) that warned on every set: {caught} of {runs} (target {runs})")
    return 0 if alarms == 0 and caught == runs else 1


if __name__ == "__main__":
    sys.exit(main())
