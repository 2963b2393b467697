"""Report-only what-if: the metrics a set would get if hits scoring below a threshold were dropped.

It helps teams pick a score cut-off for production without touching gates or baselines.
"""

from __future__ import annotations

from harness.scoring import metrics
from harness.records import QuerySet, SetResult

WHAT_IF_METRICS = ("recall@10", "mrr", "ndcg@10")


def what_if_min_score(result: SetResult, query_set: QuerySet, threshold: float) -> dict[str, object]:
    """Aggregates over the scored queries with hits below `threshold` removed, and rows dropped.

    Queries whose adapter returned no scores cannot be cut; they are counted, left unchanged.
    """
    grades = {q.qid: q.relevant for q in query_set.queries}
    per_query: dict[str, int] = {}
    sums = {name: 0.0 for name in WHAT_IF_METRICS}
    real = {name: 0.0 for name in WHAT_IF_METRICS}
    scored = unscored_hits = 0
    for row in result.queries:
        if row.scores is None:
            unscored_hits += 1
            kept = row.ids
        else:
            kept = tuple(doc_id for doc_id, score in zip(row.ids, row.scores) if score >= threshold)
            per_query[row.qid] = len(row.ids) - len(kept)
        if not row.scored:
            continue
        scored += 1
        for name in WHAT_IF_METRICS:
            sums[name] += metrics.parse_metric(name).compute(kept, grades[row.qid])
            real[name] += row.metrics[name]
    return {
        "threshold": threshold,
        "queries": scored,
        "queries_without_scores": unscored_hits,
        "metrics": {name: (sums[name] / scored if scored else None) for name in WHAT_IF_METRICS},
        "real_metrics": {name: (real[name] / scored if scored else None) for name in WHAT_IF_METRICS},
        "rows_dropped": sum(per_query.values()),
        "rows_dropped_per_query": per_query,
    }


def render_what_if(name: str, what_if: dict[str, object]) -> str:
    cut, real = what_if["metrics"], what_if["real_metrics"]
    cells = "  ".join(f"{m} {real[m]:.3f} -> {cut[m]:.3f}" for m in WHAT_IF_METRICS if cut[m] is not None)
    note = f"; {what_if['queries_without_scores']} queries had no scores" if what_if["queries_without_scores"] else ""
    return (f"what-if {name} (hits scoring < {what_if['threshold']} dropped, report only): {cells}; "
            f"{what_if['rows_dropped']} rows dropped{note}")
