"""The one gating function: decide(results, inputs) -> the gates and flips every verdict is built from.

A run (`harness.api.run_gate`), `merge`, and the Python API all decide through `decide`, so
one backend on one set gets one verdict whichever path gated it. Gates (docs/design.md): query
count, one quality gate per gated metric (overall and per category), latency (absolute budget;
optional relative limit), the adapter's resources (start-up, memory, index size: budgets, and against the
baseline), hard contracts, judged coverage. Each result is PASS, WARN (reported,
never fails CI) or FAIL, with a message that says in words what moved, and the numbers it
decided on (`GateResult.metric`, `baseline`, `current`, `limit`, `unit`, `ci`).

Rounding rule (written once, here): a metric drop fails when
`baseline - current > limit + FLOAT_SLACK`; FLOAT_SLACK absorbs binary float noise in means so
that an exact 2-point drop (e.g. 0.70 -> 0.68) passes, as the limit says "more than 2
points". Latency fails when p95 > budget (equal passes).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from harness.gating.budgets import Budgets
from harness.gating.calibration import EXPECTED_TO_FAIL, SetCalibration, broken_contracts
from harness.gating.inputs import GateInputs
from harness.gating.policy import CATEGORY_ALPHA, GatePolicy
from harness.measured import (RESOURCE_FIGURES, UNJUDGED_COUNT, Latency, QueryNumbers, Resources,
                              SetNumbers, resource_text)
from harness.records import GateResult, SetResult
from harness.scoring.detectability import Detectability, detectability, queries_needed
from harness.scoring.evaluate import FLIP_DEPTH
from harness.scoring.flips import Flip, find_flips
from harness.scoring.metrics import Measure, parse_metric, percentile
from harness.scoring.stats import RESAMPLES, PairedTest, holm, mcnemar_exact, paired_percentile_ratio, paired_test
from harness.scoring.ties import score_runs
from harness.text import plural, shortlist

JUDGED_METRIC = "judged@10"
FLOAT_SLACK = 1e-9
MAX_FLIPS_LISTED = 10
_listed = partial(shortlist, shown=MAX_FLIPS_LISTED, counted=True)  # the first ten joined, then `(+4 more)`
# The units a GateResult's numbers are in: a [0, 1] mean whose `limit` is the largest drop allowed
# (shown in points); milliseconds whose `limit` is the largest value allowed; a count whose `limit`
# is the largest change allowed.
FRACTION, MILLISECONDS, COUNT = "fraction", "ms", "count"
# A shipped set and its larger companion, which can tell a drop of a few points from noise (docs/sets.md).
COMPANION_SETS = {"code": "code-agent", "dedupe": "dedupe-hard", "memory": "memory-hard", "wiki": "wiki-hard"}
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
    baseline_resources: Mapping[str, Resources] = field(default_factory=dict)  # the sets whose baseline measured them


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
                  known_contract_failures=known_contract_failures, policy=inputs.policy,
                  graded_contracts={s.name for s in inputs.query_sets if s.contracts == "graded"},
                  calibration=inputs.baseline.calibration)
    flips = {r.name: tuple(find_flips(r.name, {qid: row.found for qid, row in entries[r.name].queries.items()},
                                      {q.qid: q.found for q in r.queries}, {q.qid: q.query for q in r.queries}))
             for r in results}
    paired = {result.name: result.base_latency for result in results if result.base_latency is not None}
    return Decision(tuple(gates), flips, {name: paired.get(name, numbers.latency) for name, numbers in entries.items()},
                    {name: numbers.resources for name, numbers in entries.items() if numbers.resources.measured})


def check(results: Sequence[SetResult], baseline_sets: Mapping[str, SetNumbers], budgets: Budgets = Budgets(), *,
          latency_gated: bool = True, known_contract_failures: bool = False,
          policy: GatePolicy = GatePolicy(), graded_contracts: Collection[str] = (),
          calibration: Mapping[str, SetCalibration] | None = None) -> list[GateResult]:
    """The gates of `decide` on the baseline's numbers already matched to the sets (set name -> numbers);
    the sets named in `graded_contracts` declare their contracts graded (set.json `contracts`); `calibration`
    (set name -> the baseline's calibrated noise) widens each quality gate's limit by its allowance."""
    gates: list[GateResult] = []
    family: list[int] = []  # positions of the run's category quality gates: the holm rule's family
    for result in results:
        base, now = baseline_sets[result.name], result.numbers()
        gates.extend(_count_gate(now, base))
        in_ties = lost_within_ties(result, base)
        calibrated = (calibration or {}).get(result.name)
        for metric in policy.metrics:
            for gate in _quality_gates(now, base, parse_metric(metric), policy, in_ties, calibrated):
                if gate.category is not None and gate.metric is not None:
                    family.append(len(gates))
                gates.append(gate)
        relative = paired_latency_gate(result, policy) if result.latency_paired else _relative_latency_gate(
            now, base, policy, calibrated.allowance(calibrated.latency.get("p95")) if calibrated is not None else 0.0)
        latency = [_latency_gate(result, base, budgets.for_set(result.name)), relative] if latency_gated else []
        noise = calibrated.resource_allowances() if calibrated is not None else None
        latency += resource_gates(now, base, budgets, policy, noise) if latency_gated else []  # a run file ran nothing
        contract = (_graded_contract_gate(result, base) if result.name in graded_contracts
                    else _contract_gate(result, base, known_contract_failures, calibrated))
        later = (*latency, contract, _judged_gate(result, base, policy))
        gates.extend(gate for gate in later if gate is not None)  # the relative latency and judged gates may not apply
    return _holm_categories(gates, family, policy)


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
    message = (f"{now.name}: {plural(now.query_count, 'query', 'queries')}, as the baseline" if same else
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


def _quality_gates(now: SetNumbers, base: SetNumbers, measure: Measure, policy: GatePolicy,
                   in_ties: Mapping[str, str], calibration: SetCalibration | None) -> list[GateResult]:
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
        scopes = [numbers.aggregates.scope(category) for numbers in (base, now)]
        (before, n_before), (current, n_now) = (
            (None, 0) if scope is None else scope.mean(metric, nullable=measure.nullable) for scope in scopes)
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
        gates.append(_quality_gate(now, base, measure, category, label, (before, current), (n_before, n_now), policy,
                                   in_ties, calibration))
    return gates


def _quality_gate(now: SetNumbers, base: SetNumbers, measure: Measure, category: str | None, label: str,
                  means: tuple[float, float], counts: tuple[int, int], policy: GatePolicy,
                  in_ties: Mapping[str, str], calibration: SetCalibration | None) -> GateResult:
    """One scope's gate: pass, warn or fail on its loss (a drop; a rise for lower-is-better rates).

    A calibrated scope's limit is the policy's plus the calibrated noise's allowance (harness/gating/calibration.py),
    and its message says so; a figure calibrated to zero noise (or not calibrated) keeps the policy's limit and
    message exactly.
    """
    metric = measure.name
    before, current = means
    noise = calibration.noise(metric, category) if calibration is not None else None
    allowance = calibration.allowance(noise) if calibration is not None else 0.0
    limit = policy.drop_limit + allowance
    calibrated = f"; {calibration.note(noise)}" if calibration is not None and noise is not None and allowance else ""
    rows = now.rows(category)
    base_values, now_values = _paired_values(rows, base, measure)
    units = {q.qid: q.resampling_unit for q in rows}
    worse_is = -1.0 if measure.lower_is_better else 1.0  # loss = worse_is * (before - current)
    loss = worse_is * (before - current)
    detect = detectability({qid: worse_is * v for qid, v in now_values.items()}, units,
                           {qid: worse_is * v for qid, v in base_values.items()})
    flips = tuple(flipped_queries(now, base, category)) if not measure.nullable else ()
    gate = partial(GateResult, now.name, gate_name(metric), category=category, flipped=flips, metric=metric,
                   baseline=before, current=current, limit=limit, unit=FRACTION,
                   one_query=detect.one_query, detectable=detect.detectable, improved=_improved(-loss, detect))
    judged = f"; judged on {plural(counts[1], 'query', 'queries')}, {counts[0]} in the baseline" if measure.nullable else ""
    if loss <= limit + FLOAT_SLACK:
        change = f"; {(current - before) * 100:+.2f} points" if abs(current - before) > FLOAT_SLACK else ""
        message = f"{label} {metric} {current:.4f} (baseline {before:.4f}{change}{judged}{calibrated}){_below(detect, loss)}"
        ratchet = policy.ratchet_improvement_points
        ratcheted = category is None and ratchet is not None and -loss * 100 > ratchet + FLOAT_SLACK
        if ratcheted:
            message += (f"; improved by more than the ratchet's {ratchet:g} points: re-baseline "
                        f"(--update-baseline) so the baseline follows")
        return gate(not ratcheted, message)
    # per-query values on both sides (a baseline from before evidence rows were recorded has none): the
    # paired test and the category rules need them; without them the loss fails as it stands
    test = paired_test(base_values, now_values, units, resamples=RESAMPLES) if now_values else None
    listed = _listed(flips)
    direction = "rose" if measure.lower_is_better else "dropped"
    interval = (f"change 95% CI [{test.ci_low * 100:+.1f}, {test.ci_high * 100:+.1f}] points, p={test.p_value:.3f}"
                if test else "no per-query values in the baseline: re-baseline")
    message = (f"{label} {metric} {direction} {abs(current - before) * 100:.2f} points: baseline {before:.4f}, now "
               f"{current:.4f} (limit {policy.drop_limit_points:.1f}{calibrated}; {interval}{judged}); "
               f"{movement(rows, base, metric) if not judged else 'unjudgeable queries left out'}"
               + (f"; flipped: {listed or 'none'}" if not judged else "") + _tie_words(flips, in_ties, measure))
    why_warn = _why_only_warn(category, counts[1], loss, base_values, now_values, worse_is, test, policy)
    if why_warn:
        message += _below(detect, loss) + f"; warning only: {why_warn}"
    elif category is None or policy.category_rule != "holm" or test is None:
        message += _noise(now.name, category, loss, detect, test)
    # else a category the holm rule decides with the run's other category tests (_holm_categories)
    return gate(bool(why_warn), message, warning=bool(why_warn), ci=(test.ci_low, test.ci_high) if test else None,
                p_value=test.p_value if test else None)


def lost_within_ties(result: SetResult, base: SetNumbers) -> dict[str, str]:
    """Per query whose every lost relevant document (a flip) sits in the run of equal scores holding the 10th
    position: the tie in words. Returned below the top 10 inside that run, it certainly only moved within the
    tie (`fact-3 moved within a tie of 11 equal scores at ranks 1-11`); not returned, with the list ending
    inside that run, it may have (`fact-3 not returned; the list ends inside a tie of 4 equal scores at ranks
    7-10, which may go on past it`).

    Such a loss is the adapter's order among equal scores, not its scores (docs/adapters.md,
    "Scores and ties"). Only the current answer's scores are known: the baseline keeps no ids.
    """
    notes = {}
    for row in result.queries:
        was = base.queries.get(row.qid)
        if was is None or row.scores is None or len(row.scores) != len(row.ids) or len(row.ids) < FLIP_DEPTH:
            continue
        lost = [doc_id for doc_id in was.found if doc_id not in row.found]
        if not lost:
            continue
        runs = score_runs(row.scores, len(row.ids))
        first, last = next(run for run in runs if run[0] <= FLIP_DEPTH <= run[1])  # the run holding the 10th
        if last == first:
            continue
        positions = {doc_id: position for position, doc_id in enumerate(row.ids, start=1)}
        tie = f"a tie of {last - first + 1} equal scores at ranks {first}-{last}"
        if all(first <= positions.get(doc_id, 0) <= last for doc_id in lost):
            notes[row.qid] = f"{', '.join(lost)} moved within {tie}"
        elif last == len(row.ids) and not any(doc_id in positions for doc_id in lost):
            notes[row.qid] = f"{', '.join(lost)} not returned; the list ends inside {tie}, which may go on past it"
    return notes


def _tie_words(flips: Sequence[str], in_ties: Mapping[str, str], measure: Measure) -> str:
    """"; ... tied positions: ..." for the flipped queries whose loss lies (or may lie) in a tie ("" when none)."""
    tied = [f"{qid}: {in_ties[qid]}" for qid in flips if qid in in_ties]
    if not tied:
        return ""
    certain = all("moved within" in in_ties[qid] for qid in flips if qid in in_ties)
    which = (("the loss is" if certain else "the loss may be") if len(tied) == len(flips)
             else f"{len(tied)} of {len(flips)} flips")
    hint = "" if measure.tie_aware else "; the gate policy's tie_aware gates the expected value over tie orders"
    where = "confined to tied positions" if len(tied) == len(flips) else "in tied positions"
    return (f"; {which} {where}: {_listed(tied, separator='; ')} (the order among equal scores is the adapter's "
            f"choice{hint})")


def _why_only_warn(category: str | None, n: int, loss: float, base_values: Mapping[str, float],
                   now_values: Mapping[str, float], worse_is: float, test: PairedTest | None,
                   policy: GatePolicy) -> str:
    """Why a loss beyond the limit warns instead of failing ("" when it fails): the policy's rules."""
    if category is not None and n < policy.min_category_queries:
        return (f"the category has {n} scored queries, fewer than the policy's min_queries "
                f"{policy.min_category_queries}")
    if category is not None and policy.category_rule == "discount" and policy.discount_queries:
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


