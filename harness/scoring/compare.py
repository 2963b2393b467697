"""Compare runs (reports or baselines) query by query: deltas, flips, paired tests, equivalence, movement, latency.

One base against one or more candidates, every pair joined per query (qid). The statistics:

- **Headline family** (Holm-adjusted): each set's *overall* value of each tested (gated)
  metric, for every candidate. Categories and splits are exploratory: their p-values are
  shown unadjusted and marked so (`adjusted_p` has no entry for them).
- **Each headline cell, in plain words** (margin m from the gate policy; the two-sided 90%
  paired bootstrap CI of the mean difference, candidate - base, is a one-sided test at alpha
  0.05 on each side): BETTER (significantly higher), WORSE (significantly lower, its 90% CI
  reaching -m or below), LOWER WITHIN MARGIN (significantly lower, yet its 90% CI lies above -m:
  a real but small drop), EQUIVALENT (both 90% bounds inside +-m: the two one-sided tests,
  TOST), NO WORSE (non-inferior: the lower 90% bound above -m, the upper one not inside +m),
  INCONCLUSIVE (none of these: the set cannot tell; always, with fewer than MIN_UNITS resampling
  units, whose bootstrap has no spread to test: one query is no evidence of equivalence). "Significant" needs the Holm-adjusted
  randomization p below alpha AND the 95% bootstrap CI to exclude zero on the same side, so a
  label never rests on one procedure the other contradicts (small sets: a CI excluding zero
  with p 0.059 is INCONCLUSIVE, not WORSE). A 90% bound within NEAR_MARGIN of the margin is
  recomputed with NEAR_MARGIN_RESAMPLES (the Monte Carlo error of a bound is about 0.1-0.3
  points at 10,000 resamples), and the cell records the resamples it used.
- **Per-query movement** of each tested metric overall: better / worse / unchanged counts, the
  worst losses, the mean loss over the queries that got worse, and URisk at alpha 1
  (Wang et al. 2012: (sum of gains - 2 x sum of losses) / n).
- **Latency**: p50 and p95 (nearest rank) of each side over the queries both answered, with a
  95% bootstrap CI of each difference (queries resampled, percentiles recomputed); refused
  with a note when either side is a baseline (baselines keep only the latency summary) or the
  runs' condition or machine differ.

Every resampling runs on one statistics engine (harness.scoring.stats: numpy where installed,
else pure Python); both give the same numbers, and the comparison records which one ran.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.measured import SCOPE_GROUPS, QueryNumbers, Resources, SetNumbers
from harness.scoring.evaluate import REPORTED_METRICS
from harness.scoring.flips import Flip, find_flips
from harness.scoring.metrics import nearest_rank, percentile
from harness.scoring.stats import (CONFIDENCE, RESAMPLES, PairedTest, bootstrap_ci, check_engine, group_differences, holm,
                                   paired_test)

TESTED_METRICS = ("recall@10", "ndcg@10")
IDENTITY_FIELDS = ("revision", "corpus_hash", "k")
HEADLINE_SCOPE = "overall"
ALPHA = 0.05  # significance level of the Holm-adjusted headline tests
EQUIVALENCE_CONFIDENCE = 0.90  # a two-sided 90% CI whose lower bound clears -margin is TOST at alpha 0.05
DEFAULT_MARGIN_POINTS = 2.0  # the gate's default drop limit (harness.gating.policy), for callers without a policy
UNCHANGED_TOLERANCE = 1e-9  # per-query differences smaller than this are float noise: unchanged
WORST_SHOWN = 5  # worst per-query losses listed per set and metric
URISK_ALPHA = 1.0  # URisk's loss weight: a loss counts (1 + alpha) times a gain
LATENCY_PERCENTILES = (50, 95)

# A headline cell's status, worst first; a set's verdict is its worst cell's, a candidate's the worst set's.
STATUSES = ("worse", "inconclusive", "lower within margin", "no worse", "equivalent", "better")
VERDICTS = ("NOT COMPARABLE", "WORSE", "INCONCLUSIVE", "LOWER WITHIN MARGIN", "NO WORSE", "EQUIVALENT", "BETTER")
NEAR_MARGIN = 0.005            # a 90% bound within half a point of the margin is recomputed with more resamples
NEAR_MARGIN_RESAMPLES = 40_000
MIN_UNITS = 2  # resampling units (queries or groups) below which a cell is INCONCLUSIVE whatever its CIs say


@dataclass(frozen=True)
class RunView:
    """What comparison needs from a report or a baseline: each set's numbers (the same records either way).

    `kind` is "report" or "baseline" (a baseline keeps no per-query latency); `condition` and
    `machine` come from the report's provenance (a baseline has a condition, no machine)."""

    label: str
    metric_definitions: object
    sets: Mapping[str, SetNumbers]
    kind: str = "report"
    condition: str | None = None
    machine: Mapping[str, object] | None = None


