"""The four gates of DESIGN.md as one pure function: check(results, baseline, budgets) -> GateResults.

Rounding rule (written once, here): a recall@10 drop fails when
`baseline - current > RECALL_DROP_LIMIT + FLOAT_SLACK`; FLOAT_SLACK absorbs binary float
noise in means so that an exact 2-point drop (e.g. 0.70 -> 0.68) passes, as the limit says
"more than 2 points". Latency fails when p95 > budget (equal passes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.records import GateResult, SetResult
from harness.scoring.stats import RESAMPLES, paired_test

RECALL_METRIC = "recall@10"
RECALL_DROP_LIMIT = 0.020
FLOAT_SLACK = 1e-9
DEFAULT_P95_BUDGET_MS = 300.0
MAX_FLIPS_LISTED = 10


def check(results: Sequence[SetResult], baseline_sets: Mapping[str, Mapping], budgets_ms: Mapping[str, float],
          *, default_budget_ms: float = DEFAULT_P95_BUDGET_MS, latency_gate: bool = True,
          known_contract_failures: bool = False) -> list[GateResult]:
    """Every gate for every set; `baseline_sets` maps set name -> comparable baseline entry.

    With `known_contract_failures`, a contract the baseline already recorded as broken for the
    same query is reported as known instead of failing (a ratchet: only new breaks fail).
    """
    gates: list[GateResult] = []
    for result in results:
        entry = baseline_sets[result.name]
        gates.extend(_count_gate(result, entry))
        gates.extend(_recall_gates(result, entry))
        if latency_gate:
            gates.append(_latency_gate(result, budgets_ms.get(result.name, default_budget_ms)))
        gates.append(_contract_gate(result, entry if known_contract_failures else None))
    return gates


def flipped_queries(result: SetResult, entry: Mapping, category: str | None = None) -> list[str]:
    """Queries that had a relevant document in the top 10 in the baseline and lost it now."""
    now = {q.qid: set(q.found) for q in result.queries}
    flipped = []
    for qid, row in entry["queries"].items():
        if not row.get("scored", True) or (category is not None and row.get("category") != category):
            continue
        if qid in now and set(row["found"]) - now[qid]:
            flipped.append(qid)
    return sorted(flipped)


def _count_gate(result: SetResult, entry: Mapping) -> list[GateResult]:
    gates = []
    if result.query_count != entry["query_count"]:
        gates.append(GateResult(result.name, "query-count", False,
                                f"{result.name}: query count {result.query_count} differs from the baseline's "
                                f"{entry['query_count']} (re-baseline deliberately if queries were added or removed)"))
    else:
        gates.append(GateResult(result.name, "query-count", True, f"{result.name}: {result.query_count} queries, as the baseline"))
    for category in sorted(set(entry["aggregates"]["category"]) - set(result.aggregates["category"])):
        gates.append(GateResult(result.name, "query-count", False,
                                f"{result.name}/{category}: category in the baseline has no scored queries now",
                                category=category))
    return gates


def _recall_gates(result: SetResult, entry: Mapping) -> list[GateResult]:
    scopes: list[tuple[str | None, Mapping, Mapping]] = [(None, entry["aggregates"]["overall"], result.aggregates["overall"])]
    for category, before in sorted(entry["aggregates"]["category"].items()):
        current = result.aggregates["category"].get(category)
        if current is not None:
            scopes.append((category, before, current))
    gates = []
    for category, before, current in scopes:
        label = result.name + (f"/{category}" if category else " overall")
        if RECALL_METRIC not in before or RECALL_METRIC not in current:
            # Never a silent pass: a scope with nothing scored on either side says so; a value
            # missing on one side only fails the gate, naming which side lacks it.
            if not before.get("n") and not current.get("n"):
                gates.append(GateResult(result.name, "recall", True,
                                        f"{label}: no scored queries in the baseline or now; nothing to compare",
                                        category=category))
                continue
            missing = " and ".join(side for side, values in (("the baseline", before), ("this run", current))
                                   if RECALL_METRIC not in values)
            gates.append(GateResult(result.name, "recall", False,
                                    f"{label} {RECALL_METRIC}: missing from {missing}; the recall gate cannot "
                                    f"pass without it", category=category))
            continue
        base_value, now_value = float(before[RECALL_METRIC]), float(current[RECALL_METRIC])
        drop = base_value - now_value
        passed = drop <= RECALL_DROP_LIMIT + FLOAT_SLACK
        flips = flipped_queries(result, entry, category)
        listed = ", ".join(flips[:MAX_FLIPS_LISTED]) + (f" (+{len(flips) - MAX_FLIPS_LISTED} more)" if len(flips) > MAX_FLIPS_LISTED else "")
        if passed:
            message = f"{label} {RECALL_METRIC} {now_value:.4f} (baseline {base_value:.4f})"
        else:
            message = (f"{label} {RECALL_METRIC} dropped {drop * 100:.2f} points: baseline {base_value:.4f}, "
                       f"now {now_value:.4f} (limit {RECALL_DROP_LIMIT * 100:.1f}; {_interval(result, entry, category)}); "
                       f"flipped: {listed or 'none'}")
        gates.append(GateResult(result.name, "recall", passed, message, category=category, flipped=tuple(flips)))
    return gates


def _interval(result: SetResult, entry: Mapping, category: str | None) -> str:
    """The paired bootstrap CI and randomization p of the recall@10 change, as `compare` shows it."""
    rows = [q for q in result.queries if q.scored and (category is None or q.category == category)]
    base = {q.qid: entry["queries"][q.qid]["metrics"][RECALL_METRIC] for q in rows
            if RECALL_METRIC in entry["queries"].get(q.qid, {}).get("metrics", {})}
    current = {q.qid: q.metrics[RECALL_METRIC] for q in rows if q.qid in base}
    test = paired_test(base, current, {q.qid: q.intent_or_qid for q in rows}, resamples=RESAMPLES)
    return f"change 95% CI [{test.ci_low * 100:+.1f}, {test.ci_high * 100:+.1f}] points, p={test.p_value:.3f}"


def _latency_gate(result: SetResult, budget_ms: float) -> GateResult:
    p95 = result.latency_ms.get("p95")
    if p95 is None:
        if not result.queries:
            return GateResult(result.name, "latency", True, f"{result.name}: no queries asked, no latency to gate")
        return GateResult(result.name, "latency", False,
                          f"{result.name}: {len(result.queries)} queries but no p95 latency; the latency gate cannot pass")
    passed = p95 <= budget_ms
    verdict = "within" if passed else "exceeds"
    return GateResult(result.name, "latency", passed,
                      f"{result.name} p95 latency {p95:.1f} ms {verdict} the budget of {budget_ms:.0f} ms")


def _contract_gate(result: SetResult, entry: Mapping | None) -> GateResult:
    broken = [(q.qid, c) for q in result.queries if q.outcome not in ("xfail", "xpass")
              for c in q.contracts if not c.passed]
    known = []
    if entry is not None:
        recorded = {(qid, key) for qid, row in entry["queries"].items() for key in row.get("broken", [])}
        known = [(qid, c) for qid, c in broken if (qid, c.key) in recorded]
        broken = [(qid, c) for qid, c in broken if (qid, c.key) not in recorded]
    if known and not broken:
        qids = sorted({qid for qid, _ in known})
        return GateResult(result.name, "contract", True,
                          f"{result.name}: no new contract breaks; {len(known)} known from the baseline "
                          f"({', '.join(qids[:MAX_FLIPS_LISTED])})")
    if not broken:
        checked = sum(len(q.contracts) for q in result.queries)
        if not checked:
            return GateResult(result.name, "contract", True, f"{result.name}: no hard contracts in this set")
        return GateResult(result.name, "contract", True, f"{result.name}: {checked} contracts hold")
    first_qid, first = broken[0]
    qids = sorted({qid for qid, _ in broken})
    return GateResult(result.name, "contract", False,
                      f"{result.name}: {len(broken)} hard contract(s) broken in {', '.join(qids[:MAX_FLIPS_LISTED])}; "
                      f"first: {first_qid} {first.name}: {first.detail}", flipped=tuple(qids))
