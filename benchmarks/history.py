"""The gate over time, as rates: change points on synthetic histories from real per-query rows, and bisect.

Change points (harness/history/changepoints.py) on histories from BM25's per-query recall@10 on
the shipped code-agent set, 634 queries, each run with its own noise (benchmarks/history_series.py:
about 0.3 points of run-to-run sigma), over --seeds seeds each:

- staircase: 20 runs, then five drops of 0.6 points, each lasting --runs-per-step runs (1, 2 and
  3 by default); analysed after each run from the last step's first: flagged when the analysis
  shows exactly one change, of 2.4 to 3.6 points, whose commit range holds all five steps' commits.
  Target: flagged within 5 runs of the last step;
- A/A: 60 runs of one state. Target: no change point;
- blip: 30 runs, one run 4 points down (nothing committed), 10 more. Target: reported as an
  outlier, not a change;
- step: 20 runs, one commit 3 points down, 10 runs. Target: one change whose range is that commit
  (exactly, and at least holding it).

Bisect (harness/history/bisect.py, a worktree per step) on the fixture repository of
benchmarks/bisect_fixture.py: 64 commits, a 5-point recall@10 drop at one commit drawn by the seed,
noise-only commits elsewhere, over --bisect-seeds seeds. Target: the culprit named in at most 8
gate runs for 19 of 20 seeds. And a noise-only range (--noise-seeds): "no change detectable", with
the size a change would need.

With --otava PYTHON (an interpreter where `apache-otava` is installed, kept out of ours: it pins
its own numpy and scipy), Apache Otava's E-Divisive runs on the same series' run values beside ours:
its change points (its defaults: hunter's split-and-merge E-Divisive, window 50, max p-value 0.001; it
has no outliers and sees no per-query values).

    python -m benchmarks.history [--seeds 100] [--bisect-seeds 20] [--part changes|bisect|all]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks import bisect_fixture, history_series
from benchmarks.arguments import at_least, list_of
from harness import api
from harness.history.bisect import FOUND, NO_CHANGE, bisect
from harness.history.changepoints import analyse
from harness.history.worktree import WorktreeMeasure, first_parent_commits
from harness.layout import resolve

STEPS, STEP_POINTS, WITHIN_RUNS = 5, 0.6, 5
MAX_GATE_RUNS = 8

OTAVA_SCRIPT = """
import json, sys
from otava.analysis import compute_change_points
for line in sys.stdin:
    values = json.loads(line)
    points, _ = compute_change_points(values)  # its defaults: window 50, max p-value 0.001
    print(json.dumps([int(point.index) for point in points]), flush=True)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=at_least(1), default=100, help="histories per change-point case (100)")
    parser.add_argument("--runs-per-step", type=list_of(1), default=[1, 2, 3], help="staircase step lengths (1,2,3)")
    parser.add_argument("--bisect-seeds", type=at_least(1), default=20, help="fixture repositories bisected (20)")
    parser.add_argument("--noise-seeds", type=at_least(1), default=5, help="noise-only ranges bisected (5)")
    parser.add_argument("--part", choices=("changes", "bisect", "all"), default="all")
    parser.add_argument("--otava", default=None, metavar="PYTHON",
                        help="an interpreter with apache-otava installed: its change points beside ours")
    args = parser.parse_args(argv)
    print(f"# cpus {os.cpu_count()}, load average at start {os.getloadavg()[0]:.2f}", flush=True)
    if args.part in ("changes", "all"):
        change_points(args)
    if args.part in ("bisect", "all"):
        bisection(args)
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    return 0


# -- change points ---------------------------------------------------------------------------------

