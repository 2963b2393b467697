"""The one gating function: decide(results, inputs) -> the gates and flips every verdict is built from.

A run (`harness.api.run_gate`), `merge`, and the Python API all decide through `decide`, so
one backend on one set gets one verdict whichever path gated it. Gates (docs/design.md): query
count, one quality gate per gated metric (overall and per category), latency (absolute budget;
optional relative limit), hard contracts, judged coverage. Each result is PASS, WARN (reported,
never fails CI) or FAIL, with a message that says in words what moved, and the numbers it
decided on (`GateResult.metric`, `baseline`, `current`, `limit`, `unit`, `ci`).

Rounding rule (written once, here): a metric drop fails when
`baseline - current > limit + FLOAT_SLACK`; FLOAT_SLACK absorbs binary float noise in means so
that an exact 2-point drop (e.g. 0.70 -> 0.68) passes, as the limit says "more than 2
points". Latency fails when p95 > budget (equal passes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from harness.gating.budgets import Budgets
from harness.gating.inputs import GateInputs
from harness.gating.policy import GatePolicy
from harness.measured import UNJUDGED_COUNT, Aggregates, Latency, QueryNumbers, SetNumbers
from harness.records import GateResult, SetResult
from harness.scoring.detectability import Detectability, detectability
from harness.scoring.flips import Flip, find_flips
from harness.scoring.metrics import Measure, parse_metric, percentile
from harness.scoring.stats import RESAMPLES, PairedTest, RatioInterval, paired_percentile_ratio, paired_test

JUDGED_METRIC = "judged@10"
FLOAT_SLACK = 1e-9
MAX_FLIPS_LISTED = 10
# The units a GateResult's numbers are in: a [0, 1] mean whose `limit` is the largest drop allowed
# (shown in points); milliseconds whose `limit` is the largest value allowed; a count whose `limit`
# is the largest change allowed.
FRACTION, MILLISECONDS, COUNT = "fraction", "ms", "count"
# How the baseline's latency was measured, as every output says it beside the two figures.
PAIRED, ACROSS_RUNS = "paired in this run", "across runs and machines"
PAIRED_PERCENTILES = (50, 95)


def baseline_latency_measured(result: SetResult) -> str:
    """How a set's baseline latency was measured, in the words every output shows beside it."""
    return PAIRED if result.latency_paired else ACROSS_RUNS


@dataclass(frozen=True)
class Decision:
    """The gates of a run and, per gated set, its flips against the baseline (lost and gained) and the
    baseline's latency summary (every output shows it beside the run's): the baseline's backend's, timed in
    this run, for a set whose latency was paired (`SetResult.latency_paired`), else the recorded one."""

    gates: tuple[GateResult, ...]
    flips: Mapping[str, tuple[Flip, ...]]
    baseline_latency: Mapping[str, Latency] = field(default_factory=dict)


def decide(results: Sequence[SetResult], inputs: GateInputs, *, k: int | None = None, latency_gated: bool = True,
           known_contract_failures: bool = False) -> Decision:
    """Every gate for every set against `inputs.baseline` (no baseline: no gates, no flips).

    `k` is the run's --k (None: each set's own). `latency_gated` False for rankings that were not
    timed (a run file). With `known_contract_failures`, a contract the baseline already recorded as
    broken for the same query is reported as known instead of failing (only new breaks fail).
    """
    if inputs.baseline is None:
        return Decision((), {}, {})
    entries = inputs.entries(k)  # matched as load_inputs matched them before the run started
    gates = check(results, entries, inputs.budgets, latency_gated=latency_gated,
                  known_contract_failures=known_contract_failures, policy=inputs.policy)
    flips = {}
    for result in results:
        base_found = {qid: row.found for qid, row in entries[result.name].queries.items()}
        flips[result.name] = tuple(find_flips(result.name, base_found, {q.qid: q.found for q in result.queries},
                                              {q.qid: q.query for q in result.queries}))
    paired = {result.name: result.base_latency for result in results if result.base_latency is not None}
    return Decision(tuple(gates), flips, {name: paired.get(name, numbers.latency) for name, numbers in entries.items()})