@dataclass(frozen=True)
class Movement:
    """How the queries of one set moved on one metric: counts, worst losses, risk."""

    better: int
    worse: int
    unchanged: int
    worst: tuple[tuple[str, float, str], ...]  # (qid, change, query text), largest loss first
    mean_loss: float | None  # mean of (base - candidate) over the worse queries; None when none got worse
    urisk: float  # (sum of gains - (1 + URISK_ALPHA) * sum of losses) / n; 0 when n is 0

    def to_dict(self) -> dict[str, object]:
        return {"better": self.better, "worse": self.worse, "unchanged": self.unchanged,
                "worst": [{"qid": q, "change": c, "query": t} for q, c, t in self.worst],
                "mean_loss_over_worse": self.mean_loss, "urisk": self.urisk, "urisk_alpha": URISK_ALPHA}


@dataclass(frozen=True)
class LatencyComparison:
    """One set's latency, base vs candidate, over the queries both answered (milliseconds)."""

    set_name: str
    n: int
    base: dict[str, float]       # {"p50": ms, "p95": ms}
    candidate: dict[str, float]
    difference_ci: dict[str, tuple[float, float]]  # {"p50": (low, high)} of candidate - base, 95%

    def to_dict(self) -> dict[str, object]:
        return {"set": self.set_name, "n": self.n, "base": self.base, "candidate": self.candidate,
                "difference": {p: self.candidate[p] - self.base[p] for p in self.base},
                "difference_ci95": {p: list(ci) for p, ci in self.difference_ci.items()}}


@dataclass
class ScopeComparison:
    set_name: str
    scope: str  # "overall", "category:x", "split:y"
    n: int
    base: dict[str, float]
    candidate: dict[str, float]
    tests: dict[str, PairedTest] = field(default_factory=dict)
    adjusted_p: dict[str, float] = field(default_factory=dict)  # headline cells only (Holm)
    equivalence_ci: dict[str, tuple[float, float]] = field(default_factory=dict)  # headline: 90% CI
    movement: dict[str, Movement] = field(default_factory=dict)  # headline only
    resamples_used: dict[str, int] = field(default_factory=dict)  # headline cells recomputed near the margin

    @property
    def headline(self) -> bool:
        return self.scope == HEADLINE_SCOPE