def change_points(args: argparse.Namespace) -> None:
    rows = history_series.real_rows()
    otava = Otava(args.otava) if args.otava else None
    print(f"\nchange points: synthetic histories from BM25's per-query recall@10 on code-agent ({len(rows)} queries), "
          f"{args.seeds} seeds each", flush=True)
    started = time.monotonic()
    for runs_per_step in args.runs_per_step:
        staircase(rows, args.seeds, runs_per_step, otava)
    aa(rows, args.seeds, otava)
    blip(rows, args.seeds, otava)
    step(rows, args.seeds, otava)
    print(f"  ({time.monotonic() - started:.0f} s)")
    if otava is not None:
        otava.close()


def _rate(hits: int, total: int) -> str:
    return f"{hits}/{total} ({100 * hits / total:.0f}%)"


def _innocent(change, steps: list[int]) -> int:
    """Commits of the change's range (last_before+1 .. first_after) outside the steps' span: blamed for nothing."""
    return len([i for i in range(change.last_before + 1, change.first_after + 1) if not steps[0] <= i <= steps[-1]])


def staircase(rows, seeds: int, runs_per_step: int, otava: Otava | None) -> None:
    flagged, latencies, sizes, innocent, peer_flagged = 0, [], [], [], 0
    for seed in range(seeds):
        history = history_series.staircase(seed, steps=STEPS, step_points=STEP_POINTS, runs_per_step=runs_per_step,
                                           after=WITHIN_RUNS, rows=rows)
        first, last = history.steps[0], history.steps[-1]
        for runs in range(1, WITHIN_RUNS + 1):
            end = last + runs
            analysis = analyse(history.values[:end], history.per_query[:end])
            if len(analysis.changes) == 1:
                [change] = analysis.changes
                if (change.last_before < first and change.first_after >= last
                        and 2.4 <= -100 * change.size <= 3.6):
                    flagged += 1
                    latencies.append(runs)
                    sizes.append(-100 * change.size)
                    innocent.append(_innocent(change, history.steps))
                    break
        if otava is not None:
            found = otava.change_points(history.values)
            peer_flagged += len(found) == 1 and first <= found[0] <= last
    print(f"  staircase, five {STEP_POINTS}-point drops, {runs_per_step} run{'s' if runs_per_step > 1 else ''} "
          f"per step: one change of about 3 points holding every step, within {WITHIN_RUNS} runs of the last step")
    print(f"    ours   {_rate(flagged, seeds):>14}   (target: within {WITHIN_RUNS} runs; "
          f"runs needed: median {statistics.median(latencies) if latencies else '-'}, max "
          f"{max(latencies) if latencies else '-'}; size {statistics.fmean(sizes):.2f} points on average; "
          f"{statistics.fmean(innocent):.1f} commits outside the staircase in the range on average)" if sizes else
          f"    ours   {_rate(flagged, seeds):>14}")
    if otava is not None:
        print(f"    otava  {_rate(peer_flagged, seeds):>14}   (one change point inside the staircase, whole series)")


def aa(rows, seeds: int, otava: Otava | None) -> None:
    clean, outliers, peer_clean = 0, 0, 0
    for seed in range(seeds):
        history = history_series.aa(1000 + seed, rows=rows)
        analysis = analyse(history.values, history.per_query)
        clean += not analysis.changes
        outliers += len(analysis.outliers)
        if otava is not None:
            peer_clean += not otava.change_points(history.values)
    print("  A/A, 60 runs of one state: no change point")
    print(f"    ours   {_rate(clean, seeds):>14}   (target: no change point; {outliers} outlier runs flagged in "
          f"{60 * seeds} runs)")
    if otava is not None:
        print(f"    otava  {_rate(peer_clean, seeds):>14}")


def blip(rows, seeds: int, otava: Otava | None) -> None:
    right, peer_clean = 0, 0
    for seed in range(seeds):
        history = history_series.blip(2000 + seed, rows=rows)
        analysis = analyse(history.values, history.per_query)
        right += not analysis.changes and 30 in [o.index for o in analysis.outliers]
        if otava is not None:
            peer_clean += not otava.change_points(history.values)
    print("  one run 4 points down, then back: an outlier, not a change")
    print(f"    ours   {_rate(right, seeds):>14}   (target: outlier, no change)")
    if otava is not None:
        print(f"    otava  {_rate(peer_clean, seeds):>14}   (no change point; it reports no outliers)")