def check(results: Sequence[SetResult], baseline_sets: Mapping[str, SetNumbers], budgets: Budgets = Budgets(), *,
          latency_gated: bool = True, known_contract_failures: bool = False,
          policy: GatePolicy = GatePolicy()) -> list[GateResult]:
    """The gates of `decide` on the baseline's numbers already matched to the sets (set name -> numbers)."""
    gates: list[GateResult] = []
    for result in results:
        base, now = baseline_sets[result.name], result.numbers()
        gates.extend(_count_gate(now, base))
        for metric in policy.metrics:
            gates.extend(_quality_gates(now, base, parse_metric(metric), policy))
        relative = paired_latency_gate(result, policy) if result.latency_paired else _relative_latency_gate(
            now, base, policy)
        latency = [_latency_gate(result, base, budgets.for_set(result.name)), relative] if latency_gated else []
        later = (*latency, _contract_gate(result, base, known_contract_failures), _judged_gate(result, base, policy))
        gates.extend(gate for gate in later if gate is not None)  # the relative latency and judged gates may not apply
    return gates


def flipped_queries(now: SetNumbers, base: SetNumbers, category: str | None = None) -> list[str]:
    """Queries that had a relevant document in the top 10 in the baseline and lost it now."""
    base_found = {row.qid: row.found for row in base.rows(category)}
    return [flip.qid for flip in find_flips(now.name, base_found, {q.qid: q.found for q in now.queries.values()})
            if flip.lost]


def gate_name(metric: str) -> str:
    """The gate a metric's drop is reported under: its family (`recall@10` -> `recall`)."""
    return metric.split("@", 1)[0]


def _count_gate(now: SetNumbers, base: SetNumbers) -> list[GateResult]:
    same = now.query_count == base.query_count
    message = (f"{now.name}: {now.query_count} queries, as the baseline" if same else
               f"{now.name}: query count {now.query_count} differs from the baseline's {base.query_count} "
               f"(re-baseline deliberately if queries were added or removed)")
    gates = [GateResult(now.name, "query-count", same, message, metric="queries", baseline=base.query_count,
                        current=now.query_count, limit=0, unit=COUNT)]
    for category in sorted(set(base.aggregates.category) - set(now.aggregates.category)):
        gates.append(GateResult(now.name, "query-count", False,
                                f"{now.name}/{category}: category in the baseline has no scored queries now",
                                category=category, metric="scored queries",
                                baseline=base.aggregates.category[category].n, current=0, limit=0, unit=COUNT))
    return gates


def _quality_gates(now: SetNumbers, base: SetNumbers, measure: Measure, policy: GatePolicy) -> list[GateResult]:
    """One gate per scope (overall, then each category of the baseline) for a gated metric.

    Evidence metrics (nullable per query) are gated by the same rules: their mean is over the
    queries judged on them (unjudgeable ones are null and left out), and for the
    `*_before_current` rates a rise is the loss. A scope with nothing on either side passes
    saying so; a value missing on one side only fails, naming the side.
    """
    metric = measure.name
    categories = sorted(base.aggregates.category) if policy.gate_categories else []
    if not measure.nullable:  # a category gone from the run is the count gate's
        categories = [c for c in categories if c in now.aggregates.category]
    gates = []
    for category in [None, *categories]:
        label = now.name + (f"/{category}" if category else " overall")
        (before, n_before), (current, n_now) = (_scope_mean(numbers.aggregates, measure, category)
                                                for numbers in (base, now))
        if before is None or current is None:
            empty = not n_before and not n_now  # nothing on either side passes; a side missing its value fails
            nothing = "no query judged on it" if measure.nullable else "no scored queries"
            missing = " and ".join(side for side, value in (("the baseline", before), ("this run", current))
                                   if value is None)
            message = (f"{label} {metric}: {nothing} in the baseline or now; nothing to compare" if empty else
                       f"{label} {metric}: missing from {missing}; the gate cannot pass without it "
                       f"(re-record the baseline with this gate policy: --update-baseline)")
            gates.append(GateResult(now.name, gate_name(metric), empty, message, category=category))
            continue
        gates.append(_quality_gate(now, base, measure, category, (before, current), (n_before, n_now), policy))
    return gates