@dataclass
class Comparison:
    base_label: str
    candidate_label: str
    mismatches: list[str]
    scopes: list[ScopeComparison]
    flips: list[Flip]
    only_in_one: list[str]
    seed: int
    resamples: int
    tested: tuple[str, ...] = TESTED_METRICS
    margin_points: float = DEFAULT_MARGIN_POINTS
    latency: list[LatencyComparison] = field(default_factory=list)
    latency_note: str | None = None  # why latency was not compared, when it was not
    family_size: int = 0  # how many tests the Holm adjustment spanned
    engine: str = "python"  # the statistics engine that resampled (harness.scoring.stats.ENGINES)
    # per shared set whose base or candidate measured them: the adapter's resources (base, candidate), each from
    # its own run (docs/gate.md, "Resource budgets")
    resources: dict[str, tuple[Resources, Resources]] = field(default_factory=dict)

    @property
    def margin(self) -> float:
        return self.margin_points / 100

    def headline_cells(self) -> list[tuple[ScopeComparison, str]]:
        return [(s, m) for s in self.scopes if s.headline for m in self.tested if m in s.tests]

    def cell_status(self, scope: ScopeComparison, metric: str) -> str:
        """One of STATUSES for a headline cell (see the module docstring for each word's rule)."""
        test = scope.tests[metric]
        if test.n_groups < MIN_UNITS:
            return "inconclusive"
        adjusted = scope.adjusted_p.get(metric, test.p_value)
        lower = adjusted < ALPHA and test.ci_high < 0   # both procedures agree the change is a drop
        higher = adjusted < ALPHA and test.ci_low > 0
        low, high = scope.equivalence_ci.get(metric, (test.ci_low, test.ci_high))
        within_below = low > -self.margin - UNCHANGED_TOLERANCE
        within_above = high < self.margin + UNCHANGED_TOLERANCE
        if higher:
            return "better"
        if lower:
            return "lower within margin" if within_below else "worse"
        if within_below:
            return "equivalent" if within_above else "no worse"
        return "inconclusive"

    def set_verdicts(self) -> dict[str, str]:
        """Per shared set, the worst status of its headline cells, as a VERDICTS word."""
        verdicts: dict[str, str] = {}
        for scope, metric in self.headline_cells():
            word = self.cell_status(scope, metric).upper()
            verdicts[scope.set_name] = min(word, verdicts.get(scope.set_name, word), key=VERDICTS.index)
        return verdicts

    def verdict(self) -> str:
        """One of VERDICTS: NOT COMPARABLE, else the worst of its sets' verdicts (INCONCLUSIVE with no cell)."""
        if self.mismatches:
            return "NOT COMPARABLE"
        return min(self.set_verdicts().values(), key=VERDICTS.index, default="INCONCLUSIVE")

    def to_dict(self) -> dict[str, object]:
        return {
            "base": self.base_label, "candidate": self.candidate_label, "verdict": self.verdict(),
            "set_verdicts": self.set_verdicts(),
            "mismatches": self.mismatches, "seed": self.seed, "resamples": self.resamples, "engine": self.engine,
            "only_in_one": self.only_in_one, "tested": list(self.tested), "margin_points": self.margin_points,
            "scopes": [{"set": s.set_name, "scope": s.scope, "n": s.n, "headline": s.headline,
                        "base": s.base, "candidate": s.candidate,
                        "tests": {m: _test_dict(self, s, m, t) for m, t in s.tests.items()},
                        **({"movement": {m: v.to_dict() for m, v in s.movement.items()}} if s.movement else {})}
                       for s in self.scopes],
            "flips": [{"set": f.set_name, "qid": f.qid, "query": f.query, "lost": list(f.lost),
                       "gained": list(f.gained)} for f in self.flips],
            "latency": [entry.to_dict() for entry in self.latency], "latency_note": self.latency_note,
            **({"resources": {name: {"base": base.to_dict(), "candidate": candidate.to_dict()}
                              for name, (base, candidate) in self.resources.items()}} if self.resources else {}),
        }


def _test_dict(comparison: Comparison, scope: ScopeComparison, metric: str, test: PairedTest) -> dict[str, object]:
    row: dict[str, object] = {"mean_difference": test.mean_difference, "ci95": [test.ci_low, test.ci_high],
                              "p_value": test.p_value, "p_holm": scope.adjusted_p.get(metric), "groups": test.n_groups}
    if metric in scope.equivalence_ci:
        row["ci90"] = list(scope.equivalence_ci[metric])
        status = comparison.cell_status(scope, metric)
        row["no_worse_than_margin"] = status in ("no worse", "equivalent", "better", "lower within margin")
        row["status"] = status
        row["resamples"] = scope.resamples_used.get(metric, comparison.resamples)
    return row


@dataclass
class ComparisonSuite:
    """One base against every candidate: the pairwise comparisons, Holm-adjusted as one family."""

    base_label: str
    comparisons: list[Comparison]
    margin_points: float
    tested: tuple[str, ...]
    policy_source: str = "default"

    @property
    def family_size(self) -> int:
        return sum(len(c.headline_cells()) for c in self.comparisons)

    @property
    def engine(self) -> str:
        """The statistics engine that resampled (every comparison of a suite uses one)."""
        return self.comparisons[0].engine if self.comparisons else "python"

    def verdict(self) -> str:
        """The worst candidate verdict (VERDICTS order)."""
        return min((c.verdict() for c in self.comparisons), key=VERDICTS.index, default="INCONCLUSIVE")

    def to_dict(self) -> dict[str, object]:
        return {"comparison_format": 1, "base": self.base_label, "verdict": self.verdict(),
                "tested": list(self.tested), "margin_points": self.margin_points, "policy": self.policy_source,
                "alpha": ALPHA, "equivalence_confidence": EQUIVALENCE_CONFIDENCE, "holm_family": self.family_size,
                "statistics_engine": self.engine,
                "candidates": [c.to_dict() for c in self.comparisons]}


