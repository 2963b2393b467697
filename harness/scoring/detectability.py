"""What a set can detect: the points one query is worth, and the smallest change a paired test would find.

For a scope of n scored queries (m resampling units: a paraphrase group counts once) and a
mean of a [0, 1] metric:
- one query is worth 1/n of the mean's range (100/n points): the most a single query can move it;
- the minimum detectable effect of a two-sided paired test at significance alpha with power
  1 - beta is delta = (z[1 - alpha/2] + z[1 - beta]) * sigma_d / sqrt(m), where sigma_d is the
  standard deviation of the per-unit differences between the two runs (Webber, Moffat and
  Zobel 2008, "Statistical power in retrieval experimentation", CIKM; Sakai 2016, "Topic set
  size design", Information Retrieval Journal 19). Gated against a baseline, sigma_d is that of
  the differences this change produced. When no difference was observed (an unchanged run), or
  for a set on its own (`sets show`), it is estimated from one run's per-unit variance sigma^2
  as sigma_d^2 = 2 sigma^2: the two runs taken as independent, the bound for a change of system;
  a small change of one backend, whose runs correlate, is detected at smaller sizes.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

ALPHA = 0.05
POWER = 0.8
_NORMAL = statistics.NormalDist()


@dataclass(frozen=True, slots=True)
class Detectability:
    """In the metric's own units (a fraction of 1: x100 for points)."""

    queries: int
    units: int
    one_query: float | None       # 1/n
    detectable: float | None      # the minimum detectable effect; None with fewer than 2 units
    observed: bool                # sigma_d from this change's differences (else the 2 sigma^2 bound)
    sigma_d: float | None = None  # the standard deviation of the per-unit differences it assumed

    def covers(self, change: float) -> bool:
        """Whether a change this large (either sign) is one the scope can tell from noise."""
        return self.detectable is not None and abs(change) >= self.detectable


def multiplier(alpha: float = ALPHA, power: float = POWER) -> float:
    """z[1 - alpha/2] + z[power]: 2.80 at alpha 0.05 and power 0.8."""
    return _NORMAL.inv_cdf(1 - alpha / 2) + _NORMAL.inv_cdf(power)


def detectability(current: Mapping[str, float], units: Mapping[str, str],
                  baseline: Mapping[str, float] | None = None) -> Detectability:
    """The scope's detectability from its per-query values (qid -> value), each query's resampling unit,
    and, when gated, the baseline's per-query values (the paired differences)."""
    qids = [qid for qid in current if baseline is None or qid in baseline]
    n = len(qids)
    if n == 0:
        return Detectability(0, 0, None, None, False)
    differences = _unit_means({qid: current[qid] - baseline[qid] for qid in qids}, units) if baseline else {}
    observed = len(differences) > 1 and statistics.pstdev(differences.values()) > 0
    if observed:
        values = list(differences.values())
        sigma_d = statistics.stdev(values)
    else:
        values = list(_unit_means({qid: current[qid] for qid in qids}, units).values())
        sigma_d = math.sqrt(2) * statistics.stdev(values) if len(values) > 1 else None
    m = len(values)
    # every unit alike (a saturated scope: all 1.0) leaves no variance to size a test by: nothing to say
    detectable = multiplier() * sigma_d / math.sqrt(m) if sigma_d and m > 1 else None
    return Detectability(n, m, 1 / n, detectable, observed, sigma_d)


def _unit_means(values: Mapping[str, float], units: Mapping[str, str]) -> dict[str, float]:
    """Per resampling unit, the mean of its queries' values (a paraphrase group is one observation)."""
    grouped: dict[str, list[float]] = {}
    for qid, value in values.items():
        grouped.setdefault(units.get(qid, qid), []).append(value)
    return {unit: sum(group) / len(group) for unit, group in grouped.items()}


def queries_needed(sigma_d: float, change: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Units a paired test needs to detect `change` when the differences have standard deviation sigma_d."""
    return math.ceil((multiplier(alpha, power) * sigma_d / change) ** 2)
