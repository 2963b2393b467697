"""Join a set's judgments with what the backend returned into a SetResult; never mutates inputs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.scoring import evidence, metrics
from harness.records import ContractResult, Query, QueryResult, QuerySet, SetResult

# The per-query and aggregate metrics every report carries, in column order.
REPORTED_METRICS = ("recall@5", "recall@10", "mrr", "ndcg@10", "precision@10", "hit@10")
# The columns every table of a run or a comparison shows (console, Markdown, HTML, baselines).
TABLE_METRICS = REPORTED_METRICS[:4]
# Bump when any metric's definition changes: reports with different versions are not comparable.
METRIC_DEFINITIONS = {"version": metrics.DEFINITIONS_VERSION, "metrics": list(REPORTED_METRICS),
                      "notes": "trec_eval definitions; mrr = recip_rank cut at 10; ndcg gain = grade"}
FLIP_DEPTH = 10  # "found" = relevant ids within this depth; a flip is one lost from it


@dataclass(frozen=True, slots=True)
class Answer:
    """What the backend returned for one query, and its end-to-end latency."""

    ids: tuple[str, ...]
    scores: tuple[float, ...] | None
    latency_seconds: float
    passages: tuple[tuple[int, int] | None, ...] | None = None  # the window per hit (issue 17)


def report_metric_name(name: str) -> str:
    """The report's key for a metric named in any accepted spelling (`R@10`, `nDCG@10`, `RR@10`, `mrr`).

    Raises ValueError when the name is unknown or not one the reports carry per query.
    """
    canonical = metrics.parse_metric(name).name
    key = "mrr" if canonical == "mrr@10" else canonical
    if key not in REPORTED_METRICS:
        raise ValueError(f"{name!r} ({canonical}) is not kept per query in reports; "
                         f"choose one of {', '.join(REPORTED_METRICS)}")
    return key


def evaluate_query(query: Query, answer: Answer, k: int) -> QueryResult:
    """Metrics (only for queries with relevant documents), contracts and the outcome."""
    top = answer.ids[:k]
    values: dict[str, float] = {}
    if query.relevant:
        for name in REPORTED_METRICS:
            values[name] = metrics.parse_metric(name).compute(top, query.relevant)
    found = tuple(doc_id for doc_id in top[:FLIP_DEPTH] if query.relevant.get(doc_id, 0) >= metrics.RELEVANCE_LEVEL)
    passages = tuple(answer.passages[:k]) if answer.passages is not None else None
    contracts = tuple(check_contracts(query, top, answer.scores[:k] if answer.scores is not None else None,
                                      passages=passages))
    passed = all(c.passed for c in contracts) and (not query.relevant or bool(found))
    if query.xfail:
        outcome = "xpass" if passed else "xfail"
    else:
        outcome = "pass" if passed else "fail"
    return QueryResult(
        qid=query.qid, query=query.query, category=query.category, split=query.split, ids=tuple(top),
        scores=tuple(answer.scores[:k]) if answer.scores is not None else None,
        latency_seconds=answer.latency_seconds, metrics=values, found=found,
        contracts=contracts, outcome=outcome, scored=query.scored, group=query.group, passages=passages,
        evidence=evidence.query_evidence(top, passages, query.evidence, query.canonical)
        if (query.evidence or query.canonical) else None,
    )


def check_contracts(query: Query, top: Sequence[str], scores: Sequence[float] | None, *,
                    passages: Sequence[tuple[int, int] | None] | None = None) -> Iterable[ContractResult]:
    """Each hard contract the query carries, checked against the top-k list (docs/sets.md)."""
    rank = {doc_id: position for position, doc_id in enumerate(top, start=1)}
    for doc_id in query.forbid:
        if doc_id in rank:
            yield ContractResult("forbid", False, f"forbidden {doc_id} at rank {rank[doc_id]}", doc_id)
        else:
            yield ContractResult("forbid", True, f"{doc_id} absent", doc_id)
    for rule in query.rank_before:
        before, after = rank.get(rule.before), rank.get(rule.after)
        subject = f"{rule.before}>{rule.after}"
        if before is None:
            yield ContractResult("rank_before", False, f"{rule.before} not retrieved (must rank above {rule.after})", subject)
        elif after is not None and after < before:
            yield ContractResult("rank_before", False, f"{rule.after} at rank {after} above {rule.before} at rank {before}",
                                 subject)
        else:
            yield ContractResult("rank_before", True, f"{rule.before} at rank {before} above {rule.after}", subject)
    if query.max_score is not None:
        yield _max_score_contract(query, top, scores)
    elif query.no_relevant:
        if top:
            yield ContractResult("no_relevant", False, f"returned {len(top)} ids for a query with no answer (first {top[0]})")
        else:
            yield ContractResult("no_relevant", True, "returned nothing")
    if query.forbid_stale_before_current:
        rank = evidence.first_stale_window(top, passages, query.evidence)
        if rank is None:
            yield ContractResult("stale_before_current", True, "no stale evidence shown above the current")
        else:
            yield ContractResult("stale_before_current", False,
                                 f"window at rank {rank} ({top[rank - 1]}) shows stale evidence above any current")


def _max_score_contract(query: Query, top: Sequence[str], scores: Sequence[float] | None) -> ContractResult:
    name = "no_relevant" if query.no_relevant else "max_score"
    if not top:
        return ContractResult(name, True, "returned nothing")
    if scores is None:
        return ContractResult(name, False, f"max_score {query.max_score} needs scores; the adapter returned none")
    over = [(doc_id, s) for doc_id, s in zip(top, scores) if s >= query.max_score]
    if over:
        doc_id, score = over[0]
        return ContractResult(name, False, f"{doc_id} scored {score:.4f} >= max_score {query.max_score}")
    return ContractResult(name, True, f"top score {scores[0]:.4f} < {query.max_score}")


def aggregate(results: Sequence[QueryResult]) -> dict[str, object]:
    """Means over scored queries: overall, per category, per split (each with its n)."""
    scored = [r for r in results if r.scored]
    by_category: dict[str, list[QueryResult]] = {}
    by_split: dict[str, list[QueryResult]] = {}
    for result in scored:
        by_category.setdefault(result.category, []).append(result)
        by_split.setdefault(result.split, []).append(result)
    summary: dict[str, object] = {
        "overall": mean_metrics(scored),
        "category": {name: mean_metrics(rows) for name, rows in sorted(by_category.items())},
        "split": {name: mean_metrics(rows) for name, rows in sorted(by_split.items())},
    }
    if any(r.evidence is not None for r in scored):
        summary["evidence"] = evidence_aggregates(scored, by_category, by_split)
    return summary


def evidence_aggregates(scored: Sequence[QueryResult], by_category: Mapping[str, Sequence[QueryResult]],
                        by_split: Mapping[str, Sequence[QueryResult]]) -> dict[str, object]:
    """The evidence metrics' means with their judged and null counts (scoring/evidence.py), per scope."""
    def rows(results: Sequence[QueryResult]) -> list:
        return [r.evidence for r in results if r.evidence is not None]
    return {"overall": evidence.aggregate_evidence(rows(scored)),
            "category": {name: evidence.aggregate_evidence(rows(v)) for name, v in sorted(by_category.items())},
            "split": {name: evidence.aggregate_evidence(rows(v)) for name, v in sorted(by_split.items())}}


