"""The numpy engine of the paired statistics: the pure-Python loops of `stats` and `compare`, vectorised.

Why it gives the very same numbers, byte for byte: it draws from the same Mersenne Twister
stream as `random.Random(seed)` (numpy's MT19937 is loaded with that generator's state, and its
legacy doubles are Python's `random()`), turns the draws into indices and sign bits exactly as
`random.choices` and `random.getrandbits` do, and adds the drawn differences one position at a
time, in the order and with the summation rule of the builtin `sum` (plain left to right before
Python 3.12, Neumaier's compensated sum since). Only the loops move from Python into numpy, over
all resamples at once. tests/unit/scoring/test_stats_engines.py holds the two engines equal.

The only harness module that imports numpy, and only when `stats` finds it installed
(tests/architecture/test_imports.py allows exactly this).
"""

from __future__ import annotations

import functools
import random
import sys
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

# Python 3.12 made `sum` of floats compensated (Neumaier); the pure-Python engine uses the builtin.
COMPENSATED_SUM = sys.version_info >= (3, 12)
CHUNK_VALUES = 4_000_000   # drawn values held at once (32 MB of doubles), whatever the resamples
CACHED_DRAWS = 40_000_000  # drawn indices kept for reuse (int16 below 32,768 groups: 80 MB)


def sorted_bootstrap_statistics(clusters: Sequence[tuple[float, int]], resamples: int, seed: int) -> list[float]:
    """Each resample's (sum of the drawn groups' differences) / (their query count), sorted.

    The draws of `random.Random(seed).choices(range(len(clusters)), k=len(clusters))`, repeated.
    """
    diffs = np.array([float(diff) for diff, _ in clusters])
    counts = np.array([count for _, count in clusters], dtype=np.int64)
    same_count = len(set(counts.tolist())) == 1  # one query a group, say: every draw counts size x that
    statistics = []
    for indices in draws(seed, len(clusters), resamples):  # (size, chunk): one row per drawn position
        totals = builtin_sum_rows(diffs[indices])
        queries = int(counts[0]) * len(clusters) if same_count else counts[indices].sum(axis=0)
        statistics.append(totals / queries)
    return np.sort(np.concatenate(statistics)).tolist()


def randomization_extremes(moving: Sequence[float], n_queries: int, observed: float, tolerance: float,
                           resamples: int, seed: int) -> int:
    """How many sign patterns give |permuted mean| >= observed - tolerance.

    Pattern r is `random.Random(seed)`'s r-th `getrandbits(len(moving))`: bit p set flips
    moving[p]; the flipped differences are added left to right from 0.0, as stats does.
    """
    values = np.array([float(diff) for diff in moving])
    extreme = 0
    for signs in sign_bits(seed, len(moving), resamples):  # (len(moving), chunk) booleans
        total = sequential_sum_rows(np.where(signs, -values[:, None], values[:, None]))
        extreme += int(np.count_nonzero(np.abs(total) / n_queries >= observed - tolerance))
    return extreme


def percentile_differences(base: Sequence[float], candidate: Sequence[float], ranks: Sequence[int],
                           resamples: int, seed: int) -> list[list[float]]:
    """Per nearest rank in `ranks`: each resample's candidate minus base order statistic at that rank.

    Resample r draws the paired indices `random.Random(seed).choices(range(n), k=n)` would.
    """
    left = order_statistics(tuple(map(float, base)), tuple(ranks), resamples, seed)
    right = order_statistics(tuple(map(float, candidate)), tuple(ranks), resamples, seed)
    return [(after - before).tolist() for before, after in zip(left, right)]


@functools.lru_cache(maxsize=4)
def order_statistics(values: tuple[float, ...], ranks: tuple[int, ...], resamples: int,
                     seed: int) -> tuple[np.ndarray, ...]:
    """Per rank, each resample's order statistic of the drawn values; cached, as every candidate
    of a comparison is paired with the same base latencies.

    Each value is replaced by its place among the sorted values (small integers select faster
    than doubles), the places are partitioned per resample, and the rank-th place gives the
    value. Exact: values are only picked, never computed.
    """
    ordered = np.sort(np.asarray(values))
    place = np.empty(len(values), dtype=np.int16 if len(values) <= np.iinfo(np.int16).max else np.int64)
    place[np.argsort(np.asarray(values), kind="stable")] = np.arange(len(values))
    columns: list[list[np.ndarray]] = [[] for _ in ranks]
    kth = sorted({rank - 1 for rank in ranks})
    for indices in draws(seed, len(values), resamples):
        drawn = place[indices.T]  # (chunk, n): one resample a row
        drawn.partition(kth, axis=1)
        for column, rank in zip(columns, ranks):
            column.append(ordered[drawn[:, rank - 1]])
    return tuple(np.concatenate(column) for column in columns)


