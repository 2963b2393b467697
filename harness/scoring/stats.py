"""Paired significance for two runs over the same queries: cluster bootstrap CI, randomization test, Holm.

Queries that share an intent (`group`: paraphrases, translations) are not independent, so every
resampling step draws or flips whole groups. The statistic throughout is the mean per-query
difference (candidate - base) over all queries.

Two engines run the resampling: plain Python loops here, and, where numpy is installed, the
same draws and sums vectorised (harness.scoring.numpy_engine), 50-400x faster
(docs/performance.md). Their outputs are equal byte for byte, so a verdict never depends on
which one ran; reports name it.
"""

from __future__ import annotations

import functools
import importlib
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

RESAMPLES = 10_000
# The most resamples a caller may ask for: the Monte-Carlo error of a p-value then stays under 0.0005
# (sqrt(0.25 / 1e6)), and a comparison's memory and time stay bounded (`compare --resamples`).
MAX_RESAMPLES = 1_000_000
CONFIDENCE = 0.95
ENGINES = ("python", "numpy")  # who resamples (harness.scoring.numpy_engine); both give the same numbers


@dataclass(frozen=True, slots=True)
class PairedTest:
    n_queries: int
    n_groups: int
    mean_difference: float
    ci_low: float
    ci_high: float
    p_value: float


def group_differences(base: Mapping[str, float], candidate: Mapping[str, float],
                      groups: Mapping[str, str] | None = None) -> list[tuple[float, int]]:
    """(sum of differences, query count) per intent group, over qids present in both runs, sorted by group."""
    groups = groups or {}
    totals: dict[str, list[float]] = {}
    for qid in sorted(set(base) & set(candidate)):
        totals.setdefault(groups.get(qid) or qid, []).append(candidate[qid] - base[qid])
    return [(sum(values), len(values)) for _, values in sorted(totals.items())]


def paired_test(base: Mapping[str, float], candidate: Mapping[str, float], groups: Mapping[str, str] | None = None,
                *, resamples: int = RESAMPLES, seed: int = 0, engine: str | None = None) -> PairedTest:
    """Bootstrap CI of the mean difference and the randomization p-value, both resampling groups.

    `engine` (ENGINES; default `default_engine()`) changes the speed only, never a number.
    """
    clusters = group_differences(base, candidate, groups)
    n_queries = sum(count for _, count in clusters)
    if all(total == 0 for total, _ in clusters):  # no query, or identical on every one: nothing to resample
        return PairedTest(n_queries, len(clusters), 0.0, 0.0, 0.0, 1.0)
    observed = sum(total for total, _ in clusters) / n_queries
    low, high = bootstrap_ci(clusters, resamples=resamples, seed=seed, engine=engine)
    p_value = randomization_p_value(clusters, resamples=resamples, seed=seed, engine=engine)
    return PairedTest(n_queries, len(clusters), observed, low, high, p_value)


@functools.cache
def default_engine() -> str:
    """"numpy" where numpy is installed (the [bm25], [onnx] and [test] extras bring it), else "python"."""
    try:
        importlib.import_module("harness.scoring.numpy_engine")  # imports numpy
    except ImportError:
        return "python"
    return "numpy"