def _holm_categories(gates: list[GateResult], family: Sequence[int], policy: GatePolicy) -> list[GateResult]:
    """The holm rule (policy.categories.rule): a category's loss beyond the limit fails only when its paired
    p-value stays below CATEGORY_ALPHA after Holm's adjustment over every category gate of the run (`family`,
    positions in `gates`), else it warns; a category within the limit is in the family with p = 1."""
    raw = {i: p for i in family if not gates[i].passed and (p := gates[i].p_value) is not None}
    if policy.category_rule != "holm" or not raw:
        return gates
    adjusted = dict(zip(family, holm([raw.get(i, 1.0) for i in family])))
    tests = f"the run's {plural(len(family), 'category test')}"
    decided = list(gates)
    for i in raw:
        gate, p = gates[i], adjusted[i]
        if p < CATEGORY_ALPHA:
            decided[i] = replace(gate, message=f"{gate.message}; significant with {tests} held to a family-wise "
                                               f"error of {CATEGORY_ALPHA:g} (Holm-adjusted p={p:.3f})")
        else:
            decided[i] = replace(gate, passed=True, warning=True, message=(
                f"{gate.message}; warning only: this category cannot tell the drop from noise with {tests} held "
                f"to a family-wise error of {CATEGORY_ALPHA:g} (Holm-adjusted p={p:.3f}; policy: categories.rule "
                f"holm)"))
    return decided