def mismatches(base: RunView, candidate: RunView) -> list[str]:
    """Every reason the two runs are not comparable, one line each."""
    problems = []
    if base.metric_definitions != candidate.metric_definitions:
        problems.append("metric definitions differ")
    for name in sorted(set(base.sets) & set(candidate.sets)):
        for field_name in IDENTITY_FIELDS:
            before, after = getattr(base.sets[name], field_name), getattr(candidate.sets[name], field_name)
            if before != after:
                problems.append(f"set {name}: {field_name} {before!r} vs {after!r}")
        base_queries, candidate_queries = set(base.sets[name].queries), set(candidate.sets[name].queries)
        if base_queries != candidate_queries:
            # A shard of the set against the whole of it, say: paired on the common queries only,
            # a verdict would speak for queries one side never asked.
            problems.append(f"set {name}: {len(base_queries)} vs {len(candidate_queries)} queries, "
                            f"{len(base_queries & candidate_queries)} in both (a shard? merge the shards first)")
    return problems


def compare(base: RunView, candidate: RunView, *, seed: int = 0, resamples: int = RESAMPLES,
            tested: tuple[str, ...] = TESTED_METRICS, margin_points: float = DEFAULT_MARGIN_POINTS,
            adjust: bool = True, engine: str | None = None) -> Comparison:
    """Deltas per set / category / split and paired tests on `tested` metrics, base vs one candidate.

    With `adjust`, Holm runs over this pair's headline cells (each set's overall x `tested`);
    compare_many passes False and adjusts across every candidate at once. `engine`: the
    statistics engine (harness.scoring.stats.ENGINES; default numpy where installed): speed only.
    """
    engine = check_engine(engine)
    scopes: list[ScopeComparison] = []
    flips: list[Flip] = []
    shared = sorted(set(base.sets) & set(candidate.sets))
    only = sorted(set(base.sets) ^ set(candidate.sets))
    for name in shared:
        base_rows, cand_rows = base.sets[name].queries, candidate.sets[name].queries
        common = [qid for qid in sorted(set(base_rows) & set(cand_rows))
                  if base_rows[qid].scored and cand_rows[qid].scored and base_rows[qid].metrics]
        groups = {qid: base_rows[qid].resampling_unit for qid in common}
        texts = {qid: cand_rows[qid].query or base_rows[qid].query for qid in cand_rows if qid in base_rows}
        for scope, members in _scopes(common, base_rows):
            scopes.append(_compare_scope(name, scope, members, base_rows, cand_rows, groups, texts, seed, resamples,
                                         tested, engine, margin_points / 100))
        flips += find_flips(name, {qid: row.found for qid, row in base_rows.items()},
                            {qid: row.found for qid, row in cand_rows.items()}, texts)
    latency, note = compare_latency(base, candidate, shared, seed=seed, resamples=resamples, engine=engine)
    comparison = Comparison(base.label, candidate.label, mismatches(base, candidate), scopes, flips, only, seed,
                            resamples, tuple(tested), margin_points, latency, note, engine=engine,
                            resources={name: (base.sets[name].resources, candidate.sets[name].resources) for name in shared
                                       if base.sets[name].resources.measured or candidate.sets[name].resources.measured})
    if adjust:
        adjust_headline([comparison])
    return comparison


def compare_many(base: RunView, candidates: Sequence[RunView], *, seed: int = 0, resamples: int = RESAMPLES,
                 tested: tuple[str, ...] = TESTED_METRICS, margin_points: float = DEFAULT_MARGIN_POINTS,
                 policy_source: str = "default", engine: str | None = None) -> ComparisonSuite:
    """Every candidate against `base`, paired per query; Holm across all candidates' headline cells."""
    comparisons = [compare(base, candidate, seed=seed, resamples=resamples, tested=tested,
                           margin_points=margin_points, adjust=False, engine=engine) for candidate in candidates]
    adjust_headline(comparisons)
    return ComparisonSuite(base.label, comparisons, margin_points, tuple(tested), policy_source)


