"""What a set can detect: the smallest shift of recall@10 the harness's paired test finds with power 0.8, by simulation.

    python -m benchmarks.set_power                          # the companion sets
    python -m benchmarks.set_power --set dedupe-hard --trials 400

The noise is real: BM25 (default settings) and BM25 with one setting moved (k1, b, the
plural stemmer, stop words: SMALL_CHANGES) rank every scored query of the set in this process
(the adapter's own index, adapters/bm25_index.py), giving each query's real change of
recall@10. A simulated change of size delta keeps that change's moves, both ways, and adds
further moves on queries it left alone, each a real move of this set (a step drawn from the
moves every small change made here, capped by the query's room), until its mean change over
the queries is delta: a real change of that size has to move queries, and moves them as
changes of this backend do. Each trial then draws the resampling units (a paraphrase group is
one unit) with replacement, as another sample of queries like these, and runs
`harness.scoring.stats.paired_test` on it; the change is detected when the randomization
p-value is below 0.05 and the 95% bootstrap CI excludes zero (what `compare` calls
significant). Power is the share of trials detected; the figure is the smallest delta, on a
0.25-point grid walked upwards, with power at least 0.8, per small change; the set's figure is
the largest of them (the small change whose noise hides most). Target: 3 points or less on
every set.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.arguments import at_least

ROOT = Path(__file__).resolve().parents[1]
COMPANIONS = ("code-agent", "dedupe-hard", "memory-hard", "wiki-hard")
# One BM25 setting moved at a time, from the adapter's defaults (k1 0.9, b 0.4): `python -m adapters.bm25 --help`.
SMALL_CHANGES = {"k1 0.6": {"k1": 0.6}, "k1 1.2": {"k1": 1.2}, "k1 1.5": {"k1": 1.5},
                 "b 0.3": {"b": 0.3}, "b 0.5": {"b": 0.5}, "b 0.75": {"b": 0.75},
                 "stem": {"stem": True}, "stopwords": {"stopwords": True}}
ALPHA = 0.05
POWER = 0.8
TARGET_POINTS = 3.0
STEP_POINTS = 0.25
MAX_POINTS = 20.0
K = 10


@dataclass(frozen=True, slots=True)
class Scored:
    """One scored query: its resampling unit and its recall@10 under the default BM25."""

    qid: str
    unit: str
    base: float


def recall_per_query(query_set, settings) -> dict[str, float]:
    """recall@10 of every scored query of `query_set` under BM25 with `settings` (as the adapter ranks)."""
    from adapters.bm25_index import BM25Index
    from harness.scoring.metrics import make_measure

    recall = make_measure("recall", K)
    index = BM25Index.build([doc.id for doc in query_set.documents], [doc.text for doc in query_set.documents],
                            settings)
    return {query.qid: recall.compute([hit[0] for hit in index.search(query.query, K)], query.relevant)
            for query in query_set.queries if query.scored}


def real_changes(query_set) -> tuple[list[Scored], dict[str, dict[str, float]]]:
    """The set's scored queries under the default BM25, and each small change's per-query change of recall@10."""
    from adapters.bm25_index import BM25Settings

    base = recall_per_query(query_set, BM25Settings(use_cache=False))
    scored = [Scored(query.qid, query.resampling_unit, base[query.qid])
              for query in query_set.queries if query.scored]
    changes = {}
    for name, fields in SMALL_CHANGES.items():
        moved = recall_per_query(query_set, BM25Settings(use_cache=False, **fields))
        changes[name] = {qid: moved[qid] - base[qid] for qid in base}
    return scored, changes


def simulated_change(scored: Sequence[Scored], change: Mapping[str, float], delta: float,
                     steps: Sequence[float], rng: random.Random) -> dict[str, float] | None:
    """A change of mean `delta`: `change`'s moves as noise, each up or down at random, plus real-sized moves one way.

    The noise keeps every query the real change moved, by its real amount, its direction drawn
    with equal odds (a null change as noisy as the real one; a move the query has no room for
    goes the other way). The effect then moves queries the real change left alone, in random
    order, towards the target, each by a step drawn from `steps` and capped by the query's room
    (1 - recall going up, recall going down), until the mean change over the queries is `delta`
    (the last step cut to land on it). None when no query is left before it gets there: a change
    of that size cannot be made of this set's moves.
    """
    base = {query.qid: query.base for query in scored}
    out = {}
    for query in scored:
        move = change.get(query.qid, 0.0)
        if move and rng.random() < 0.5 and (query.base - move >= -1e-12 if move > 0 else query.base - move <= 1 + 1e-12):
            move = -move
        out[query.qid] = move
    target = delta * len(scored)
    total = sum(out.values())
    still = [query.qid for query in scored if out[query.qid] == 0]
    rng.shuffle(still)
    for qid in still:
        gap = target - total
        if abs(gap) < 1e-12:
            break
        room = 1.0 - base[qid] if gap > 0 else base[qid]
        step = min(rng.choice(steps), room, abs(gap))
        if step <= 0:
            continue
        out[qid] = step if gap > 0 else -step
        total += out[qid]
    return out if abs(total - target) < 1e-9 else None


def resampled(scored: Sequence[Scored], change: Mapping[str, float],
              rng: random.Random) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    """One bootstrap sample of the resampling units: (base, candidate, groups) for paired_test, copies renamed."""
    units: dict[str, list[Scored]] = {}
    for query in scored:
        units.setdefault(query.unit, []).append(query)
    names = sorted(units)
    base, candidate, groups = {}, {}, {}
    for copy, unit in enumerate(rng.choices(names, k=len(names))):
        for query in units[unit]:
            qid = f"{query.qid}#{copy}"
            base[qid] = query.base
            candidate[qid] = query.base + change[query.qid]
            groups[qid] = f"{unit}#{copy}"
    return base, candidate, groups


def detected(base: Mapping[str, float], candidate: Mapping[str, float], groups: Mapping[str, str],
             resamples: int, seed: int) -> bool:
    """The harness's paired test finds the change: p below ALPHA and the 95% CI on one side of zero."""
    from harness.scoring.stats import paired_test

    test = paired_test(base, candidate, groups, resamples=resamples, seed=seed)
    return test.p_value < ALPHA and (test.ci_low > 0 or test.ci_high < 0)