def _noise(set_name: str, category: str | None, loss: float, detect: Detectability, test: PairedTest | None) -> str:
    """What a failing line adds when its scope cannot tell the loss from noise (paired p at or above
    CATEGORY_ALPHA): that the rule fails it anyway, and how to tell (the companion set, or how many queries)."""
    if test is None or test.p_value < CATEGORY_ALPHA:
        return ""
    scope = "set" if category is None else "category"
    rule = ("the founding rule fails any set-level drop beyond the limit" if category is None else
            "the policy's categories.rule fails it")
    sizes = (f"; it detects about {detect.detectable * 100:.1f} points at power 0.8" if detect.detectable is not None
             else f"; it can detect no change: {detect.unreachable.removeprefix('none: ')}" if detect.unreachable
             else "")
    ways = []
    if set_name in COMPANION_SETS:
        ways.append(f"on {COMPANION_SETS[set_name]}, the companion set that can tell")
    if detect.sigma_d and loss > FLOAT_SLACK:
        ways.append(f"on about {queries_needed(detect.sigma_d, loss)} queries (what a {loss * 100:.2f}-point drop "
                    f"needs at power 0.8)")
    confirm = f"; confirm it {' or '.join(ways)}" if ways else ""
    return (f"; this {scope} cannot tell this drop from noise (p={test.p_value:.3f}{sizes}): {rule}, "
            f"so treat it as unconfirmed{confirm}")


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