def _quality_gate(now: SetNumbers, base: SetNumbers, measure: Measure, category: str | None,
                  means: tuple[float, float], counts: tuple[int, int], policy: GatePolicy) -> GateResult:
    """One scope's gate: pass, warn or fail on its loss (a drop; a rise for lower-is-better rates)."""
    metric = measure.name
    label = now.name + (f"/{category}" if category else " overall")
    before, current = means
    rows = now.rows(category)
    base_values, now_values = _paired_values(rows, base, measure)
    units = {q.qid: q.resampling_unit for q in rows}
    worse_is = -1.0 if measure.lower_is_better else 1.0  # loss = worse_is * (before - current)
    loss = worse_is * (before - current)
    detect = detectability({qid: worse_is * v for qid, v in now_values.items()}, units,
                           {qid: worse_is * v for qid, v in base_values.items()})
    flips = tuple(flipped_queries(now, base, category)) if not measure.nullable else ()
    gate = partial(GateResult, now.name, gate_name(metric), category=category, flipped=flips, metric=metric,
                   baseline=before, current=current, limit=policy.drop_limit, unit=FRACTION,
                   one_query=detect.one_query, detectable=detect.detectable, improved=_improved(-loss, detect))
    judged = f"; judged on {counts[1]} queries, {counts[0]} in the baseline" if measure.nullable else ""
    if loss <= policy.drop_limit + FLOAT_SLACK:
        change = f"; {(current - before) * 100:+.2f} points" if abs(current - before) > FLOAT_SLACK else ""
        message = f"{label} {metric} {current:.4f} (baseline {before:.4f}{change}{judged}){_below(detect, loss)}"
        ratchet = policy.ratchet_improvement_points
        ratcheted = category is None and ratchet is not None and -loss * 100 > ratchet + FLOAT_SLACK
        if ratcheted:
            message += (f"; improved by more than the ratchet's {ratchet:g} points: re-baseline "
                        f"(--update-baseline) so the baseline follows")
        return gate(not ratcheted, message)
    # per-query values on both sides (a baseline from before evidence rows were recorded has none): the
    # paired test and the category rules need them; without them the loss fails as it stands
    test = paired_test(base_values, now_values, units, resamples=RESAMPLES) if now_values else None
    listed = ", ".join(flips[:MAX_FLIPS_LISTED]) + (f" (+{len(flips) - MAX_FLIPS_LISTED} more)"
                                                     if len(flips) > MAX_FLIPS_LISTED else "")
    direction = "rose" if measure.lower_is_better else "dropped"
    message = (f"{label} {metric} {direction} {abs(current - before) * 100:.2f} points: baseline {before:.4f}, now "
               f"{current:.4f} (limit {policy.drop_limit_points:.1f}; "
               f"{_interval(test) if test else 'no per-query values in the baseline: re-baseline'}{judged}); "
               f"{movement(rows, base, metric) if not judged else 'unjudgeable queries left out'}"
               + (f"; flipped: {listed or 'none'}" if not judged else "") + _below(detect, loss))
    why_warn = _why_only_warn(category, counts[1], loss, base_values, now_values, worse_is, test, policy)
    if why_warn:
        message += f"; warning only: {why_warn}"
    return gate(bool(why_warn), message, warning=bool(why_warn), ci=(test.ci_low, test.ci_high) if test else None,
                p_value=test.p_value if test else None)


def _why_only_warn(category: str | None, n: int, loss: float, base_values: Mapping[str, float],
                   now_values: Mapping[str, float], worse_is: float, test: PairedTest | None,
                   policy: GatePolicy) -> str:
    """Why a loss beyond the limit warns instead of failing ("" when it fails): the policy's rules."""
    if category is not None and n < policy.min_category_queries:
        return (f"the category has {n} scored queries, fewer than the policy's min_queries "
                f"{policy.min_category_queries}")
    if category is not None and policy.discount_queries:
        losses = sorted((worse_is * (base_values[qid] - now_values[qid]) for qid in now_values), reverse=True)
        if losses:
            kept = sum(losses[policy.discount_queries:]) / len(losses)
            if kept <= policy.drop_limit + FLOAT_SLACK:
                worst = "query" if policy.discount_queries == 1 else f"{policy.discount_queries} queries"
                return (f"without its worst {worst} the category's loss is {kept * 100:.2f} points, within the limit "
                        f"(policy: categories.discount_queries {policy.discount_queries}; one query's noise is no "
                        f"regression)")
    if policy.require_ci_below_zero and test is not None and not (
            test.ci_high < 0 if worse_is > 0 else test.ci_low > 0):
        return "the paired 95% CI does not lie wholly on the side of a loss (policy: require_ci_below_zero)"
    return ""


