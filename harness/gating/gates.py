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
from dataclasses import dataclass

from harness.gating.budgets import Budgets
from harness.gating.inputs import GateInputs
from harness.gating.policy import GatePolicy
from harness.records import GateResult, QueryResult, SetResult
from harness.scoring.evidence import evidence_metric_names, evidence_value, lower_is_better
from harness.scoring.flips import Flip, find_flips
from harness.scoring.stats import RESAMPLES, PairedTest, paired_test

JUDGED_METRIC = "judged@10"
FLOAT_SLACK = 1e-9
MAX_FLIPS_LISTED = 10
# The units a GateResult's numbers are in: a [0, 1] mean whose `limit` is the largest drop allowed
# (shown in points); milliseconds whose `limit` is the largest value allowed; a count whose `limit`
# is the largest change allowed.
FRACTION, MILLISECONDS, COUNT = "fraction", "ms", "count"


@dataclass(frozen=True)
class Decision:
    """The gates of a run and, per gated set, its flips against the baseline (lost and gained)."""

    gates: tuple[GateResult, ...]
    flips: Mapping[str, tuple[Flip, ...]]


def decide(results: Sequence[SetResult], inputs: GateInputs, *, k: int | None = None, latency_gated: bool = True,
           known_contract_failures: bool = False) -> Decision:
    """Every gate for every set against `inputs.baseline` (no baseline: no gates, no flips).

    `k` is the run's --k (None: each set's own). `latency_gated` False for rankings that were not
    timed (a run file). With `known_contract_failures`, a contract the baseline already recorded as
    broken for the same query is reported as known instead of failing (only new breaks fail).
    """
    if inputs.baseline is None:
        return Decision((), {})
    entries = {result.name: inputs.baseline.entry_for(result, k=k or result.k) for result in results}
    gates = check(results, entries, inputs.budgets, latency_gated=latency_gated,
                  known_contract_failures=known_contract_failures, policy=inputs.policy)
    flips = {result.name: tuple(find_flips(result.name, _found(entries[result.name]),
                                           {q.qid: q.found for q in result.queries},
                                           {q.qid: q.query for q in result.queries}))
             for result in results}
    return Decision(tuple(gates), flips)


def _found(entry: Mapping) -> dict[str, list[str]]:
    return {qid: row.get("found") or [] for qid, row in entry["queries"].items()}


def check(results: Sequence[SetResult], baseline_sets: Mapping[str, Mapping], budgets: Budgets = Budgets(), *,
          latency_gated: bool = True, known_contract_failures: bool = False,
          policy: GatePolicy = GatePolicy()) -> list[GateResult]:
    """The gates of `decide` on baseline entries already matched to the sets (set name -> entry)."""
    gates: list[GateResult] = []
    for result in results:
        entry = baseline_sets[result.name]
        gates.extend(_count_gate(result, entry))
        for metric in policy.metrics:
            if metric in evidence_metric_names():
                gates.extend(_evidence_gates(result, entry, metric, policy))
            else:
                gates.extend(_metric_gates(result, entry, metric, policy))
        if latency_gated:
            gates.append(_latency_gate(result, entry, budgets.for_set(result.name)))
            relative = _relative_latency_gate(result, entry, policy)
            if relative is not None:
                gates.append(relative)
        gates.append(_contract_gate(result, entry, known_contract_failures))
        judged = _judged_gate(result, entry, policy)
        if judged is not None:
            gates.append(judged)
    return gates


def flipped_queries(result: SetResult, entry: Mapping, category: str | None = None) -> list[str]:
    """Queries that had a relevant document in the top 10 in the baseline and lost it now."""
    base_found = {qid: row["found"] for qid, row in entry["queries"].items()
                  if row.get("scored", True) and (category is None or row.get("category") == category)}
    return [flip.qid for flip in find_flips(result.name, base_found, {q.qid: q.found for q in result.queries})
            if flip.lost]


def gate_name(metric: str) -> str:
    """The gate a metric's drop is reported under: its family (`recall@10` -> `recall`)."""
    return metric.split("@", 1)[0]


def _count_gate(result: SetResult, entry: Mapping) -> list[GateResult]:
    numbers = dict(metric="queries", baseline=entry["query_count"], current=result.query_count, limit=0, unit=COUNT)
    gates = []
    if result.query_count != entry["query_count"]:
        gates.append(GateResult(result.name, "query-count", False,
                                f"{result.name}: query count {result.query_count} differs from the baseline's "
                                f"{entry['query_count']} (re-baseline deliberately if queries were added or removed)",
                                **numbers))
    else:
        gates.append(GateResult(result.name, "query-count", True, f"{result.name}: {result.query_count} queries, as the baseline",
                                **numbers))
    for category in sorted(set(entry["aggregates"]["category"]) - set(result.aggregates["category"])):
        gates.append(GateResult(result.name, "query-count", False,
                                f"{result.name}/{category}: category in the baseline has no scored queries now",
                                category=category, metric="scored queries",
                                baseline=entry["aggregates"]["category"][category].get("n"), current=0, limit=0,
                                unit=COUNT))
    return gates