def check_engine(engine: str | None) -> str:
    """`engine`, or the default when None; ValueError for a name not in ENGINES or not importable."""
    engine = engine or default_engine()
    if engine not in ENGINES:
        raise ValueError(f"statistics engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "numpy" and default_engine() != "numpy":
        raise ValueError("statistics engine numpy: numpy is not installed")
    return engine


def bootstrap_ci(clusters: Sequence[tuple[float, int]], *, resamples: int = RESAMPLES, seed: int = 0,
                 confidence: float = CONFIDENCE, engine: str | None = None) -> tuple[float, float]:
    """Percentile interval of the mean difference over `resamples` draws of whole groups with replacement.

    Each draw picks len(clusters) groups (`random.Random(seed).choices`); its statistic is (sum of
    their differences) / (their query count). Percentiles are nearest-rank on the sorted statistics.
    """
    return _interval(bootstrap_statistics(tuple(map(tuple, clusters)), resamples, seed, check_engine(engine)),
                     confidence)


@functools.lru_cache(maxsize=8)
def bootstrap_statistics(clusters: tuple[tuple[float, int], ...], resamples: int, seed: int,
                         engine: str) -> tuple[float, ...]:
    """The sorted statistics of bootstrap_ci; cached, as a comparison asks for the 95% and the 90% CI of one draw."""
    if engine == "numpy":
        from harness.scoring import numpy_engine
        return tuple(numpy_engine.sorted_bootstrap_statistics(clusters, resamples, seed))
    rng = random.Random(seed)
    diffs = [diff for diff, _ in clusters]
    counts = [n for _, n in clusters]
    draws = (rng.choices(range(len(clusters)), k=len(clusters)) for _ in range(resamples))
    return tuple(sorted(sum(diffs[i] for i in drawn) / sum(counts[i] for i in drawn) for drawn in draws))


def randomization_p_value(clusters: Sequence[tuple[float, int]], *, resamples: int = RESAMPLES, seed: int = 0,
                          engine: str | None = None) -> float:
    """Two-sided paired randomization test: flip the sign of each group's differences at random.

    p = (1 + #{|permuted mean| >= |observed mean|}) / (1 + resamples); identical runs give exactly 1.
    A tiny tolerance keeps float noise from deciding ties. The signs of resample r are the bits of
    `random.Random(seed + 1)`'s r-th getrandbits over the non-zero groups.
    """
    n_queries = sum(n for _, n in clusters)
    observed = abs(sum(diff for diff, _ in clusters)) / n_queries
    tolerance = 1e-12
    moving = [diff for diff, _ in clusters if diff != 0]  # a zero difference is the same either sign
    if not moving:
        extreme = resamples if 0.0 >= observed - tolerance else 0
    elif check_engine(engine) == "numpy":
        from harness.scoring import numpy_engine
        extreme = numpy_engine.randomization_extremes(moving, n_queries, observed, tolerance, resamples, seed + 1)
    else:
        extreme = _randomization_extremes(moving, n_queries, observed, tolerance, resamples, seed + 1)
    return (extreme + 1) / (resamples + 1)


def _randomization_extremes(moving: Sequence[float], n_queries: int, observed: float, tolerance: float,
                            resamples: int, seed: int) -> int:
    rng = random.Random(seed)
    extreme = 0
    for _ in range(resamples):
        signs = rng.getrandbits(len(moving))
        total = 0.0
        for position, diff in enumerate(moving):
            total += -diff if (signs >> position) & 1 else diff
        if abs(total) / n_queries >= observed - tolerance:
            extreme += 1
    return extreme


@dataclass(frozen=True, slots=True)
class RatioInterval:
    """A paired ratio of percentiles (candidate / base) with its bootstrap percentile interval."""

    percentile: float  # 50 for p50, 95 for p95
    ratio: float
    ci_low: float
    ci_high: float


LATENCY_RESAMPLES = 2_000  # a latency ratio's interval: each draw sorts both sides, and 2,000 keep it to ~0.1 s


def paired_percentile_ratio(base: Sequence[float], candidate: Sequence[float], percentile: float, *,
                            resamples: int = LATENCY_RESAMPLES, seed: int = 0,
                            confidence: float = CONFIDENCE) -> RatioInterval:
    """percentile(candidate) / percentile(base) over paired values (`base[i]` and `candidate[i]` were measured
    together), with the percentile interval of that ratio over `resamples` bootstrap draws of whole pairs.

    Each draw picks len(base) pair indices (`random.Random(seed).choices`); its statistic is the ratio
    of the nearest-rank percentiles (harness.scoring.metrics.percentile) of the drawn pairs' two sides.
    Pairs, not sides, are drawn, so what moved both (a busy machine) moves numerator and denominator
    alike. Needs at least one pair, equal lengths and positive base values (ValueError otherwise).
    """
    from harness.scoring.metrics import nearest_rank  # the percentile rule, written once there
    if len(base) != len(candidate) or not base:
        raise ValueError(f"paired ratio needs equally many values on both sides, at least one; got {len(base)} "
                         f"and {len(candidate)}")
    if min(base) <= 0:
        raise ValueError("paired ratio needs base values above 0")
    n = len(base)
    rank = nearest_rank(n, percentile) - 1

    def ratio(indices: Sequence[int]) -> float:
        return sorted(candidate[i] for i in indices)[rank] / sorted(base[i] for i in indices)[rank]

    rng = random.Random(seed)
    everyone = range(n)
    draws = sorted(ratio(rng.choices(everyone, k=n)) for _ in range(resamples))
    return RatioInterval(percentile, ratio(everyone), *_interval(draws, confidence))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (step-down, monotone, capped at 1)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for position, index in enumerate(order):
        running = max(running, min(1.0, (m - position) * p_values[index]))
        adjusted[index] = running
    return adjusted


def _interval(sorted_values: Sequence[float], confidence: float) -> tuple[float, float]:
    """The central `confidence` interval of sorted draws, nearest rank with a 1e-9 slack (not metrics.nearest_rank:
    its exact decimal reads the float tail (1 - 0.95) / 2 as above 2.5%, and takes the next rank)."""
    tail, n = (1 - confidence) / 2, len(sorted_values)
    low, high = (sorted_values[min(max(1, math.ceil(f * n - 1e-9)), n) - 1] for f in (tail, 1 - tail))
    return low, high


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Exact McNemar test: the two-sided binomial p of the discordant pairs (`only_first` of them one way,
    `only_second` the other) under H0 "either way with probability 1/2".

    p = min(1, 2 * P[X <= min(b, c)]) for X ~ Binomial(b + c, 1/2), summed in integers (exact at any
    size); no discordant pair gives 1. Equal to scipy.stats.binomtest(b, b + c).pvalue (symmetric at 1/2).
    """
    if only_first < 0 or only_second < 0:
        raise ValueError(f"discordant counts must be non-negative, got {only_first} and {only_second}")
    n = only_first + only_second
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_first, only_second) + 1))
    return min(1.0, 2 * tail / 2 ** n)