def step(rows, seeds: int, otava: Otava | None) -> None:
    exact, holding, peer_exact = 0, 0, 0
    for seed in range(seeds):
        history = history_series.step(3000 + seed, points=3.0, rows=rows)
        analysis = analyse(history.values, history.per_query)
        at = history.steps[0]
        if len(analysis.changes) == 1:
            change = analysis.changes[0]
            exact += (change.last_before, change.first_after) == (at - 1, at)
            holding += change.last_before < at <= change.first_after
        if otava is not None:
            peer_exact += otava.change_points(history.values) == [at]
    print("  one commit 3 points down: its commit range")
    print(f"    ours   {_rate(holding, seeds):>14} hold the commit, {_rate(exact, seeds)} name it alone "
          f"(target: the right range)")
    if otava is not None:
        print(f"    otava  {_rate(peer_exact, seeds):>14} name it alone")


class Otava:
    """Apache Otava's change points, from its own interpreter (one process, a series per line)."""

    def __init__(self, python: str) -> None:
        self.process = subprocess.Popen([python, "-c", OTAVA_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)

    def change_points(self, values: list[float]) -> list[int]:
        self.process.stdin.write(json.dumps(values) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


# -- bisect ----------------------------------------------------------------------------------------

def bisection(args: argparse.Namespace) -> None:
    print(f"\nbisect: fixture repositories of {bisect_fixture.COMMITS} commits, {bisect_fixture.QUERIES} queries, "
          f"a 5-point recall@10 drop at one commit, noise-only commits elsewhere", flush=True)
    named, runs, started = 0, [], time.monotonic()
    for seed in range(args.bisect_seeds):
        outcome, fixture = _bisect(seed, culprit=True)
        right = outcome.verdict == FOUND and outcome.first_bad == fixture.commits[fixture.culprit]
        named += right and outcome.gate_runs <= MAX_GATE_RUNS
        runs.append(outcome.gate_runs)
        if not right:
            print(f"    seed {seed}: {outcome.verdict}, {outcome.first_bad}, culprit {fixture.culprit}")
    print(f"  the culprit named in at most {MAX_GATE_RUNS} gate runs")
    print(f"    ours   {_rate(named, args.bisect_seeds):>14}   (target: 19 of 20; gate runs: median "
          f"{statistics.median(runs)}, max {max(runs)}; {(time.monotonic() - started) / args.bisect_seeds:.1f} s "
          f"per bisection)")
    quiet, sizes = 0, []
    for seed in range(args.noise_seeds):
        outcome, _ = _bisect(100 + seed, culprit=False)
        quiet += outcome.verdict == NO_CHANGE
        sizes += [100 * s.detectable for s in outcome.sets if s.detectable is not None]
    print("  a noise-only range: no change detectable, with the size a change would need")
    print(f"    ours   {_rate(quiet, args.noise_seeds):>14}   (target: all; detectable size "
          f"{min(sizes):.1f} to {max(sizes):.1f} points)" if sizes else f"    ours   {_rate(quiet, args.noise_seeds)}")


def _bisect(seed: int, *, culprit: bool):
    with tempfile.TemporaryDirectory(prefix="retrieval-gate-bisect-bench-") as folder:
        fixture = bisect_fixture.build(Path(folder), seed, culprit=culprit)
        layout = resolve(baseline=None, cwd=Path(folder))
        inputs = api.load_inputs([str(fixture.set_folder)], layout=layout, offline=True, k=None, gated=False)
        measure = WorktreeMeasure(fixture.repository, fixture.adapter, inputs, api.RunOptions(), "recall@10")
        commits = first_parent_commits(fixture.repository, fixture.good, fixture.bad)
        return bisect(commits, measure, ["fixture"], "recall@10", seed=seed), fixture


if __name__ == "__main__":
    raise SystemExit(main())
