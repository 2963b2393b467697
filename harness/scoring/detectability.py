"""What a set can detect: the points one query is worth, and the smallest change a paired test would find.

For a scope of n scored queries (m resampling units: a paraphrase group counts once) and a
mean of a [0, 1] metric:
- one query is worth 1/n of the mean's range (100/n points): the most a single query can move it;
- the minimum detectable effect of a two-sided paired test at significance alpha with power
  1 - beta is delta = (t[1 - alpha/2; m - 1] + t[1 - beta; m - 1]) * sigma_d / sqrt(m), where
  sigma_d is the standard deviation of the per-unit differences between the two runs (a unit's
  queries' differences summed, as the paired test draws and flips them, scaled by m / n) and t the
  quantiles of Student's t with m - 1 degrees of freedom (Webber, Moffat and Zobel 2008,
  "Statistical power in retrieval experimentation", CIKM; Sakai 2016, "Topic set size design",
  Information Retrieval Journal 19). The t quantiles are exact (an inverse of the regularised
  incomplete beta function, `t_quantile`); the normal's z understates them by more than 10 %
  below about 20 units. Gated against a baseline, sigma_d is that of the differences this change
  produced.
- the bound for a change of system (an unchanged run, or a set on its own in `sets show`):
  the other system is unknown, so it is taken as independent of this one and as spread as a
  [0, 1] value with its mean can be: sigma_d^2 = sigma^2 + max (mu' (1 - mu')) over the other
  system's mean mu' within delta of this one's mean mu (sigma^2 this run's per-unit variance).
  On a saturated baseline (most units at 1.0) the other system's spread, not this one's, decides.
- "none" (`detectable` None, `unreachable` saying why) where no change can be detected: a scope
  of m <= 5 units, whose sign-flip test's smallest p, 2 / 2^m, is above alpha 0.05, and a
  figure beyond the metric's range (more than 100 points).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

ALPHA = 0.05
POWER = 0.8
MIN_MOVED_UNITS = 10  # a small change is sized from its moves only when at least this many units moved
_NORMAL = statistics.NormalDist()
_GRID = 2000  # steps of the scan for the smallest delta on [0, range] (0.05 points on a [0, 1] metric)


@dataclass(frozen=True, slots=True)
class Detectability:
    """In the metric's own units (a fraction of 1: x100 for points)."""

    queries: int
    units: int
    one_query: float | None       # 1/n
    detectable: float | None      # the minimum detectable effect; None: see `unreachable`
    observed: bool                # sigma_d from this change's differences (else the bound for a change of system)
    sigma_d: float | None = None  # the standard deviation of the per-unit differences it assumed at `detectable`
    unreachable: str = ""         # why no change is detectable ("" when one is, or nothing varies to size it by)

    @property
    def too_few_units(self) -> bool:
        """Whether no change is detectable because the sign-flip test over its units can never reach ALPHA
        (the other `unreachable` reason: the change it would need is beyond the metric's range)."""
        return smallest_sign_flip_p(self.units) > ALPHA

    def covers(self, change: float) -> bool:
        """Whether a change this large (either sign) is one the scope can tell from noise."""
        return self.detectable is not None and abs(change) >= self.detectable


@dataclass(frozen=True, slots=True)
class SmallChange:
    """What a change of one backend's setting, of the kind a paired run shows, is detected at (`--paired`)."""

    moved: int                    # k: units whose value differs between the two runs
    units: int                    # m: units of the scope
    detectable: float | None      # None: see `reason`
    reason: str = ""              # why there is no figure
    mean_square: float = 0.0      # sum d^2 / m over the scope's units (d: a unit's summed difference)
    move_size: float = 0.0        # a: the mean size of a further move (capped by its query's room)
    move_square: float = 0.0      # q: the mean square of a further move
    per_unit: float = 1.0         # n / m: queries per unit
    stuck: float = 0.0            # the mean over the units of the moves that cannot go the other way (a rise)

    def moved_words(self) -> str:
        return f"{self.moved} of {self.units} units moved"

    def sigma_d(self, delta: float) -> float | None:
        """The standard deviation of the per-unit differences of a change of this kind of mean `delta`."""
        if not self.move_size:
            return None
        shift = delta * self.per_unit  # the mean of a unit's summed difference
        further = max(0.0, shift + self.stuck)  # the further moves' total per unit: the drop and the stuck rise
        variance = self.mean_square + further * self.move_square / self.move_size - shift * shift
        return math.sqrt(max(0.0, variance)) / self.per_unit