def _metric_gates(result: SetResult, entry: Mapping, metric: str, policy: GatePolicy) -> list[GateResult]:
    scopes: list[tuple[str | None, Mapping, Mapping]] = [(None, entry["aggregates"]["overall"], result.aggregates["overall"])]
    if policy.gate_categories:
        for category, before in sorted(entry["aggregates"]["category"].items()):
            current = result.aggregates["category"].get(category)
            if current is not None:
                scopes.append((category, before, current))
    gates = []
    for category, before, current in scopes:
        label = result.name + (f"/{category}" if category else " overall")
        if metric not in before or metric not in current:
            # Never a silent pass: a scope with nothing scored on either side says so; a value
            # missing on one side only fails the gate, naming which side lacks it.
            if not before.get("n") and not current.get("n"):
                gates.append(GateResult(result.name, gate_name(metric), True,
                                        f"{label}: no scored queries in the baseline or now; nothing to compare",
                                        category=category))
                continue
            missing = " and ".join(side for side, values in (("the baseline", before), ("this run", current))
                                   if metric not in values)
            gates.append(GateResult(result.name, gate_name(metric), False,
                                    f"{label} {metric}: missing from {missing}; the gate cannot pass without it "
                                    f"(re-record the baseline with this gate policy: --update-baseline)",
                                    category=category))
            continue
        base_value, now_value = float(before[metric]), float(current[metric])
        numbers = dict(metric=metric, baseline=base_value, current=now_value, limit=policy.drop_limit, unit=FRACTION)
        drop = base_value - now_value
        flips = flipped_queries(result, entry, category)
        listed = ", ".join(flips[:MAX_FLIPS_LISTED]) + (f" (+{len(flips) - MAX_FLIPS_LISTED} more)" if len(flips) > MAX_FLIPS_LISTED else "")
        if drop <= policy.drop_limit + FLOAT_SLACK:
            gates.append(GateResult(result.name, gate_name(metric), True,
                                    f"{label} {metric} {now_value:.4f} (baseline {base_value:.4f})",
                                    category=category, flipped=tuple(flips), **numbers))
            continue
        rows = _scope_rows(result, category)
        test = _paired(rows, entry, metric)
        small = category is not None and int(current.get("n", len(rows))) < policy.min_category_queries
        not_significant = policy.require_ci_below_zero and not test.ci_high < 0
        message = (f"{label} {metric} dropped {drop * 100:.2f} points: baseline {base_value:.4f}, now {now_value:.4f} "
                   f"(limit {policy.drop_limit_points:.1f}; {_interval(test)}); {movement(rows, entry, metric)}; "
                   f"flipped: {listed or 'none'}")
        if small:
            message += (f"; warning only: the category has {int(current.get('n', len(rows)))} scored queries, fewer "
                        f"than the policy's min_queries {policy.min_category_queries}")
        elif not_significant:
            message += "; warning only: the paired 95% CI does not lie below zero (policy: require_ci_below_zero)"
        warning = small or not_significant
        gates.append(GateResult(result.name, gate_name(metric), warning, message, category=category,
                                flipped=tuple(flips), warning=warning, ci=(test.ci_low, test.ci_high),
                                p_value=test.p_value, **numbers))
    return gates