def power(scored: Sequence[Scored], change: Mapping[str, float], delta: float, steps: Sequence[float], *,
          trials: int, resamples: int, seed: int) -> float:
    """The share of `trials` simulated changes of mean `delta` that the paired test detects."""
    rng = random.Random(seed)
    hits = 0
    for trial in range(trials):
        simulated = simulated_change(scored, change, delta, steps, rng)
        if simulated is None:  # not a change of this size: counted as missed, never as found
            continue
        base, candidate, groups = resampled(scored, simulated, rng)
        hits += detected(base, candidate, groups, resamples, seed + trial)
    return hits / trials


def detectable_points(scored: Sequence[Scored], change: Mapping[str, float], steps: Sequence[float], *,
                      trials: int, resamples: int, seed: int) -> tuple[float | None, float]:
    """(smallest delta in points on the STEP_POINTS grid with power >= POWER, its power); None up to MAX_POINTS.

    The grid is walked upwards from STEP_POINTS: power need not keep rising to MAX_POINTS, since a
    large change may not be makeable of a set's moves at all (its power is then 0).
    """
    found = 0.0
    for step in range(1, round(MAX_POINTS / STEP_POINTS) + 1):
        points = STEP_POINTS * step
        found = power(scored, change, points / 100, steps, trials=trials, resamples=resamples, seed=seed)
        if found >= POWER:
            return points, found
    return None, found


def moved_units(scored: Sequence[Scored], change: Mapping[str, float]) -> int:
    """How many resampling units a change moved."""
    return len({query.unit for query in scored if change[query.qid] != 0})


def simulation_parser(prog: str, description: str, per: str) -> argparse.ArgumentParser:
    """The options of a benchmark that simulates changes on the companion sets: which sets, how many trials
    per `per` (a delta, a figure), how many resamples of each paired test, the seed."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--set", action="append", dest="sets",
                        help=f"a set name or folder (repeatable; default {', '.join(COMPANIONS)})")
    parser.add_argument("--trials", type=at_least(10), default=200, help=f"simulated changes per {per} (default 200)")
    parser.add_argument("--resamples", type=at_least(100), default=2000,
                        help="resamples of each paired test (default 2000; the harness uses 10,000)")
    parser.add_argument("--seed", type=int, default=0)
    return parser


def simulated_sets(parser: argparse.ArgumentParser, names: Sequence[str]) -> list:
    """The sets `names` (the companion sets when none), loaded; one that cannot be loaded ends the benchmark
    with its one error line and its exit code."""
    from harness.errors import HarnessError
    from harness.sets.loader import find_sets, load_set

    try:
        return [load_set(folder) for folder in find_sets(list(names) or list(COMPANIONS), ROOT / "sets")]
    except HarnessError as exc:
        parser.exit(exc.exit_code, f"{parser.prog}: error: {exc}\n")


def main(argv: list[str] | None = None) -> int:
    parser = simulation_parser("python -m benchmarks.set_power", __doc__.splitlines()[0], "delta")
    args = parser.parse_args(argv)
    sets = simulated_sets(parser, args.sets or ())

    print(f"# smallest shift of recall@{K} detected with power {POWER:g} (paired test, alpha {ALPHA:g}, "
          f"{args.trials} trials, {args.resamples} resamples); target {TARGET_POINTS:g} points or less")
    print(f"{'set':<12} {'change':<10} {'queries':>7} {'units':>5} {'moved':>5} {'real':>7} {'detects':>8} {'power':>6}")
    worst_of: dict[str, float | None] = {}
    for query_set in sets:
        scored, changes = real_changes(query_set)
        steps = sorted(abs(value) for change in changes.values() for value in change.values() if value != 0)
        units = len({query.unit for query in scored})
        figures = []
        for name, change in changes.items():
            points, found = detectable_points(scored, change, steps or [1.0], trials=args.trials,
                                              resamples=args.resamples, seed=args.seed)
            figures.append(points)
            real = 100 * statistics.fmean(change.values())
            shown = f"{points:.2f}" if points is not None else f">{MAX_POINTS:g}"
            print(f"{query_set.name:<12} {name:<10} {len(scored):>7} {units:>5} {moved_units(scored, change):>5} "
                  f"{real:>+7.2f} {shown:>8} {found:>6.2f}", flush=True)
        worst_of[query_set.name] = None if None in figures else max(figures)
    print()
    for name, worst in worst_of.items():
        verdict = "met" if worst is not None and worst <= TARGET_POINTS else "NOT met"
        shown = f"{worst:.2f}" if worst is not None else f">{MAX_POINTS:g}"
        print(f"{name}: the largest figure over the small changes of BM25 is {shown} points "
              f"(target {TARGET_POINTS:g} or less): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