def movement(rows: Sequence[QueryNumbers], base: SetNumbers, metric: str) -> str:
    """In words: how many queries got better, worse or stayed, and the worst loss.

    "1 of 1 query lost its relevant document" when a single query moved it all; otherwise
    "7 queries better, 12 worse, 5 unchanged; worst: dedupe-012 lost 3 of 4 relevant documents".
    """
    moves = [(row.metrics[metric] - before.metrics[metric], row, before) for row in rows
             if (before := base.queries.get(row.qid)) is not None
             and metric in before.metrics and metric in row.metrics]
    better = sum(1 for change, _, _ in moves if change > FLOAT_SLACK)
    worse = sum(1 for change, _, _ in moves if change < -FLOAT_SLACK)
    if not worse:
        return f"{plural(len(moves), 'query', 'queries')} compared, none worse"
    _, row, before = min(moves, key=lambda move: move[0])  # the first of the largest losses
    had = list(before.found)
    lost = [doc_id for doc_id in had if doc_id not in row.found]
    if had:
        what = f"lost {len(lost)} of {len(had)} relevant document{'s' if len(had) != 1 else ''} it found"
    else:
        what = f"{metric} {before.metrics[metric]:.2f} -> {row.metrics[metric]:.2f}"
    if len(moves) == 1:
        if len(had) == 1 and len(lost) == 1:
            return f"1 of 1 query lost its relevant document ({row.qid})"
        return f"1 of 1 query got worse: {row.qid} {what}"
    return (f"{plural(better, 'query', 'queries')} better, {worse} worse, {len(moves) - better - worse} unchanged; "
            f"worst: {row.qid} {what}")