def adjust_headline(comparisons: Sequence[Comparison]) -> None:
    """Holm-adjust the headline cells of `comparisons` as one family (exploratory cells stay unadjusted)."""
    cells = [(scope, metric) for comparison in comparisons for scope, metric in comparison.headline_cells()]
    adjusted = holm([scope.tests[metric].p_value for scope, metric in cells])
    for (scope, metric), p_value in zip(cells, adjusted):
        scope.adjusted_p[metric] = p_value
    for comparison in comparisons:
        comparison.family_size = len(cells)


def _scopes(qids: list[str], rows: Mapping[str, QueryNumbers]) -> list[tuple[str, list[str]]]:
    scopes = [(HEADLINE_SCOPE, qids)]
    for key in SCOPE_GROUPS:
        values = sorted({value for q in qids if (value := getattr(rows[q], key))})
        scopes += [(f"{key}:{value}", [q for q in qids if getattr(rows[q], key) == value]) for value in values]
    return scopes


def _compare_scope(name: str, scope: str, members: list[str], base_rows: Mapping[str, QueryNumbers],
                   cand_rows: Mapping[str, QueryNumbers], groups: Mapping[str, str], texts: Mapping[str, str],
                   seed: int, resamples: int, tested: Sequence[str], engine: str, margin: float) -> ScopeComparison:
    def means(rows: Mapping[str, QueryNumbers]) -> dict[str, float]:
        return {m: sum(rows[q].metrics[m] for q in members) / len(members)
                for m in REPORTED_METRICS if members and all(m in rows[q].metrics for q in members)}
    result = ScopeComparison(name, scope, len(members), means(base_rows), means(cand_rows))
    for metric in tested:
        if metric in result.base and metric in result.candidate:
            before = {q: base_rows[q].metrics[metric] for q in members}
            after = {q: cand_rows[q].metrics[metric] for q in members}
            member_groups = {q: groups[q] for q in members}
            test = paired_test(before, after, member_groups, resamples=resamples, seed=seed, engine=engine)
            result.tests[metric] = test
            if result.headline:
                clusters = group_differences(before, after, member_groups)
                bounds = ((test.ci_low, test.ci_high) if test.ci_low == test.ci_high
                          else bootstrap_ci(clusters, resamples=resamples, seed=seed,
                                            confidence=EQUIVALENCE_CONFIDENCE, engine=engine))
                if resamples < NEAR_MARGIN_RESAMPLES and test.ci_low != test.ci_high and (
                        abs(bounds[0] + margin) < NEAR_MARGIN or abs(bounds[1] - margin) < NEAR_MARGIN):
                    # a bound this near the margin could cross it by Monte Carlo error alone: resample more
                    bounds = bootstrap_ci(clusters, resamples=NEAR_MARGIN_RESAMPLES, seed=seed,
                                          confidence=EQUIVALENCE_CONFIDENCE, engine=engine)
                    result.resamples_used[metric] = NEAR_MARGIN_RESAMPLES
                result.equivalence_ci[metric] = bounds
                result.movement[metric] = movement(before, after, texts)
    return result


def movement(base: Mapping[str, float], candidate: Mapping[str, float],
             texts: Mapping[str, str] | None = None) -> Movement:
    """Per-query movement over the qids in both: counts, the WORST_SHOWN largest losses, mean loss, URisk.

    A difference within UNCHANGED_TOLERANCE counts as unchanged. URisk (alpha URISK_ALPHA) is
    (sum of gains - (1 + alpha) * sum of losses) / n over all n paired queries.
    """
    texts = texts or {}
    changes = {qid: candidate[qid] - base[qid] for qid in sorted(set(base) & set(candidate))}
    losses = {qid: -c for qid, c in changes.items() if c < -UNCHANGED_TOLERANCE}
    gains = [c for c in changes.values() if c > UNCHANGED_TOLERANCE]
    worst = sorted(losses, key=lambda qid: (-losses[qid], qid))[:WORST_SHOWN]
    n = len(changes)
    urisk = (sum(gains) - (1 + URISK_ALPHA) * sum(losses.values())) / n if n else 0.0
    return Movement(len(gains), len(losses), n - len(gains) - len(losses),
                    tuple((qid, changes[qid], texts.get(qid, "")) for qid in worst),
                    sum(losses.values()) / len(losses) if losses else None, urisk)