def _improved(gain: float, detect: Detectability) -> bool:
    """A gain says IMPROVED when it is at least what one query is worth: a smaller move of the mean is one
    query's partial change, not an improvement of the set."""
    return gain > FLOAT_SLACK and (detect.one_query is None or gain >= detect.one_query - FLOAT_SLACK)


def _below(detect: Detectability, change: float) -> str:
    """The note a change below what the scope can detect gets (none when it is detectable or nothing moved)."""
    if abs(change) <= FLOAT_SLACK or detect.detectable is None or detect.one_query is None or detect.covers(change):
        return ""
    return (f"; {abs(change) * 100:.2f} points is below what this scope can detect ({detect.detectable * 100:.1f} "
            f"points at alpha 0.05, power 0.8; one query is worth {detect.one_query * 100:.1f})")


def _scope_mean(aggregates: Aggregates, measure: Measure, category: str | None) -> tuple[float | None, int]:
    """(mean or None, queries it is over) of a measure in one scope of a set's aggregates."""
    scope = aggregates.scope(category)
    if scope is None:
        return None, 0
    return scope.mean(measure.name, nullable=measure.nullable)


def _paired_values(rows: Sequence[QueryNumbers], base: SetNumbers,
                   measure: Measure) -> tuple[dict[str, float], dict[str, float]]:
    """(baseline, current) per-query values of a measure over the scope's queries on both sides (evidence
    measures: the queries judged on it on both sides)."""
    before_values, current_values = {}, {}
    for row in rows:
        was = base.queries.get(row.qid)
        before = was.value(measure.name, nullable=measure.nullable) if was is not None else None
        now = row.value(measure.name, nullable=measure.nullable)
        if before is not None and now is not None:
            before_values[row.qid], current_values[row.qid] = float(before), float(now)
    return before_values, current_values


def _interval(test: PairedTest) -> str:
    return f"change 95% CI [{test.ci_low * 100:+.1f}, {test.ci_high * 100:+.1f}] points, p={test.p_value:.3f}"


def movement(rows: Sequence[QueryNumbers], base: SetNumbers, metric: str) -> str:
    """In words: how many queries got better, worse or stayed, and the worst loss.

    "1 of 1 query lost its relevant document" when a single query moved it all; otherwise
    "7 queries better, 12 worse, 5 unchanged; worst: dedupe-012 lost 3 of 4 relevant documents".
    """
    better = worse = same = 0
    worst: tuple[float, QueryNumbers, QueryNumbers] | None = None
    for row in rows:
        before = base.queries.get(row.qid)
        if before is None or metric not in before.metrics or metric not in row.metrics:
            continue
        change = row.metrics[metric] - before.metrics[metric]
        if change > FLOAT_SLACK:
            better += 1
        elif change < -FLOAT_SLACK:
            worse += 1
            if worst is None or change < worst[0]:
                worst = (change, row, before)
        else:
            same += 1
    total = better + worse + same
    if worst is None:
        return f"{total} queries compared, none worse"
    _, row, before = worst
    had = list(before.found)
    lost = [doc_id for doc_id in had if doc_id not in row.found]
    if had:
        what = f"lost {len(lost)} of {len(had)} relevant document{'s' if len(had) != 1 else ''} it found"
    else:
        what = f"{metric} {before.metrics[metric]:.2f} -> {row.metrics[metric]:.2f}"
    if total == 1:
        if len(had) == 1 and len(lost) == 1:
            return f"1 of 1 query lost its relevant document ({row.qid})"
        return f"1 of 1 query got worse: {row.qid} {what}"
    return f"{better} queries better, {worse} worse, {same} unchanged; worst: {row.qid} {what}"


def _latency_gate(result: SetResult, base: SetNumbers, budget_ms: float) -> GateResult:
    p95, before = result.latency.p95, base.latency.p95
    gate = partial(GateResult, result.name, "latency", metric="p95", baseline=before, current=p95, limit=budget_ms,
                   unit=MILLISECONDS)
    if p95 is None:
        if not result.queries:
            return gate(True, f"{result.name}: no queries asked, no latency to gate")
        return gate(False, f"{result.name}: {len(result.queries)} queries but no p95 latency; the latency gate "
                           f"cannot pass")
    passed = p95 <= budget_ms
    verdict = "within" if passed else "exceeds"
    if result.base_latency is not None:  # the baseline's backend timed beside it: its p95 is the one to show
        before = result.base_latency.p95
        gate = partial(gate, baseline=before)
    how = PAIRED if result.latency_paired else ACROSS_RUNS
    was = f"; baseline {before:.1f} ms, {how}" if before is not None else ""
    return gate(passed, f"{result.name} p95 latency {p95:.1f} ms {verdict} the budget of {budget_ms:.0f} ms{was}")