def _latency_gate(result: SetResult, base: SetNumbers, budget_ms: float) -> GateResult:
    p95, before = result.latency.p95, base.latency.p95
    gate = partial(GateResult, result.name, "latency", metric="p95", baseline=before, current=p95, limit=budget_ms,
                   unit=MILLISECONDS)
    if p95 is None:
        if not result.queries:
            return gate(True, f"{result.name}: no queries asked, no latency to gate")
        return gate(False, f"{result.name}: {plural(len(result.queries), 'query', 'queries')} but no p95 latency; the latency gate "
                           f"cannot pass")
    passed = p95 <= budget_ms
    if result.base_latency is not None:  # the baseline's backend timed beside it: its p95 is the one to show
        before = result.base_latency.p95
    was = f"; baseline {before:.1f} ms, {baseline_latency_measured(result)}" if before is not None else ""
    return gate(passed, f"{result.name} p95 latency {p95:.1f} ms {'within' if passed else 'exceeds'} the budget of "
                        f"{budget_ms:.0f} ms{was}", baseline=before)


def _relative_latency_gate(now: SetNumbers, base: SetNumbers, policy: GatePolicy,
                           allowance: float = 0.0) -> GateResult | None:
    """p95 against the baseline's: beyond the relative limit AND the absolute floor (plus `allowance` ms, the
    calibrated run-to-run noise of the p95) it warns (policy: fails); no gate when either side has fewer than
    the policy's min_samples latencies.

    Both conditions, so that machine noise on a sub-millisecond backend (0.3 -> 0.9 ms) stays quiet
    while a 10x slowdown of anything slower than a fraction of a millisecond shows. The latencies of
    two runs are two samples of a noisy machine: the gate compares them, it does not test them.
    """
    limit, before, after = policy.latency_relative_limit_percent, base.latency.p95, now.latency.p95
    if limit is None or before is None or after is None or \
            min(base.latency.n, now.latency.n) < policy.latency_min_samples:
        return None  # off, or too few latencies to compare a p95 (the latency gate still shows both)
    allowed, grew, change = _growth(before, after, limit, policy.latency_min_increase_ms, allowance)
    noise = f", +{allowance:.2f} ms calibrated noise" if allowance else ""
    message = (f"{now.name} p95 latency {after:.2f} ms, baseline {before:.2f} ms ({change}, {after - before:+.2f} ms;"
               f" allowed: +{limit:g} % and +{policy.latency_min_increase_ms:g} ms{noise}); baseline measured "
               f"{ACROSS_RUNS}")
    if grew and not policy.latency_relative_fails:
        message += "; warning only (policy: latency.relative_fails)"
    return GateResult(now.name, "latency-relative", not (grew and policy.latency_relative_fails), message,
                      warning=grew and not policy.latency_relative_fails, metric="p95", baseline=before,
                      current=after, limit=allowed, unit=MILLISECONDS)


def _growth(before: float, after: float, percent: float, floor: float, allowance: float) -> tuple[float, bool, str]:
    """A figure against the baseline's (p95 latency, a resource): the largest value allowed (grown by more than
    `percent` % AND `floor`, plus a calibrated `allowance`), whether `after` is beyond it, and the change in words
    (`+26 %`; `from 0`)."""
    allowed = max(before * (1 + percent / 100), before + floor) + allowance
    return allowed, after > allowed + FLOAT_SLACK, f"{(after / before - 1) * 100:+.0f} %" if before else "from 0"


