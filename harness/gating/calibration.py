"""A set's calibrated run-to-run noise: measured from N runs of one backend (`calibrate`), kept in the baseline,
and the allowance the gates add to their limits for it.

A baseline set entry may carry a `calibration` object (written only by `python -m harness calibrate`):

    "calibration": {"runs": 5, "alpha": 0.01, "rebuild": "--seed 1..5",
                    "quality": {"overall": {"recall@10": {"means": [0.71, 0.70, ...], "query_sd": 0.004}},
                                "category:NAME": {...}},
                    "varying": {"recall@10": ["q-007", ...]},
                    "contracts": {"q-151": ["forbid:fact-027"]}, "contract_breaks": [12, 15, ...],
                    "latency_ms": {"p50": [1.2, ...], "p95": [3.4, ...]},
                    "resources": {"startup_seconds": [0.21, ...], "peak_rss_mib": [48.6, ...]}}

Each figure keeps its value in every run; a quality figure also keeps `query_sd`, the spread of its scope mean
that its queries' own run-to-run variances imply (sqrt(sum of var_q) / n, queries taken as independent): with
few runs the spread of N means can be 0 by chance (a category whose moving queries cancelled out), while the
queries that moved still show. A figure's sd is the larger of the two. `varying` names the queries whose value
moved between runs, `contracts` the hard contracts broken in some runs but not in all (noise, as the
contract gate reports them; a contract broken in every run is a break, not noise), `contract_breaks` the
number of contracts broken in each run (queries expected to fail left out, as the contract gate leaves them),
`resources` each adapter resource figure every run measured (measured.RESOURCE_FIGURES: start-up, peak RSS,
index size; the resource gates' comparison with the baseline allows for them, never their budgets). The
p95 comparison across runs allows for `latency_ms`'s p95 spread the same way. Families
this module does not know are kept as read and written back as they were.

The allowance (docs/gate.md, "Calibrated noise"): a gate compares one run with the baseline's one
run, two draws of the same noise, so their difference has standard deviation sqrt(2) x sd; a loss
within the policy's limit plus z_{1-alpha} x sqrt(2) x sd is allowed, so an unchanged backend fails
one scope's gate with probability at most about alpha. A figure that did not move in any run (BM25:
deterministic) has sd 0 and no allowance: its gate is exactly the uncalibrated one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.errors import BaselineError
from harness.measured import RESOURCE_FIGURES, SetNumbers, StrictReader
from harness.text import plural

DEFAULT_RUNS = 5
DEFAULT_ALPHA = 0.01
MIN_RUNS = 2  # a spread needs two runs
QUALITY, VARYING, LATENCY, CONTRACTS, BREAKS = "quality", "varying", "latency_ms", "contracts", "contract_breaks"
RESOURCES = "resources"
LATENCY_FIGURES = ("p50", "p95")
_KNOWN = {"runs", "alpha", "rebuild", QUALITY, VARYING, LATENCY, CONTRACTS, BREAKS, RESOURCES}
EXPECTED_TO_FAIL = ("xfail", "xpass")  # outcomes whose contracts the contract gate does not hold


@dataclass(frozen=True, slots=True)
class Noise:
    """One figure's value in each calibration run, and (a scope mean) the spread its queries' variances imply."""

    values: tuple[float, ...]
    query_sd: float = 0.0

    @property
    def sd(self) -> float:
        """The larger of the values' sample standard deviation (n - 1) and `query_sd`; exactly 0.0 when every
        run gave the same value and no query moved."""
        if len(set(self.values)) < 2:
            return self.query_sd
        return max(statistics.stdev(self.values), self.query_sd)


@dataclass(frozen=True)
class SetCalibration:
    """A set's calibration as the baseline records it: runs, alpha, how the index was rebuilt between runs,
    each scope's metric means per run, the queries that varied, latency p50/p95 per run, other families."""

    runs: int
    alpha: float
    rebuild: str | None
    quality: Mapping[str, Mapping[str, Noise]]  # scope label ("overall", "category:NAME") -> metric -> noise
    varying: Mapping[str, tuple[str, ...]]  # metric -> queries whose value moved between runs
    latency: Mapping[str, Noise] = field(default_factory=dict)  # "p50" / "p95" -> noise, milliseconds
    contracts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # query -> contracts broken in some runs
    breaks: Noise | None = None  # how many contracts broke in each run
    resources: Mapping[str, Noise] = field(default_factory=dict)  # resource figure -> noise, in its own unit
    other: Mapping[str, object] = field(default_factory=dict)  # families added later, kept as read

    @property
    def z(self) -> float:
        """z_{1-alpha}: the one-sided normal quantile the allowance is scaled by."""
        return statistics.NormalDist().inv_cdf(1 - self.alpha)

    def noise(self, metric: str, category: str | None = None) -> Noise | None:
        """The calibrated noise of `metric` in the scope (None: overall), or None when it was not calibrated."""
        return self.quality.get(scope_label(category), {}).get(metric)

    def allowance(self, noise: Noise | None) -> float:
        """What a gate adds to its limit for this noise: z_{1-alpha} x sqrt(2) x sd (0.0 for no or zero noise)."""
        if noise is None or noise.sd == 0.0:
            return 0.0
        return self.z * math.sqrt(2) * noise.sd

    def note(self, noise: Noise) -> str:
        """The allowance in words, in points, for a quality gate's message."""
        return (f"calibrated noise +{self.allowance(noise) * 100:.2f} points (z {self.z:.2f} x sqrt2 x sd "
                f"{noise.sd * 100:.2f} over {self.runs} runs, alpha {self.alpha:g})")

    def summary(self) -> str:
        """Which figures were calibrated, in a few words: `recall@10 in 4 scopes, latency p50/p95; 5 runs, alpha 0.01`."""
        metrics = sorted({metric for scope in self.quality.values() for metric in scope})
        parts = [f"{', '.join(metrics)} in {plural(len(self.quality), 'scope')}"] if metrics else []
        if self.latency:
            parts.append("latency " + "/".join(name for name in LATENCY_FIGURES if name in self.latency))
        if self.resources:
            parts.append("resources " + "/".join(words for name, _, words in RESOURCE_FIGURES if name in self.resources))
        if self.contracts:
            parts.append(f"the contracts of {plural(len(self.contracts), 'query', 'queries')}")
        if self.breaks is not None and self.breaks.sd:
            parts.append("the count of broken contracts")
        parts.extend(sorted(self.other))
        moved = sorted({qid for qids in self.varying.values() for qid in qids})
        return (f"{', '.join(parts) or 'nothing'}; {self.runs} runs, alpha {self.alpha:g}, "
                f"{plural(len(moved), 'query', 'queries')} varied")

    def to_dict(self) -> dict[str, object]:
        return {"runs": self.runs, "alpha": self.alpha, "rebuild": self.rebuild,
                QUALITY: {scope: {metric: {"means": list(noise.values), "query_sd": noise.query_sd}
                                  for metric, noise in metrics.items()}
                          for scope, metrics in self.quality.items()},
                VARYING: {metric: list(qids) for metric, qids in self.varying.items()},
                LATENCY: {name: list(noise.values) for name, noise in self.latency.items()},
                **({CONTRACTS: {qid: list(keys) for qid, keys in self.contracts.items()}} if self.contracts else {}),
                **({BREAKS: list(self.breaks.values)} if self.breaks is not None else {}),
                **({RESOURCES: {name: list(noise.values) for name, noise in self.resources.items()}}
                   if self.resources else {}),
                **self.other}

    def resource_allowances(self) -> dict[str, float]:
        """Resource figure -> what its comparison with the baseline adds to the allowed value (its unit)."""
        return {name: self.allowance(noise) for name, noise in self.resources.items()}

    def flaky_contracts(self) -> frozenset[tuple[str, str]]:
        """(query, contract key) of every contract broken in some calibration runs and not in others."""
        return frozenset((qid, key) for qid, keys in self.contracts.items() for key in keys)