def _evidence_gates(result: SetResult, entry: Mapping, metric: str, policy: GatePolicy) -> list[GateResult]:
    """An exposed-evidence metric (harness.scoring.evidence) gated like any other: overall and per category.

    Its mean is over the queries judged on it (unjudgeable ones are null and left out); a scope
    judged on neither side passes saying so, one judged on one side only fails. For the
    `*_before_current` rates a rise is the loss.
    """
    scopes = ["overall"] + ([f"category:{c}" for c in sorted(entry["aggregates"]["category"])]
                            if policy.gate_categories else [])
    gates = []
    for scope in scopes:
        category = None if scope == "overall" else scope.split(":", 1)[1]
        label = result.name + (f"/{category}" if category else " overall")
        before, judged_before = evidence_value(entry["aggregates"], metric, scope)
        now, judged_now = evidence_value(result.aggregates, metric, scope)
        if before is None and now is None:
            gates.append(GateResult(result.name, gate_name(metric), True,
                                    f"{label} {metric}: no query judged on it in the baseline or now", category=category))
            continue
        if before is None or now is None:
            side = "the baseline" if before is None else "this run"
            gates.append(GateResult(result.name, gate_name(metric), False,
                                    f"{label} {metric}: no judged value in {side}; re-record the baseline with this "
                                    f"gate policy (--update-baseline)", category=category))
            continue
        numbers = dict(metric=metric, baseline=before, current=now, limit=policy.drop_limit, unit=FRACTION)
        loss = (now - before) if lower_is_better(metric) else (before - now)
        passed = loss <= policy.drop_limit + FLOAT_SLACK
        direction = "rose" if lower_is_better(metric) else "dropped"
        message = (f"{label} {metric} {now:.4f} (baseline {before:.4f}; judged on {judged_now} queries, "
                   f"{judged_before} in the baseline)")
        if not passed:
            message = (f"{label} {metric} {direction} {abs(now - before) * 100:.2f} points: baseline {before:.4f}, "
                       f"now {now:.4f} (limit {policy.drop_limit_points:.1f}; judged on {judged_now} queries, "
                       f"{judged_before} in the baseline; unjudgeable queries left out)")
        gates.append(GateResult(result.name, gate_name(metric), passed, message, category=category, **numbers))
    return gates


def _scope_rows(result: SetResult, category: str | None) -> list[QueryResult]:
    return [q for q in result.queries if q.scored and (category is None or q.category == category)]


def _paired(rows: Sequence[QueryResult], entry: Mapping, metric: str) -> PairedTest:
    """The paired bootstrap CI and randomization p of the change, as `compare` computes it."""
    base = {q.qid: entry["queries"][q.qid]["metrics"][metric] for q in rows
            if metric in entry["queries"].get(q.qid, {}).get("metrics", {})}
    current = {q.qid: q.metrics[metric] for q in rows if q.qid in base and metric in q.metrics}
    return paired_test(base, current, {q.qid: q.resampling_unit for q in rows}, resamples=RESAMPLES)


def _interval(test: PairedTest) -> str:
    return f"change 95% CI [{test.ci_low * 100:+.1f}, {test.ci_high * 100:+.1f}] points, p={test.p_value:.3f}"


def movement(rows: Sequence[QueryResult], entry: Mapping, metric: str) -> str:
    """In words: how many queries got better, worse or stayed, and the worst loss.

    "1 of 1 query lost its relevant document" when a single query moved it all; otherwise
    "7 queries better, 12 worse, 5 unchanged; worst: dedupe-012 lost 3 of 4 relevant documents".
    """
    better = worse = same = 0
    worst: tuple[float, QueryResult, Mapping] | None = None
    for row in rows:
        before = entry["queries"].get(row.qid)
        if before is None or metric not in before.get("metrics", {}) or metric not in row.metrics:
            continue
        change = row.metrics[metric] - float(before["metrics"][metric])
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
    had = list(before.get("found") or [])
    lost = [doc_id for doc_id in had if doc_id not in row.found]
    if had:
        what = f"lost {len(lost)} of {len(had)} relevant document{'s' if len(had) != 1 else ''} it found"
    else:
        what = f"{metric} {float(before['metrics'][metric]):.2f} -> {row.metrics[metric]:.2f}"
    if total == 1:
        if len(had) == 1 and len(lost) == 1:
            return f"1 of 1 query lost its relevant document ({row.qid})"
        return f"1 of 1 query got worse: {row.qid} {what}"
    return f"{better} queries better, {worse} worse, {same} unchanged; worst: {row.qid} {what}"


def _latency_gate(result: SetResult, entry: Mapping, budget_ms: float) -> GateResult:
    p95 = result.latency_ms.get("p95")
    before = (entry.get("latency_ms") or {}).get("p95")
    numbers = dict(metric="p95", baseline=float(before) if before is not None else None,
                   current=float(p95) if p95 is not None else None, limit=budget_ms, unit=MILLISECONDS)
    if p95 is None:
        if not result.queries:
            return GateResult(result.name, "latency", True, f"{result.name}: no queries asked, no latency to gate",
                              **numbers)
        return GateResult(result.name, "latency", False,
                          f"{result.name}: {len(result.queries)} queries but no p95 latency; the latency gate cannot pass",
                          **numbers)
    passed = p95 <= budget_ms
    verdict = "within" if passed else "exceeds"
    was = f"; baseline {float(before):.1f} ms" if before is not None else ""
    return GateResult(result.name, "latency", passed,
                      f"{result.name} p95 latency {p95:.1f} ms {verdict} the budget of {budget_ms:.0f} ms{was}", **numbers)