def _breaks_within(count: int, base: SetNumbers, calibration: SetCalibration | None) -> str | None:
    """The note when `count` broken contracts is within the calibrated noise of the baseline's count (None when the
    count was not calibrated, did not vary between runs, or grew beyond baseline + z x sqrt2 x sd)."""
    noise = calibration.breaks if calibration is not None else None
    if calibration is None or noise is None or not noise.sd:
        return None
    before = broken_contracts(base)
    allowance = calibration.allowance(noise)
    if count - before > allowance + FLOAT_SLACK:
        return None
    return (f"within calibrated noise: baseline {before}, {count - before:+d} allowed up to "
            f"+{allowance:.1f} (z {calibration.z:.2f} x sqrt2 x sd {noise.sd:.1f} over {calibration.runs} runs, "
            f"alpha {calibration.alpha:g})")


# The gate each resource figure is reported under (its budget; `-relative`: against the baseline).
RESOURCE_GATES = {"startup_seconds": "startup", "peak_rss_mib": "memory", "index_bytes": "index-size"}
# Why a figure was not measured, said beside a budget that could not be checked.
_NOT_MEASURED = {"startup_seconds": "the adapter printed no ready banner",
                 "peak_rss_mib": "the system the adapter ran on has no /proc",
                 "index_bytes": "the adapter's banner reports no index_bytes"}


def resource_gates(now: SetNumbers, base: SetNumbers, budgets: Budgets, policy: GatePolicy,
                   noise: Mapping[str, float] | None = None) -> list[GateResult]:
    """The adapter's resources (docs/gate.md, "Resource budgets"), apart from the latency gates: per figure of
    measured.RESOURCE_FIGURES, its budget (budgets.json) fails when exceeded (equal passes; a figure not
    measured warns, its budget unchecked), and against the baseline's figure it warns (policy:
    resources.relative_fails, fails) when it grew by more than the relative limit AND its floor. No
    comparison when either side did not measure it (baselines recorded before resources were). `noise` (field ->
    an allowance in the figure's unit, from a calibrated baseline's run-to-run spread) widens the comparison's
    allowed value by that much; budgets are absolute and never widened."""
    gates: list[GateResult] = []
    for name, unit, words in RESOURCE_FIGURES:
        current, before = now.resources.figure(name), base.resources.figure(name)
        budget = budgets.resources.get(name)
        gate = partial(GateResult, now.name, metric=words, baseline=before, current=current, unit=unit)
        was = f"; baseline {resource_text(before, unit)}" if before is not None else ""
        if budget is not None and current is None:
            gates.append(gate(RESOURCE_GATES[name], True, f"{now.name} {words} not measured ({_NOT_MEASURED[name]}); "
                                                          f"its budget of {resource_text(budget, unit)} was not checked",
                              warning=True, limit=budget))
        elif budget is not None and current is not None:
            within = current <= budget
            gates.append(gate(RESOURCE_GATES[name], within,
                              f"{now.name} {words} {resource_text(current, unit)} {'within' if within else 'exceeds'} "
                              f"the budget of {resource_text(budget, unit)}{was}", limit=budget))
        relative = _relative_resource_gate(now.name, name, unit, words, (before, current), policy,
                                           (noise or {}).get(name, 0.0))
        if relative is not None:
            gates.append(relative)
    return gates


def _relative_resource_gate(set_name: str, name: str, unit: str, words: str, values: tuple[float | None, float | None],
                            policy: GatePolicy, allowance: float = 0.0) -> GateResult | None:
    """One figure against the baseline's: grown beyond +limit % AND +floor warns (policy: fails); None when off
    or when either side did not measure it."""
    before, after = values
    limit = policy.resources_relative_limit_percent
    if limit is None or before is None or after is None:
        return None
    floor = {"startup_seconds": policy.resources_min_increase_seconds, "peak_rss_mib": policy.resources_min_increase_mib,
             "index_bytes": policy.resources_min_increase_bytes}[name]
    allowed, grew, change = _growth(before, after, limit, floor, allowance)
    fails = grew and policy.resources_relative_fails
    message = (f"{set_name} {words} {resource_text(after, unit)}, baseline {resource_text(before, unit)} ({change}; "
               f"allowed: +{limit:g} % and +{resource_text(floor, unit)}"
               + (f", +{resource_text(allowance, unit)} calibrated noise" if allowance else "") + ")")
    if grew and not fails:
        message += "; warning only (policy: resources.relative_fails)"
    return GateResult(set_name, f"{RESOURCE_GATES[name]}-relative", not fails, message,
                      warning=grew and not fails, metric=words, baseline=before, current=after, limit=allowed, unit=unit)