def scope_label(category: str | None) -> str:
    """The label a scope is calibrated under, as `Aggregates.scopes` names it."""
    return "overall" if category is None else f"category:{category}"


def calibrate_runs(runs: Sequence[SetNumbers], metrics: Sequence[str], *, alpha: float = DEFAULT_ALPHA,
                   rebuild: str | None = None) -> SetCalibration:
    """The calibration of N runs of one set (in run order): the means of `metrics` (the gated ones) in the
    overall and category scopes, the queries whose value of a metric moved, latency p50/p95 when every run
    was timed.

    A metric is calibrated in a scope only when every run has its mean there (an evidence metric judged on
    no query of a scope is not). Raises BaselineError with fewer
    than MIN_RUNS runs.
    """
    if len(runs) < MIN_RUNS:
        raise BaselineError(f"calibration needs at least {MIN_RUNS} runs, got {len(runs)}")
    quality: dict[str, dict[str, Noise]] = {}
    for category in [None, *runs[0].aggregates.category]:  # splits are reported, not gated
        scopes = [run.aggregates.scope(category) for run in runs]
        per_metric = {metric: Noise(tuple(float(s.means[metric]) for s in scopes if s is not None),
                                    query_sd=_query_sd(runs, metric, category))
                      for metric in metrics if all(s is not None and metric in s.means for s in scopes)}
        if per_metric:
            quality[scope_label(category)] = per_metric
    varying = {metric: tuple(qid for qid in runs[0].queries  # the queries whose value moved between runs
                             if len({run.queries[qid].metrics.get(metric) if qid in run.queries else None
                                     for run in runs}) > 1)
               for metric in sorted({metric for scope in quality.values() for metric in scope})}
    latency = _every_run({name: [getattr(run.latency, name) for run in runs] for name in LATENCY_FIGURES})
    resources = _every_run({name: [run.resources.figure(name) for run in runs] for name, _, _ in RESOURCE_FIGURES})
    contracts = {}
    for qid in runs[0].queries:
        broken: list[set[str]] = [set(run.queries[qid].broken) if qid in run.queries else set() for run in runs]
        flaky = set().union(*broken) - broken[0].intersection(*broken[1:])
        if flaky:
            contracts[qid] = tuple(sorted(flaky))
    return SetCalibration(runs=len(runs), alpha=alpha, rebuild=rebuild, quality=quality, varying=varying,
                          latency=latency, contracts=contracts,
                          breaks=Noise(tuple(float(broken_contracts(run)) for run in runs)), resources=resources)


