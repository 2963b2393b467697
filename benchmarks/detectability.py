"""The `sets show --paired` figure checked by simulation: at the printed size, the paired test's power.

    python -m benchmarks.detectability                      # the companion sets
    python -m benchmarks.detectability --set memory-hard --trials 400
    python -m benchmarks.detectability --quick              # 100 trials of 1,000 resamples

For each set and each small change of BM25's settings (benchmarks/set_power.py `SMALL_CHANGES`:
k1 0.6, 1.2, 1.5; b 0.3, 0.5, 0.75; the plural stemmer; stop words), BM25 ranks every scored
query under the defaults and under the change (in this process, the adapter's own index). The
figure `sets show --paired` prints for that pair of runs (`harness.scoring.detectability.
small_change`: sized only when 10 or more units moved) is then put to the test: a simulated
drop of that size (set_power's model: the real change's moves kept as noise, each up or down at
random where the query has room, plus moves of this change's own sizes downwards on queries it
left alone, capped by each query's room) is drawn `--trials` times over the set's resampling units with replacement, and
each draw is gated by the harness's paired test (detected when p < 0.05 and the 95% CI excludes
zero, as `compare` calls a change significant). Target: power within 0.7-0.9 at every printed
figure; a pair with too few moved units prints no figure and is not simulated.
"""

from __future__ import annotations

import random
import statistics
import sys

from benchmarks.set_power import (detected, real_changes, resampled, simulated_change, simulated_sets,
                                  simulation_parser)

TARGET = (0.7, 0.9)


def simulated_power(scored, change, delta: float, *, trials: int, resamples: int, seed: int) -> float:
    """The share of `trials` simulated drops of the mean by `delta`, made of this change's moves, that are detected."""
    steps = sorted(abs(value) for value in change.values() if value != 0) or [1.0]
    rng = random.Random(seed)
    hits = 0
    for trial in range(trials):
        simulated = simulated_change(scored, change, -delta, steps, rng)  # a drop, as the figure sizes
        if simulated is None:  # a change of this size cannot be made of the set's moves: missed
            continue
        base, candidate, groups = resampled(scored, simulated, rng)
        hits += detected(base, candidate, groups, resamples, seed + trial)
    return hits / trials


def main(argv: list[str] | None = None) -> int:
    from harness.scoring.detectability import small_change

    parser = simulation_parser("python -m benchmarks.detectability", __doc__.splitlines()[0], "figure")
    parser.add_argument("--quick", action="store_true", help="100 trials of 1,000 resamples")
    args = parser.parse_args(argv)
    trials, resamples = (100, 1000) if args.quick else (args.trials, args.resamples)
    sets = simulated_sets(parser, args.sets or ())

    print(f"# power of the paired test at the figure `sets show --paired` prints ({trials} trials, {resamples} "
          f"resamples); target {TARGET[0]:g}-{TARGET[1]:g}")
    print(f"{'set':<12} {'change':<10} {'moved':>14} {'real':>7} {'printed':>8} {'power':>6}  verdict")
    powers = []
    for query_set in sets:
        scored, changes = real_changes(query_set)
        base = {query.qid: query.base for query in scored}
        units = {query.qid: query.unit for query in scored}
        for name, change in changes.items():
            sized = small_change({qid: base[qid] + change[qid] for qid in base}, base, units)
            real = 100 * statistics.fmean(change.values())
            moved = f"{sized.moved} of {sized.units}"
            if sized.detectable is None:
                print(f"{query_set.name:<12} {name:<10} {moved:>14} {real:>+7.2f} {'-':>8} {'':>6}  {sized.reason}",
                      flush=True)
                continue
            found = simulated_power(scored, change, sized.detectable, trials=trials, resamples=resamples,
                                    seed=args.seed)
            powers.append(found)
            verdict = "within" if TARGET[0] <= found <= TARGET[1] else "OUTSIDE"
            print(f"{query_set.name:<12} {name:<10} {moved:>14} {real:>+7.2f} {sized.detectable * 100:>8.2f} "
                  f"{found:>6.2f}  {verdict}", flush=True)
    within = sum(TARGET[0] <= found <= TARGET[1] for found in powers)
    print(f"\nprinted figures with power within {TARGET[0]:g}-{TARGET[1]:g}: {within} of {len(powers)}"
          + (f" (power {min(powers):.2f} to {max(powers):.2f})" if powers else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
