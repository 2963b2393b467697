"""Report-only what-if: the metrics a set would get if hits scoring below a threshold were dropped.

It helps teams pick a score cut-off for production without touching gates or baselines.
"""

from __future__ import annotations

from harness.scoring import metrics
from harness.scoring.evaluate import TABLE_METRICS
from harness.records import QuerySet, SetResult

def what_if_min_score(result: SetResult, query_set: QuerySet, threshold: float) -> dict[str, object]:
    """Aggregates over the scored queries with hits below `threshold` removed, and rows dropped.

    Queries whose adapter returned no scores cannot be cut; they are counted, left unchanged.
    """
    grades = {q.qid: q.relevant for q in query_set.queries}
    per_query: dict[str, int] = {}
    sums = {name: 0.0 for name in TABLE_METRICS}
    real = {name: 0.0 for name in TABLE_METRICS}
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
        for name in TABLE_METRICS:
            sums[name] += metrics.parse_metric(name).compute(kept, grades[row.qid])
            real[name] += row.metrics[name]
    return {
        "threshold": threshold,
        "queries": scored,
        "queries_without_scores": unscored_hits,
        "metrics": {name: (sums[name] / scored if scored else None) for name in TABLE_METRICS},
        "real_metrics": {name: (real[name] / scored if scored else None) for name in TABLE_METRICS},
        "rows_dropped": sum(per_query.values()),
        "rows_dropped_per_query": per_query,
    }