def paired_latency_gate(result: SetResult, policy: GatePolicy) -> GateResult | None:
    """The run's latency against the baseline's backend timed beside it, query by query (paired latency).

    For p50 and p95: the ratio percentile(run) / percentile(baseline) over the queries both answered, with
    its 95% bootstrap interval over whole pairs (harness.scoring.stats.paired_percentile_ratio). A ratio
    whose interval lies wholly above `latency.paired_warn_ratio` warns, above `paired_fails_ratio` fails;
    the gate reports the percentile whose interval lies highest, in ms (its `ci`: the run's value the
    ratio's interval implies). With fewer than the policy's min_samples pairs nothing is decided, and the gate
    warns so: the run asked for a paired verdict and did not get one.
    """
    pairs = [(q.base_latency_seconds * 1000, q.latency_seconds * 1000) for q in result.queries
             if q.base_latency_seconds is not None and q.base_latency_seconds > 0 and q.latency_seconds > 0]
    if len(pairs) < policy.latency_min_samples:
        return GateResult(result.name, "latency-paired", True,
                          f"{result.name} latency against the baseline's backend, {PAIRED}: not decided on "
                          f"{plural(len(pairs), 'query pair', 'query pairs')} (latency.min_samples asks for "
                          f"{policy.latency_min_samples}; a set of more queries gives a verdict)",
                          warning=True, metric="p95", unit=MILLISECONDS)
    base_ms, run_ms = [b for b, _ in pairs], [c for _, c in pairs]
    ratios = [paired_percentile_ratio(base_ms, run_ms, percentile) for percentile in PAIRED_PERCENTILES]
    decisive = max(ratios, key=lambda r: r.ci_low)
    fails_at, warns_at = policy.latency_paired_fails_ratio, policy.latency_paired_warn_ratio
    failed = fails_at is not None and decisive.ci_low > fails_at + FLOAT_SLACK
    warned = not failed and decisive.ci_low > warns_at + FLOAT_SLACK
    before = percentile(base_ms, decisive.percentile)
    figures = "; ".join(f"p{r.percentile:g} {r.ratio:.2f}x (95% CI {r.ci_low:.2f}-{r.ci_high:.2f})" for r in ratios)
    limits = f"warns above {warns_at:g}x" + (f", fails above {fails_at:g}x" if fails_at is not None else "")
    message = (f"{result.name} latency against the baseline's backend, {PAIRED} over {len(pairs)} queries: "
               f"{figures} ({limits}, when the whole 95% CI lies above)")
    if warned:
        message += "; warning only (policy: latency.paired_fails_ratio)"
    return GateResult(result.name, "latency-paired", not failed, message, warning=warned,
                      metric=f"p{decisive.percentile:g}", baseline=before,
                      current=percentile(run_ms, decisive.percentile), limit=before * warns_at,
                      unit=MILLISECONDS, ci=(before * decisive.ci_low, before * decisive.ci_high))


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


