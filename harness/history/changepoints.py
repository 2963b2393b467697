"""Change points in a short, noisy series of runs: E-Divisive means with a permutation test, checked per query.

The method is the one Apache Otava (formerly hunter) and MongoDB's CI apply to benchmark series
(Matteson and James 2014, "A nonparametric approach for multiple change point analysis of
multivariate data", JASA 109(505); Daly et al. 2020, "The use of change point detection to
identify software performance regressions in a continuous integration system", ICPE):

- the divergence of a split of a segment Z into X = Z[:tau] and Y = Z[tau:] (m and k runs) is
      q(tau) = 2/(m+k) * (sum |x - y|  -  k/(m-1) * sum_{i<j} |x_i - x_j|  -  m/(k-1) * sum_{i<j} |y_i - y_j|),
  the energy statistic with exponent 1, scaled by m k / (m + k) (a term over one run is 0);
- hierarchical: the best split of any current segment is the candidate; it is kept when a
  permutation test finds it significant (its q at least that of the best split of the series with
  every segment's runs shuffled in place, in fewer than ALPHA of PERMUTATIONS shuffles), and the
  search goes on in the new segments; the first candidate that is not significant ends it.

What we add for retrieval figures (docs/history.md, "What a change point means"):
- A level is at least MIN_LEVEL_RUNS runs: one run that differs from both its neighbours by more
  than OUTLIER_SIGMAS times the run-to-run noise is an outlier (a flaky run, a blip), reported
  as such and left out of the search, never a change. The noise is estimated robustly from the
  differences of successive runs (1.4826 MAD / sqrt 2), so a step does not inflate it.
- Successive changes the same way are one change when the level between them is shorter than
  MERGE_RUNS runs or their ramps overlap (a staircase of small drops is one loss). A change's
  commit range runs from the last run at the old level to the first at the new one, over every
  ramp between the two levels that fits the runs about as well as the best (a 95% confidence set).
- With per-query values, a change is kept only when the paired bootstrap 99% CI over queries of
  the level difference (harness/scoring/stats.py, resampling queries) excludes 0, and it is shown
  with the 95% CI; an outlier likewise against the runs beside it.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.scoring.stats import bootstrap_ci, group_differences

ALPHA = 0.01            # 1 of 200 A/A histories of 60 runs flagged a change at this level, 3 at 0.05
PERMUTATIONS = 499
MIN_LEVEL_RUNS = 2      # runs a level holds at the least: one run alone is an outlier, never a change
MERGE_RUNS = 5          # changes the same way fewer runs apart than this are one change
OUTLIER_SIGMAS = 4.0    # an isolated run this many noise sigmas from both neighbours is an outlier
RAMP_RUNS = 12          # the widest ramp (runs between the old level's last and the new level's first)
RANGE_CHI2 = 3.84       # chi-square(1 df) at 0.95: the ramps a commit range covers (see `_ramp`); at 5.99
                        # (2 df) a clean 3-point step was named alone in 71 of 100 histories, here in 87
CI_RESAMPLES = 2000     # the per-query bootstrap of a change's size (the CI bounds move < 0.1 points past it)
CONFIRM_CONFIDENCE = 0.99  # a change or an outlier is kept when this CI excludes 0 (at 0.95: 2 false changes
                           # in 200 noisy histories of benchmarks/history.py, in the blip and step cases)
SHOWN_CONFIDENCE = 0.95    # the CI a change is shown with


@dataclass(frozen=True, slots=True)
class Change:
    """A change of level: `last_before` is the index of the last run at the old level, `first_after`
    of the first run at the new one (the commit range is theirs); `size` = after - before, with the
    paired per-query 95% CI when per-query values were there, and the permutation p-value."""

    last_before: int
    first_after: int
    before: float
    after: float
    p_value: float
    ci: tuple[float, float] | None = None

    @property
    def size(self) -> float:
        return self.after - self.before


@dataclass(frozen=True, slots=True)
class Outlier:
    """One run off its neighbours' level (`level`: theirs); `latest` when it is the last run, which the
    next runs will show to be an outlier or the start of a change."""

    index: int
    value: float
    level: float
    latest: bool = False

    @property
    def size(self) -> float:
        return self.value - self.level


@dataclass(frozen=True, slots=True)
class Analysis:
    changes: tuple[Change, ...]
    outliers: tuple[Outlier, ...]
    noise: float  # the run-to-run noise estimated (sigma of one run's value)


def analyse(values: Sequence[float], per_query: Sequence[Mapping[str, float] | None] | None = None, *,
            alpha: float = ALPHA, permutations: int = PERMUTATIONS, seed: int = 0) -> Analysis:
    """The changes and outliers of a series of runs (oldest first), each run's value in `values` and,
    optionally, its per-query values (qid -> value; None for a run without them) in `per_query`.

    Deterministic for a given `seed`. A series of fewer than 2 * MIN_LEVEL_RUNS runs has no change.
    """
    noise = run_noise(values)
    outliers = isolated_runs(values, noise)
    kept = [index for index in range(len(values)) if index not in {o.index for o in outliers}]
    series = [values[index] for index in kept]
    splits = [(kept[i], p) for i, p in edivisive(series, alpha=alpha, permutations=permutations, seed=seed)]
    candidates = _merged(values, kept, splits, noise)
    if per_query is None:
        return Analysis(tuple(change for change, _, _ in candidates), tuple(outliers), noise)
    changes = [dataclasses.replace(change, ci=_paired_ci(old, new, per_query, seed, SHOWN_CONFIDENCE))
               for change, old, new in candidates if _excludes_zero(_paired_ci(old, new, per_query, seed))]
    outliers = [o for o in outliers if _outlier_confirmed(o, kept, per_query, seed)]
    return Analysis(tuple(changes), tuple(outliers), noise)


# -- noise and outliers ----------------------------------------------------------------------------

def run_noise(values: Sequence[float]) -> float:
    """The standard deviation of one run's value around its level: 1.4826 MAD of successive
    differences / sqrt 2 (a step moves one difference, so it barely moves this); 0 for < 3 runs."""
    if len(values) < 3:
        return 0.0
    differences = [abs(b - a) for a, b in zip(values, values[1:])]
    return 1.4826 * statistics.median(differences) / math.sqrt(2)


def isolated_runs(values: Sequence[float], noise: float) -> list[Outlier]:
    """Runs further than OUTLIER_SIGMAS * noise * sqrt 2 from each neighbour (the one neighbour of the
    last run) and on the same side of both: a lone run off the level. With no noise at all (a
    deterministic backend), any lone difference is one."""
    limit = OUTLIER_SIGMAS * noise * math.sqrt(2) + 1e-12
    found = []
    for index in range(1, len(values)):
        neighbours = [values[index - 1]] + ([values[index + 1]] if index + 1 < len(values) else [])
        gaps = [values[index] - other for other in neighbours]
        if all(abs(gap) > limit for gap in gaps) and (all(g > 0 for g in gaps) or all(g < 0 for g in gaps)):
            found.append(Outlier(index, values[index], statistics.fmean(neighbours),
                                 latest=index == len(values) - 1))
    return found


def _outlier_confirmed(outlier: Outlier, kept: Sequence[int], per_query: Sequence[Mapping[str, float] | None],
                       seed: int) -> bool:
    """Per query, the outlier run against the mean of the kept runs beside it: the CI excludes 0 (or
    there are no per-query values to ask)."""
    position = next((i for i, index in enumerate(kept) if index > outlier.index), len(kept))
    beside = [kept[i] for i in (position - 1, position) if 0 <= i < len(kept)]
    return _excludes_zero(_paired_ci(beside, [outlier.index], per_query, seed))


def _excludes_zero(ci: tuple[float, float] | None) -> bool:
    """The CI says the move is not nothing (or there are no per-query values to ask)."""
    return ci is None or not ci[0] <= 0.0 <= ci[1]


# -- E-Divisive means ------------------------------------------------------------------------------

def edivisive(values: Sequence[float], *, alpha: float = ALPHA, permutations: int = PERMUTATIONS,
              seed: int = 0, min_size: int = MIN_LEVEL_RUNS) -> list[tuple[int, float]]:
    """The significant change points of `values`, sorted: (index of the first run of a new segment, p-value)."""
    rng = random.Random(seed)
    points: list[tuple[int, float]] = []
    while True:
        bounds = [0, *(tau for tau, _ in points), len(values)]
        candidate = _best_split(values, bounds, min_size)
        if candidate is None:
            return points
        tau, q = candidate
        p_value = _permutation_p(values, bounds, q, rng, permutations, alpha, min_size)
        if p_value > alpha:
            return points
        points = sorted([*points, (tau, p_value)])


def split_divergences(segment: Sequence[float], min_size: int = MIN_LEVEL_RUNS) -> list[tuple[int, float]]:
    """(tau, q(tau)) for every split of `segment` leaving min_size runs each side, by the module's formula.

    O(n^2): the sums of distances of each run to the runs before and after it, once; then the
    within-X and within-Y sums move by one run per tau.
    """
    n = len(segment)
    if n < 2 * min_size:
        return []
    before, after = [], []
    for i, x in enumerate(segment):
        distances = [abs(x - y) for y in segment]
        before.append(sum(distances[:i]))
        after.append(sum(distances[i + 1:]))
    total = sum(before)  # every pair once
    within_x, within_y = 0.0, total
    found = []
    for tau in range(1, n):
        within_x += before[tau - 1]
        within_y -= after[tau - 1]
        if min_size <= tau <= n - min_size:
            m, k = tau, n - tau
            between = total - within_x - within_y
            q = between - (k / (m - 1) * within_x if m > 1 else 0.0) - (m / (k - 1) * within_y if k > 1 else 0.0)
            found.append((tau, 2.0 * q / n))
    return found


def _best_split(values: Sequence[float], bounds: Sequence[int], min_size: int) -> tuple[int, float] | None:
    """The split (absolute tau, q) of largest q over every segment between `bounds`."""
    best = None
    for start, end in zip(bounds, bounds[1:]):
        for tau, q in split_divergences(values[start:end], min_size):
            if best is None or q > best[1]:
                best = (start + tau, q)
    return best


def _permutation_p(values: Sequence[float], bounds: Sequence[int], observed: float, rng: random.Random,
                   permutations: int, alpha: float, min_size: int) -> float:
    """(1 + shuffles whose best q >= observed) / (1 + permutations), each segment shuffled in place.

    Stops early once the p-value can only end above `alpha` (the answer is then "not significant",
    and the value returned is a lower bound of it).
    """
    extreme = 0
    give_up = math.ceil(alpha * (permutations + 1))
    shuffled = list(values)
    for _ in range(permutations):
        for start, end in zip(bounds, bounds[1:]):
            part = shuffled[start:end]
            rng.shuffle(part)
            shuffled[start:end] = part
        best = _best_split(shuffled, bounds, min_size)
        if best is not None and best[1] >= observed - 1e-12:
            extreme += 1
            if extreme >= give_up:
                return (extreme + 1) / (permutations + 1)
    return (extreme + 1) / (permutations + 1)


# -- from split points to changes ------------------------------------------------------------------

def _merged(values: Sequence[float], kept: Sequence[int], splits: Sequence[tuple[int, float]],
            noise: float) -> list[tuple[Change, list[int], list[int]]]:
    """Changes from the split points (index into `values`, p-value), each with the runs of its old and
    new level outside its range. Successive same-way splits are one change (their largest p-value
    kept) when the level between them is short (under MERGE_RUNS runs) or when their ramps
    (`_ramp`) overlap: a staircase of drops is one gradual loss, its range the whole ramp."""
    bounds = [0, *(tau for tau, _ in splits), len(values)]
    levels = [[i for i in kept if start <= i < end] for start, end in zip(bounds, bounds[1:])]
    means = [statistics.fmean(values[i] for i in level) for level in levels]

    def ramp(first: int, last: int) -> Change:  # from level `first` to level `last`
        return _ramp(values, levels[first], levels[last], [i for level in levels[first + 1:last] for i in level],
                     max(p for _, p in splits[first:last]), noise)

    def same_way(first: int, middle: int, last: int) -> bool:
        return (means[middle] - means[first]) * (means[last] - means[middle]) > 0

    def overlapping(position: int) -> bool:  # the same way, the later ramp starting before the earlier ends
        (first, middle), (_, last) = spans[position], spans[position + 1]
        return same_way(first, middle, last) and changes[position + 1].last_before <= changes[position].first_after

    spans: list[tuple[int, int]] = []  # (first level, last level) of each change
    for index in range(len(levels) - 1):
        if spans and len(levels[index]) < MERGE_RUNS and same_way(spans[-1][0], index, index + 1):
            spans[-1] = (spans[-1][0], index + 1)
        else:
            spans.append((index, index + 1))
    changes = [ramp(*span) for span in spans]
    while (position := next((p for p in range(len(spans) - 1) if overlapping(p)), None)) is not None:
        first, last = spans[position][0], spans[position + 1][1]
        spans[position:position + 2] = [(first, last)]
        changes[position:position + 2] = [ramp(first, last)]
    return [(change, [i for i in levels[first] if i <= change.last_before] or levels[first],
             [i for i in levels[last] if i >= change.first_after] or levels[last])
            for change, (first, last) in zip(changes, spans)]


def _ramp(values: Sequence[float], old: Sequence[int], new: Sequence[int], between: Sequence[int],
          p_value: float, noise: float) -> Change:
    """The change from level `old` to level `new` (kept run indexes; `between`: those of short levels in
    between), its range the runs where the change may have happened.

    Model: the old level's mean up to run `last_before`, the new level's mean from run `first_after`,
    a straight line between them. Every pair within the old level's last RAMP_RUNS and the new level's
    first is fitted; the pairs whose squared error is within RANGE_CHI2 noise variances of the best
    (a 95% likelihood-ratio confidence set for where the change happened) make the range: from the earliest
    `last_before` to the latest `first_after` among them. A clean step well above the noise is one
    pair, a staircase or a step near the noise a wider range that still holds the commits that did it.
    """
    runs = sorted([*old, *between, *new])
    candidates_before = [*[i for i in runs if i <= old[-1]][-RAMP_RUNS:], *between]
    candidates_after = [*between, *[i for i in runs if i >= new[0]][:RAMP_RUNS]]
    fits = []
    for last_before in candidates_before:
        for first_after in candidates_after:
            if first_after <= last_before:
                continue
            left = [i for i in runs if i <= last_before]
            right = [i for i in runs if i >= first_after]
            if len(left) < MIN_LEVEL_RUNS or len(right) < MIN_LEVEL_RUNS:
                continue
            fits.append((_ramp_error(values, runs, last_before, first_after, left, right), last_before, first_after))
    if not fits:  # too few runs to place a ramp: the split itself
        return Change(old[-1], new[0], statistics.fmean(values[i] for i in old),
                      statistics.fmean(values[i] for i in new), p_value)
    best = min(error for error, _, _ in fits)
    # the larger of the run-to-run noise and the best fit's residual variance (two levels, two ends fitted)
    variance = max(noise ** 2, best / max(1, len(runs) - 4))
    plausible = [(b, a) for error, b, a in fits if error <= best + RANGE_CHI2 * variance + 1e-15]
    last_before, first_after = min(b for b, _ in plausible), max(a for _, a in plausible)
    return Change(last_before, first_after, statistics.fmean(values[i] for i in runs if i <= last_before),
                  statistics.fmean(values[i] for i in runs if i >= first_after), p_value)


def _ramp_error(values: Sequence[float], runs: Sequence[int], last_before: int, first_after: int,
                left: Sequence[int], right: Sequence[int]) -> float:
    """The squared error of the ramp model (module docstring of `_ramp`) over `runs`."""
    level_before = statistics.fmean(values[i] for i in left)
    level_after = statistics.fmean(values[i] for i in right)
    error = 0.0
    for i in runs:
        if i <= last_before:
            expected = level_before
        elif i >= first_after:
            expected = level_after
        else:
            expected = level_before + (level_after - level_before) * (i - last_before) / (first_after - last_before)
        error += (values[i] - expected) ** 2
    return error


# -- per-query confirmation ------------------------------------------------------------------------

def _paired_ci(before: Sequence[int], after: Sequence[int], per_query: Sequence[Mapping[str, float] | None],
               seed: int, confidence: float = CONFIRM_CONFIDENCE) -> tuple[float, float] | None:
    """The paired bootstrap CI over queries of (mean over `after` runs) - (mean over `before` runs), on the
    queries every one of those runs carries; None without per-query values."""
    runs = {i: row for i in (*before, *after) if i < len(per_query) and (row := per_query[i]) is not None}
    if len(runs) < len(before) + len(after):
        return None
    first, *others = runs.values()
    common = set(first).intersection(*others)
    if not common:
        return None
    level_before = {qid: statistics.fmean(runs[i][qid] for i in before) for qid in common}
    level_after = {qid: statistics.fmean(runs[i][qid] for i in after) for qid in common}
    return bootstrap_ci(group_differences(level_before, level_after), resamples=CI_RESAMPLES, seed=seed,
                        confidence=confidence)