def _relative_latency_gate(result: SetResult, entry: Mapping, policy: GatePolicy) -> GateResult | None:
    limit = policy.latency_relative_limit_percent
    if limit is None:
        return None
    base, now = entry.get("latency_ms") or {}, result.latency_ms
    samples = min(int(base.get("n") or 0), int(now.get("n") or 0))
    if samples < policy.latency_min_samples or "p95" not in base or "p95" not in now:
        return GateResult(result.name, "latency-relative", True,
                          f"{result.name} p95 not compared with the baseline's: {samples} latencies, fewer than the "
                          f"policy's min_samples {policy.latency_min_samples}", metric="p95", unit=MILLISECONDS,
                          baseline=base.get("p95"), current=now.get("p95"))
    allowed = float(base["p95"]) * (1 + limit / 100)
    passed = float(now["p95"]) <= allowed + FLOAT_SLACK
    change = (float(now["p95"]) / float(base["p95"]) - 1) * 100 if base["p95"] else float("inf")
    return GateResult(result.name, "latency-relative", passed,
                      f"{result.name} p95 latency {now['p95']:.1f} ms vs the baseline's {base['p95']:.1f} ms "
                      f"({change:+.0f} %, limit +{limit:g} %)", metric="p95", baseline=float(base["p95"]),
                      current=float(now["p95"]), limit=allowed, unit=MILLISECONDS)


def _judged_gate(result: SetResult, entry: Mapping, policy: GatePolicy) -> GateResult | None:
    """WARN when the backend returns documents the set never judged (judged@10 fell), else PASS."""
    before, now = entry["aggregates"]["overall"].get(JUDGED_METRIC), result.aggregates["overall"].get(JUDGED_METRIC)
    if before is None or now is None:
        return None
    drop = float(before) - float(now)
    numbers = dict(metric=JUDGED_METRIC, baseline=float(before), current=float(now),
                   limit=policy.judged_warn_drop_points / 100, unit=FRACTION)
    if drop * 100 <= policy.judged_warn_drop_points + FLOAT_SLACK:
        return GateResult(result.name, "judged", True,
                          f"{result.name} judged@10 {now:.3f} (baseline {before:.3f})", **numbers)
    unjudged = sum(int(q.metrics.get("unjudged@10", 0)) for q in result.queries if q.scored)
    return GateResult(result.name, "judged", True,
                      f"{result.name} judged@10 fell {drop * 100:.1f} points: baseline {before:.3f}, now {now:.3f}"
                      f" ({unjudged} unjudged documents in the top 10s); the backend now returns documents the set "
                      f"never judged: judge them and bump the set's revision", warning=True, **numbers)


def _contract_gate(result: SetResult, entry: Mapping, accept_known: bool) -> GateResult:
    """Every broken hard contract fails, except, with `accept_known`, those the baseline records as broken."""
    broken = [(q.qid, c) for q in result.queries if q.outcome not in ("xfail", "xpass")
              for c in q.contracts if not c.passed]
    recorded = {(qid, key) for qid, row in entry["queries"].items() for key in row.get("broken", [])}
    known = [(qid, c) for qid, c in broken if (qid, c.key) in recorded]
    numbers = dict(metric="broken contracts", baseline=len(recorded), current=len(broken), limit=0, unit=COUNT)
    if accept_known:
        broken = [(qid, c) for qid, c in broken if (qid, c.key) not in recorded]
        if known and not broken:
            qids = sorted({qid for qid, _ in known})
            return GateResult(result.name, "contract", True,
                              f"{result.name}: no new contract breaks; {len(known)} known from the baseline "
                              f"({', '.join(qids[:MAX_FLIPS_LISTED])})", **numbers)
    if not broken:
        checked = sum(len(q.contracts) for q in result.queries)
        if not checked:
            return GateResult(result.name, "contract", True, f"{result.name}: no hard contracts in this set", **numbers)
        return GateResult(result.name, "contract", True, f"{result.name}: {checked} contracts hold", **numbers)
    # A run gating an embedder without the option fails on breaks its baseline already tracks: say so.
    which = "it" if len(broken) == 1 else f"all {len(broken)}"
    hint = (f"; the baseline records {which} as broken (--known-contract-failures fails only new breaks)"
            if not accept_known and len(known) == len(broken) else "")
    first_qid, first = broken[0]
    qids = sorted({qid for qid, _ in broken})
    return GateResult(result.name, "contract", False,
                      f"{result.name}: {len(broken)} hard contract(s) broken in {', '.join(qids[:MAX_FLIPS_LISTED])}; "
                      f"first: {first_qid} {first.name}: {first.detail}{hint}", flipped=tuple(qids), **numbers)