def _contract_gate(result: SetResult, base: SetNumbers, accept_known: bool,
                   calibration: SetCalibration | None = None) -> GateResult:
    """Every broken hard contract fails, except, with `accept_known`, those the baseline records as broken, and
    those its calibration saw broken in some runs and not in others (noise, reported). When the calibrated number
    of breaks varied between runs, the gate fails only when that number grew beyond its noise (`_breaks_within`)."""
    flaky = calibration.flaky_contracts() if calibration is not None else frozenset()
    broken = [(q.qid, c) for q in result.queries if q.outcome not in EXPECTED_TO_FAIL
              for c in q.contracts if not c.passed]
    within_noise = _breaks_within(len(broken), base, calibration)
    gate = partial(GateResult, result.name, "contract", metric="broken contracts", limit=0, unit=COUNT)
    if within_noise is not None and broken:
        return gate(True, f"{result.name}: {len(broken)} hard contract(s) broken in "
                          f"{_listed(sorted({qid for qid, _ in broken}))}; {within_noise}",
                    baseline=broken_contracts(base), current=len(broken))
    within = [(qid, c) for qid, c in broken if (qid, c.key) in flaky]
    noise = sorted({qid for qid, _ in within})
    broken = [(qid, c) for qid, c in broken if (qid, c.key) not in flaky]
    noted = (f"; {plural(len(noise), 'query', 'queries')} broke a contract within calibrated noise "
             f"({_listed(noise)})") if noise else ""
    recorded = {(qid, key) for qid, row in base.queries.items() for key in row.broken}
    known = [(qid, c) for qid, c in broken if (qid, c.key) in recorded]
    gate = partial(gate, baseline=len(recorded), current=len(broken))
    if accept_known:
        broken = [(qid, c) for qid, c in broken if (qid, c.key) not in recorded]
        if known and not broken:
            qids = sorted({qid for qid, _ in known})
            return gate(True, f"{result.name}: no new contract breaks; {len(known)} known from the baseline "
                              f"({_listed(qids)}){noted}")
    if not broken:
        checked = sum(len(q.contracts) for q in result.queries)
        held = f"{checked - len(within)} of {checked}" if within else f"{checked}"
        return gate(True, (f"{result.name}: {held} contracts hold" if checked
                           else f"{result.name}: no hard contracts in this set") + noted)
    # A run gating an embedder without the option fails on breaks its baseline already tracks: say so.
    which = "it" if len(broken) == 1 else f"all {len(broken)}"
    hint = (f"; the baseline records {which} as broken (--known-contract-failures fails only new breaks)"
            if not accept_known and len(known) == len(broken) else "")
    first_qid, first = broken[0]
    qids = sorted({qid for qid, _ in broken})
    return gate(False, f"{result.name}: {len(broken)} hard contract(s) broken in {_listed(qids)}; "
                       f"first: {first_qid} {first.name}: {first.detail}{hint}{noted}", flipped=tuple(qids))


CONTRACT_ALPHA = 0.05  # a graded set fails on significantly more broken than fixed contracts at this level


def _graded_contract_gate(result: SetResult, base: SetNumbers) -> GateResult:
    """A set whose contracts are graded: fails only when the change breaks significantly more contracts than
    it fixes, by the exact McNemar test on the discordant contracts (broken now and held in the baseline,
    against held now and broken in the baseline), two-sided at CONTRACT_ALPHA. A contract broken on both
    sides is no evidence either way; xfail queries are left out, as the strict rule leaves them out."""
    gated = [q for q in result.queries if q.outcome not in EXPECTED_TO_FAIL]
    checked = [(q.qid, c) for q in gated for c in q.contracts]
    recorded = {(q.qid, key) for q in gated if q.qid in base.queries for key in base.queries[q.qid].broken}
    broken_now = sorted((qid, c.key) for qid, c in checked if not c.passed and (qid, c.key) not in recorded)
    fixed_now = sorted((qid, c.key) for qid, c in checked if c.passed and (qid, c.key) in recorded)
    broken = sum(1 for _, c in checked if not c.passed)
    p_value = mcnemar_exact(len(broken_now), len(fixed_now))
    fails = len(broken_now) > len(fixed_now) and p_value < CONTRACT_ALPHA
    gate = partial(GateResult, result.name, "contract", metric="broken contracts", baseline=len(recorded),
                   current=broken, limit=0, unit=COUNT, p_value=p_value, flipped=tuple(qid for qid, _ in broken_now))
    if not checked:
        return gate(True, f"{result.name}: no hard contracts in this set")

    def listed(flips: list[tuple[str, str]]) -> str:
        return _listed([f"{qid} {key}" for qid, key in flips]) or "none"
    counts = (f"{len(broken_now)} broken now, {len(fixed_now)} fixed now (exact McNemar p={p_value:.3g}"
              f"{' < ' if fails else ', '}alpha {CONTRACT_ALPHA:g})")
    verdict = ("significantly more broken than fixed" if fails else
               "no more broken than fixed" if len(broken_now) <= len(fixed_now) else
               "not significantly more broken than fixed")
    return gate(not fails, f"{result.name}: graded contracts: {counts}: {verdict}; {broken} of {len(checked)} "
                           f"broken, baseline {len(recorded)}; broken now: {listed(broken_now)}; "
                           f"fixed now: {listed(fixed_now)}")