def latency_refusal(base: RunView, candidate: RunView) -> str | None:
    """Why the two runs' latencies must not be compared, or None when they may."""
    for side, view in (("base", base), ("candidate", candidate)):
        if view.kind == "baseline":
            return (f"latency not compared: the {side} is a baseline file, which keeps only the latency "
                    "summary, not per-query latencies (compare two reports written with --out)")
    if base.condition != candidate.condition:
        return f"latency not compared: conditions differ ({base.condition!r} vs {candidate.condition!r})"
    if (base.machine or {}) != (candidate.machine or {}):
        return "latency not compared: the runs were made on different machines (provenance.machine differs)"
    return None


def compare_latency(base: RunView, candidate: RunView, set_names: Sequence[str], *, seed: int = 0,
                    resamples: int = RESAMPLES, engine: str | None = None) -> tuple[list[LatencyComparison], str | None]:
    """Per set, p50 / p95 of each side over the qids both answered, and a 95% bootstrap CI of each difference.

    Each resample draws the paired qids with replacement and recomputes both sides' nearest-rank
    percentiles (harness.scoring.metrics.percentile). Returns ([], note) when refused.
    """
    note = latency_refusal(base, candidate)
    if note is not None:
        return [], note
    results = []
    for name in set_names:
        before = query_latencies(base.sets[name])
        after = query_latencies(candidate.sets[name])
        qids = sorted(set(before) & set(after))
        if not qids:
            continue
        results.append(latency_difference(name, [before[q] for q in qids], [after[q] for q in qids],
                                          seed=seed, resamples=resamples, engine=engine))
    return results, None


def latency_difference(set_name: str, base_ms: Sequence[float], candidate_ms: Sequence[float], *, seed: int = 0,
                       resamples: int = RESAMPLES, engine: str | None = None) -> LatencyComparison:
    """Paired latencies (same query at each index) -> percentiles and percentile-bootstrap CIs of the differences.

    Resample r draws the indices `random.Random(seed + 2).choices(range(n), k=n)` gives; both
    engines (harness.scoring.stats.ENGINES) pick the same order statistics.
    """
    n = len(base_ms)
    observed_base = {f"p{p}": percentile(base_ms, p) for p in LATENCY_PERCENTILES}
    observed_cand = {f"p{p}": percentile(candidate_ms, p) for p in LATENCY_PERCENTILES}
    if check_engine(engine) == "numpy":
        from harness.scoring import numpy_engine
        columns = numpy_engine.percentile_differences(base_ms, candidate_ms,
                                                      [nearest_rank(n, p) for p in LATENCY_PERCENTILES],
                                                      resamples, seed + 2)
        draws = {f"p{p}": column for p, column in zip(LATENCY_PERCENTILES, columns)}
    else:
        draws = _percentile_differences(base_ms, candidate_ms, resamples, seed + 2)
    tail = round((1 - CONFIDENCE) / 2 * 100, 9)  # 2.5, as the paired statistics read it: not 2.5000000000000022
    intervals = {key: (percentile(values, tail), percentile(values, 100 - tail)) for key, values in draws.items()}
    return LatencyComparison(set_name, n, observed_base, observed_cand, intervals)


def _percentile_differences(base_ms: Sequence[float], candidate_ms: Sequence[float], resamples: int,
                            seed: int) -> dict[str, list[float]]:
    rng = random.Random(seed)
    n = len(base_ms)
    draws: dict[str, list[float]] = {f"p{p}": [] for p in LATENCY_PERCENTILES}
    population = range(n)
    for _ in range(resamples):
        drawn = rng.choices(population, k=n)
        left, right = [base_ms[i] for i in drawn], [candidate_ms[i] for i in drawn]
        for p in LATENCY_PERCENTILES:
            draws[f"p{p}"].append(percentile(right, p) - percentile(left, p))
    return draws


def query_latencies(numbers: SetNumbers) -> dict[str, float]:
    """qid -> latency in ms of the rows that carry one (a baseline's rows carry none)."""
    return {qid: row.latency_ms for qid, row in numbers.queries.items() if row.latency_ms is not None}