def t_cdf(t: float, df: float) -> float:
    """P[T <= t] for Student's t with `df` degrees of freedom: 1 - I_x(df/2, 1/2)/2 at x = df/(df + t^2), t >= 0."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom, by bisection on `t_cdf` (to 1e-12)."""
    if not 0 < p < 1:
        raise ValueError(f"a quantile needs 0 < p < 1, got {p}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    if p == 0.5:
        return 0.0
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2
    while high - low > 1e-12 * max(1.0, high):
        middle = (low + high) / 2
        low, high = (middle, high) if t_cdf(middle, df) < p else (low, middle)
    return (low + high) / 2


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta I_x(a, b), by its continued fraction (modified Lentz; Numerical Recipes 6.4)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny, c, d = 1e-300, 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 10_000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return result


@functools.lru_cache(maxsize=4096)
def multiplier(alpha: float = ALPHA, power: float = POWER, units: int | None = None) -> float:
    """t[1 - alpha/2; m - 1] + t[power; m - 1] for m = `units` (>= 2); None: the normal's z, 2.80 at 0.05 and 0.8."""
    if units is None:
        return _NORMAL.inv_cdf(1 - alpha / 2) + _NORMAL.inv_cdf(power)
    if units < 2:
        raise ValueError(f"a paired t needs at least 2 units, got {units}")
    return t_quantile(1 - alpha / 2, units - 1) + t_quantile(power, units - 1)


def smallest_sign_flip_p(units: int) -> float:
    """The smallest two-sided p a sign-flip (randomization) test over `units` units can give: 2 / 2^m."""
    return min(1.0, 2 / 2 ** units)


def detectability(current: Mapping[str, float], units: Mapping[str, str],
                  baseline: Mapping[str, float] | None = None) -> Detectability:
    """The scope's detectability from its per-query values (qid -> value), each query's resampling unit,
    and, when gated, the baseline's per-query values (the paired differences).

    Values are a [0, 1] metric, or its negation in [-1, 0] (a lower-is-better rate, as the gates pass it).
    """
    qids = [qid for qid in current if baseline is None or qid in baseline]
    n = len(qids)
    if n == 0:
        return Detectability(0, 0, None, None, False)
    differences = _unit_sums({qid: current[qid] - baseline[qid] for qid in qids}, units) if baseline else {}
    observed = len(differences) > 1 and statistics.pstdev(differences.values()) > 0
    values = list((differences if observed else _unit_means({q: current[q] for q in qids}, units)).values())
    m = len(values)
    if smallest_sign_flip_p(m) > ALPHA:  # sigma_d still sizes how many queries a confirming set needs
        sigma_d = math.sqrt(statistics.variance(values)) * m / n if observed else None
        return Detectability(n, m, 1 / n, None, observed, sigma_d, unreachable=(
            f"none: {m} units, and the sign-flip test's smallest p, 2/2^{m} = {smallest_sign_flip_p(m):.3f}, "
            f"is above alpha {ALPHA:g}"))
    spread = statistics.variance(values)
    if observed:  # the statistic is the mean over the n queries of the units' sums: sd(sums) x m / n per unit
        sigma_d = math.sqrt(spread) * m / n
        delta = multiplier(units=m) * sigma_d / math.sqrt(m)
        if delta > 1:
            return Detectability(n, m, 1 / n, None, True, sigma_d, _beyond_range(delta))
        return Detectability(n, m, 1 / n, delta, True, sigma_d)
    variance = _change_of_system_variance(values)
    factor = multiplier(units=m)
    bound = _smallest_delta(lambda d: factor * math.sqrt(variance(d) / m))
    if bound is None:
        return Detectability(n, m, 1 / n, None, False, math.sqrt(variance(1.0)), _beyond_range(None))
    return Detectability(n, m, 1 / n, bound, False, math.sqrt(variance(bound)))


def bound_sigma_d(current: Mapping[str, float], units: Mapping[str, str], change: float) -> float | None:
    """sigma_d of the bound for a change of system of size `change` (None: fewer than 2 units)."""
    values = list(_unit_means(current, units).values())
    return math.sqrt(_change_of_system_variance(values)(change)) if len(values) >= 2 else None


def _change_of_system_variance(values: Sequence[float]) -> Callable[[float], float]:
    """delta -> sigma_d^2 of a change of system of size delta, from this run's per-unit values: their spread plus
    the largest variance a value in [low, high] can have at a mean within delta of theirs (the other run
    independent of this one); [-1, 0] for a negated rate, else [0, 1]."""
    spread, mean = statistics.variance(values), statistics.fmean(values)
    low = -1.0 if min(values) < 0 else 0.0  # a saturated scope (all 1.0) is sized by the other system's room
    high, middle = low + 1, low + 0.5

    def variance(delta: float) -> float:
        nearest = min(max(middle, mean - delta), mean + delta)  # the other mean closest to the middle
        nearest = min(max(nearest, low), high)
        return spread + (nearest - low) * (high - nearest)
    return variance


def _smallest_delta(required: Callable[[float], float]) -> float | None:
    """The smallest delta in (0, 1] with delta >= required(delta): a scan of _GRID steps, then bisection;
    None when there is none (no change within the metric's range is detectable)."""
    previous = 0.0
    for step in range(1, _GRID + 1):
        delta = step / _GRID
        if delta >= required(delta):
            low, high = previous, delta
            for _ in range(60):
                middle = (low + high) / 2
                low, high = (low, middle) if middle >= required(middle) else (middle, high)
            return high
        previous = delta
    return None


def _beyond_range(delta: float | None) -> str:
    figure = f" ({delta * 100:.1f} points)" if delta is not None else ""
    return f"none: the change it would need{figure} is beyond the metric's range of 100 points"


def small_change(current: Mapping[str, float], baseline: Mapping[str, float], units: Mapping[str, str],
                 min_moved: int = MIN_MOVED_UNITS) -> SmallChange:
    """The smallest drop detected (alpha 0.05, power 0.8) that is made of moves like those of the paired run.

    The two runs' per-query differences (k of the m units moved) stand for a change of that kind:
    its moves kept as noise, each either sign where the query has room for the other (else as it
    is: the sum u of those), and a drop of the mean by delta added as further moves on queries it
    left alone, each a move of this change's sizes capped by what the query can still lose (its
    baseline value): a = E[min(s, r)] and q = E[min(s, r)^2] over the moves' sizes s and those
    queries' values r, (delta n + u) / a such moves. With d a unit's summed difference (n queries
    over m units, the paired test's statistic being sum d / n), the differences have var(d) =
    (sum d^2 + (delta n + u) q / a) / m - (delta n / m)^2, and the figure is the smallest delta
    with delta >= (t[0.975; m-1] + t[0.8; m-1]) sqrt(m var(d)) / n. Sized only from `min_moved`
    or more moved units (fewer say too little of the change's moves); "none" when the queries left
    alone cannot hold the moves it needs or the sign-flip test cannot reach alpha.
    benchmarks/detectability.py checks the figure's power by simulation.
    """
    qids = [qid for qid in current if qid in baseline]
    changes = {qid: current[qid] - baseline[qid] for qid in qids}
    differences = list(_unit_sums(changes, units).values())
    m = len(differences)
    moves = [d for d in differences if abs(d) > 1e-12]
    k = len(moves)
    if k < min_moved:
        return SmallChange(k, m, None, f"too few moved units to size a change ({k} moved; at least {min_moved})")
    if smallest_sign_flip_p(m) > ALPHA:
        return SmallChange(k, m, None, f"none: {m} units cannot reach alpha {ALPHA:g}")
    sizes = Counter(abs(change) for change in changes.values() if abs(change) > 1e-12)
    rooms = Counter(baseline[qid] for qid in qids if abs(changes[qid]) <= 1e-12 and baseline[qid] > 1e-12)
    pairs = sum(sizes.values()) * sum(rooms.values())
    if not pairs:
        return SmallChange(k, m, None, "none: no query the change left alone has anything to lose")
    size = sum(a * b * min(s, r) for s, a in sizes.items() for r, b in rooms.items()) / pairs
    square = sum(a * b * min(s, r) ** 2 for s, a in sizes.items() for r, b in rooms.items()) / pairs
    # a move that cannot go the other way (a query that rose from below its size) stays; the drop must cover it too
    stuck = sum(change for qid, change in changes.items() if not 0 <= baseline[qid] - change <= 1)
    shape = SmallChange(k, m, None, mean_square=sum(d * d for d in moves) / m, move_size=size, move_square=square,
                        per_unit=len(qids) / m, stuck=stuck / m)
    factor = multiplier(units=m)
    delta = _smallest_delta(lambda d: factor * (shape.sigma_d(d) or 0.0) / math.sqrt(m))
    room = (size * sum(rooms.values()) - stuck) / len(qids)  # the largest drop the queries left alone can make
    if delta is None or delta > room:
        return dataclasses.replace(shape, reason="none: a change of this kind detectable here needs more moves than "
                                                 "the queries it left alone can make")
    return dataclasses.replace(shape, detectable=delta)


def _unit_sums(values: Mapping[str, float], units: Mapping[str, str]) -> dict[str, float]:
    """Per resampling unit, the sum of its queries' values: the paired test's statistic is their total over the
    queries' count, a group drawn or flipped whole."""
    grouped: dict[str, float] = {}
    for qid, value in values.items():
        key = units.get(qid, qid)
        grouped[key] = grouped.get(key, 0.0) + value
    return grouped


def _unit_means(values: Mapping[str, float], units: Mapping[str, str]) -> dict[str, float]:
    """Per resampling unit, the mean of its queries' values (a paraphrase group is one observation)."""
    grouped: dict[str, list[float]] = {}
    for qid, value in values.items():
        grouped.setdefault(units.get(qid, qid), []).append(value)
    return {unit: sum(group) / len(group) for unit, group in grouped.items()}


def queries_needed(sigma_d: float, change: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Units a paired test needs to detect `change` when the differences have standard deviation sigma_d:
    the smallest m with m >= ((t[1 - alpha/2; m-1] + t[power; m-1]) sigma_d / change)^2."""
    m = max(2, math.ceil((multiplier(alpha, power) * sigma_d / change) ** 2))  # the normal's answer: a lower bound
    while m < (multiplier(alpha, power, units=m) * sigma_d / change) ** 2:
        m += 1
    return m