def _relative_latency_gate(now: SetNumbers, base: SetNumbers, policy: GatePolicy) -> GateResult | None:
    """p95 against the baseline's: beyond the relative limit AND the absolute floor it warns (policy: fails);
    no gate when either side has fewer than the policy's min_samples latencies.

    Both conditions, so that machine noise on a sub-millisecond backend (0.3 -> 0.9 ms) stays quiet
    while a 10x slowdown of anything slower than a fraction of a millisecond shows. The latencies of
    two runs are two samples of a noisy machine: the gate compares them, it does not test them.
    """
    limit = policy.latency_relative_limit_percent
    if limit is None or base.latency.p95 is None:
        return None
    if min(base.latency.n, now.latency.n) < policy.latency_min_samples or now.latency.p95 is None:
        return None  # too few latencies to compare a p95 (the latency gate still shows both)
    before, after = base.latency.p95, now.latency.p95
    allowed = max(before * (1 + limit / 100), before + policy.latency_min_increase_ms)
    grew = after > allowed + FLOAT_SLACK
    change = f"{(after / before - 1) * 100:+.0f} %" if before else "from 0"
    message = (f"{now.name} p95 latency {after:.2f} ms, baseline {before:.2f} ms ({change}, {after - before:+.2f} ms;"
               f" allowed: +{limit:g} % and +{policy.latency_min_increase_ms:g} ms); baseline measured {ACROSS_RUNS}")
    if grew and not policy.latency_relative_fails:
        message += "; warning only (policy: latency.relative_fails)"
    return GateResult(now.name, "latency-relative", not (grew and policy.latency_relative_fails), message,
                      warning=grew and not policy.latency_relative_fails, metric="p95", baseline=before,
                      current=after, limit=allowed, unit=MILLISECONDS)


def paired_latency_gate(result: SetResult, policy: GatePolicy) -> GateResult | None:
    """The run's latency against the baseline's backend timed beside it, query by query (paired latency).

    For p50 and p95: the ratio percentile(run) / percentile(baseline) over the queries both answered, with
    its 95% bootstrap interval over whole pairs (harness.scoring.stats.paired_percentile_ratio). A ratio
    whose interval lies wholly above `latency.paired_warn_ratio` warns, above `paired_fails_ratio` fails;
    the gate reports the percentile whose interval lies highest, in ms (its `ci`: the run's value the
    ratio's interval implies). No gate with fewer than the policy's min_samples pairs.
    """
    pairs = [(q.base_latency_seconds * 1000, q.latency_seconds * 1000) for q in result.queries
             if q.base_latency_seconds is not None and q.base_latency_seconds > 0 and q.latency_seconds > 0]
    if len(pairs) < policy.latency_min_samples:
        return None
    base_ms, run_ms = [b for b, _ in pairs], [c for _, c in pairs]
    ratios = [paired_percentile_ratio(base_ms, run_ms, percentile) for percentile in PAIRED_PERCENTILES]
    decisive = max(ratios, key=lambda r: r.ci_low)
    fails_at, warns_at = policy.latency_paired_fails_ratio, policy.latency_paired_warn_ratio
    failed = fails_at is not None and decisive.ci_low > fails_at + FLOAT_SLACK
    warned = not failed and decisive.ci_low > warns_at + FLOAT_SLACK
    before = percentile(base_ms, decisive.percentile)
    figures = "; ".join(_ratio_text(r) for r in ratios)
    limits = f"warns above {warns_at:g}x" + (f", fails above {fails_at:g}x" if fails_at is not None else "")
    message = (f"{result.name} latency against the baseline's backend, {PAIRED} over {len(pairs)} queries: "
               f"{figures} ({limits}, when the whole 95% CI lies above)")
    if warned:
        message += "; warning only (policy: latency.paired_fails_ratio)"
    return GateResult(result.name, "latency-paired", not failed, message, warning=warned,
                      metric=f"p{decisive.percentile:g}", baseline=before,
                      current=percentile(run_ms, decisive.percentile), limit=before * warns_at,
                      unit=MILLISECONDS, ci=(before * decisive.ci_low, before * decisive.ci_high))