def _every_run(figures: Mapping[str, list[float | None]]) -> dict[str, Noise]:
    """The noise of each figure that every run measured."""
    return {name: Noise(tuple(float(v) for v in values if v is not None))
            for name, values in figures.items() if None not in values}


def broken_contracts(numbers: SetNumbers) -> int:
    """How many hard contracts the rows broke, queries expected to fail (xfail, xpass) left out."""
    return sum(len(row.broken) for row in numbers.queries.values() if row.outcome not in EXPECTED_TO_FAIL)


def _query_sd(runs: Sequence[SetNumbers], metric: str, category: str | None) -> float:
    """sqrt(sum over the scope's scored queries of their run-to-run sample variance) / their count: the sd of the
    scope mean if the queries moved independently. 0.0 when no query moved."""
    rows = runs[0].rows(category)
    if not rows:
        return 0.0
    total = sum(statistics.variance([float(run.queries[row.qid].metrics.get(metric, 0.0)) if row.qid in run.queries
                                     else 0.0 for run in runs]) for row in rows)  # an unmoved query adds exactly 0
    return math.sqrt(total) / len(rows)


def read_calibration(reader: StrictReader) -> SetCalibration:
    """A baseline set entry's `calibration` object, read strictly (BaselineError naming the field)."""
    runs = reader.get("runs").integer_in(MIN_RUNS, 10_000)
    alpha = reader.get("alpha").number_in(0.0, 0.5, above=True, below=True)
    rebuild = reader.get("rebuild", required=False).optional_text()

    def noise(values: StrictReader, query_sd: float = 0.0) -> Noise:
        numbers = tuple(float(item.number()) for item in values.elements())
        if len(numbers) != runs:
            raise values.fail(f"holds {len(numbers)} values for {runs} runs")
        return Noise(numbers, query_sd)

    quality = {scope: {metric: noise(figure.get("means"), figure.get("query_sd").number_in(0.0, 1e9))
                       for metric, figure in metrics.items()}
               for scope, metrics in reader.get(QUALITY).items()}
    varying = {metric: qids.strings() for metric, qids in reader.get(VARYING).items()}
    latency = {name: noise(values) for name, values in reader.get(LATENCY, required=False).items()} \
        if reader.has(LATENCY) else {}
    contracts = {qid: keys.strings() for qid, keys in reader.get(CONTRACTS, required=False).items()} \
        if reader.has(CONTRACTS) else {}
    breaks = noise(reader.get(BREAKS)) if reader.has(BREAKS) else None
    figures = {name for name, _, _ in RESOURCE_FIGURES}
    resources = {name: noise(values) for name, values in reader.get(RESOURCES).only(figures).items()} \
        if reader.has(RESOURCES) else {}
    other = {key: value for key, value in reader.obj().items() if key not in _KNOWN}
    return SetCalibration(runs=runs, alpha=alpha, rebuild=rebuild, quality=quality, varying=varying,
                          latency=latency, contracts=contracts, breaks=breaks, resources=resources, other=other)