def mean_metrics(rows: Sequence[QueryResult]) -> dict[str, float]:
    """{"n": count, metric: mean} for the reported metrics; an empty group has n 0 and no means."""
    summary: dict[str, float] = {"n": len(rows)}
    for name in REPORTED_METRICS:
        if rows:
            summary[name] = sum(r.metrics[name] for r in rows) / len(rows)
    return summary


def latency_summary(latencies_seconds: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / max in milliseconds, nearest-rank percentiles (docs/design.md)."""
    if not latencies_seconds:
        return {"n": 0}
    ms = [value * 1000 for value in latencies_seconds]
    return {"n": len(ms), "p50": metrics.percentile(ms, 50), "p95": metrics.percentile(ms, 95), "max": max(ms)}


def evaluate_set(query_set: QuerySet, answers: Mapping[str, Answer], k: int) -> SetResult:
    """Evaluate the queries that were answered; a set with unanswered queries is incomplete."""
    results = [evaluate_query(q, answers[q.qid], k) for q in query_set.queries if q.qid in answers]
    if any(q.evidence for q in query_set.queries):
        results = evidence.with_windows_shown(results, query_set)
    return SetResult(
        name=query_set.name, kind=query_set.kind, revision=query_set.revision,
        corpus_hash=query_set.corpus_hash, k=k, query_count=len(query_set.queries),
        complete=len(results) == len(query_set.queries), aggregates=aggregate(results),
        latency_ms=latency_summary([r.latency_seconds for r in results]), queries=tuple(results),
    )