def _ratio_text(ratio: RatioInterval) -> str:
    return f"p{ratio.percentile:g} {ratio.ratio:.2f}x (95% CI {ratio.ci_low:.2f}-{ratio.ci_high:.2f})"


def _judged_gate(result: SetResult, base: SetNumbers, policy: GatePolicy) -> GateResult | None:
    """WARN when the backend returns documents the set never judged (judged@10 fell), else PASS."""
    before = base.aggregates.overall.means.get(JUDGED_METRIC)
    now = result.aggregates.overall.means.get(JUDGED_METRIC)
    if before is None or now is None:
        return None
    drop = before - now
    fell = drop * 100 > policy.judged_warn_drop_points + FLOAT_SLACK
    message = (f"{result.name} judged@10 fell {drop * 100:.1f} points: baseline {before:.3f}, now {now:.3f}; "
               f"{_why_judged_fell(result, base)}" if fell else f"{result.name} judged@10 {now:.3f} (baseline {before:.3f})")
    return GateResult(result.name, "judged", True, message, warning=fell, metric=JUDGED_METRIC, baseline=before,
                      current=now, limit=policy.judged_warn_drop_points / 100, unit=FRACTION)


def _why_judged_fell(result: SetResult, base: SetNumbers) -> str:
    """The cause of a judged@10 fall in words: documents the set never judged, or fewer documents returned.

    judged@10 is judged hits / 10: a backend returning nothing (or fewer than 10) lowers it too, and
    judging more documents cannot help that.
    """
    scored = [q for q in result.queries if q.scored]
    unjudged = sum(int(q.metrics.get(UNJUDGED_COUNT, 0)) for q in scored)
    returned = sum(min(len(q.ids), 10) for q in scored)
    empty = sum(1 for q in scored if not q.ids)
    causes = []
    if unjudged:
        causes.append(f"{unjudged} unjudged documents in the top 10s: the backend returns documents the set never "
                      f"judged (judge them and bump the set's revision)")
    if empty or returned < 10 * len(scored):
        causes.append(f"fewer documents returned: {returned} in the top 10s of {len(scored)} scored queries"
                      + (f", {empty} answered with nothing" if empty else "") + " (not a judging gap)")
    return "; ".join(causes) or f"the judged share of {len(base.rows())} baseline queries' answers moved"


def _contract_gate(result: SetResult, base: SetNumbers, accept_known: bool) -> GateResult:
    """Every broken hard contract fails, except, with `accept_known`, those the baseline records as broken."""
    broken = [(q.qid, c) for q in result.queries if q.outcome not in ("xfail", "xpass")
              for c in q.contracts if not c.passed]
    recorded = {(qid, key) for qid, row in base.queries.items() for key in row.broken}
    known = [(qid, c) for qid, c in broken if (qid, c.key) in recorded]
    gate = partial(GateResult, result.name, "contract", metric="broken contracts", baseline=len(recorded),
                   current=len(broken), limit=0, unit=COUNT)
    if accept_known:
        broken = [(qid, c) for qid, c in broken if (qid, c.key) not in recorded]
        if known and not broken:
            qids = sorted({qid for qid, _ in known})
            return gate(True, f"{result.name}: no new contract breaks; {len(known)} known from the baseline "
                              f"({', '.join(qids[:MAX_FLIPS_LISTED])})")
    if not broken:
        checked = sum(len(q.contracts) for q in result.queries)
        return gate(True, f"{result.name}: {checked} contracts hold" if checked
                    else f"{result.name}: no hard contracts in this set")
    # A run gating an embedder without the option fails on breaks its baseline already tracks: say so.
    which = "it" if len(broken) == 1 else f"all {len(broken)}"
    hint = (f"; the baseline records {which} as broken (--known-contract-failures fails only new breaks)"
            if not accept_known and len(known) == len(broken) else "")
    first_qid, first = broken[0]
    qids = sorted({qid for qid, _ in broken})
    return gate(False, f"{result.name}: {len(broken)} hard contract(s) broken in {', '.join(qids[:MAX_FLIPS_LISTED])}; "
                       f"first: {first_qid} {first.name}: {first.detail}{hint}", flipped=tuple(qids))