def sequential_sum_rows(values: np.ndarray) -> np.ndarray:
    """Per column, 0.0 + row 0 + row 1 + ... in that order (a Python `total += x` loop)."""
    total = np.zeros(values.shape[1])
    for row in values:
        total += row
    return total


def builtin_sum_rows(values: np.ndarray) -> np.ndarray:
    """Per column, `sum(column)` as the builtin computes it over floats, row 0 first."""
    if not COMPENSATED_SUM:
        return sequential_sum_rows(values)
    total = np.zeros(values.shape[1])
    compensation = np.zeros(values.shape[1])
    for row in values:  # CPython's Objects/bltinmodule.c builtin_sum_impl, since 3.12
        running = total + row
        compensation += np.where(np.abs(total) >= np.abs(row), (total - running) + row, (row - running) + total)
        total = running
    return np.where((compensation != 0) & np.isfinite(compensation), total + compensation, total)


def draws(seed: int, size: int, resamples: int) -> list[np.ndarray]:
    """`random.Random(seed).choices(range(size), k=size)` `resamples` times, as (size, chunk) index blocks.

    Kept (up to CACHED_DRAWS indices, least recently used dropped first): the draws depend only
    on the seed and the size, and a comparison asks for them again for every metric and candidate.
    """
    key = (seed, size, resamples)
    if key in _DRAWS:
        _DRAWS.move_to_end(key)
        return _DRAWS[key]
    blocks = list(_draw_blocks(seed, size, resamples))
    if size * resamples <= CACHED_DRAWS:
        _DRAWS[key] = blocks
        while sum(s * r for _, s, r in _DRAWS) > CACHED_DRAWS:
            _DRAWS.popitem(last=False)
    return blocks


_DRAWS: OrderedDict[tuple[int, int, int], list[np.ndarray]] = OrderedDict()


def _draw_blocks(seed: int, size: int, resamples: int):
    generator = np.random.RandomState(_python_twister(seed))  # its random_sample() is Python's random()
    chunk = max(1, CHUNK_VALUES // max(size, 1))
    dtype = np.int16 if size <= np.iinfo(np.int16).max else np.int64
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        # choices(): population[floor(random() * n)], n a float.
        indices = np.floor(generator.random_sample((rows, size)) * float(size)).astype(dtype)
        yield np.ascontiguousarray(indices.T)


def sign_bits(seed: int, bits: int, resamples: int):
    """`random.Random(seed).getrandbits(bits)` `resamples` times, as (bits, chunk) booleans (bit p = row p).

    getrandbits fills 32-bit words least significant first and keeps the top bits of the last.
    """
    bit_generator = _python_twister(seed)
    words = (bits - 1) // 32 + 1
    chunk = max(1, CHUNK_VALUES // (words * 32))
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        raw = bit_generator.random_raw(rows * words).astype(np.uint32).reshape(rows, words)
        last = bits - 32 * (words - 1)
        if last < 32:
            raw[:, -1] >>= np.uint32(32 - last)
        little = raw.astype("<u4").view(np.uint8)
        yield np.unpackbits(little, axis=1, bitorder="little")[:, :bits].T.astype(bool)


def _python_twister(seed: int) -> np.random.MT19937:
    """numpy's Mersenne Twister holding `random.Random(seed)`'s state: the same 32-bit outputs follow."""
    _, state, _ = random.Random(seed).getstate()
    bit_generator = np.random.MT19937()
    bit_generator.state = {"bit_generator": "MT19937",
                           "state": {"key": np.array(state[:-1], dtype=np.uint32), "pos": state[-1]}}
    return bit_generator
