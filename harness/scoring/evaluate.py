"""Join a set's judgments with what the backend returned into a SetResult; never mutates inputs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.measured import UNJUDGED_COUNT, Aggregates, Latency, ScopeNumbers
from harness.scoring import evidence, metrics, ties
from harness.records import ContractResult, Query, QueryResult, QuerySet, SetResult

# The per-query and aggregate metrics every report carries, in column order: the ranking
# measures, then judged coverage (docs/sets.md, "Judged coverage"): judged@10, the share of the
# returned top 10 the set judges (grade >= 0), and nDCG@10 on Sakai's condensed list (unjudged
# ids removed) beside the ordinary nDCG@10. All are means in aggregates; none is gated by default.
REPORTED_METRICS = ("recall@5", "recall@10", "mrr", "ndcg@10", "precision@10", "hit@10",
                    "judged@10", "ndcg@10(condensed)")
# A count, not a ratio: per query the returned top-10 ids the set never judged; in aggregates
# the SUM over the scope's scored queries (how many unjudged documents the run returned).
# Never gated (`policy_metric_name` refuses it).
UNJUDGED_DEPTH = 10
# Measures with no per-query meaning for a query that has no relevant document: coverage
# (judged@10, unjudged@10) is still reported for such queries (negative probes).
COVERAGE_METRICS = ("judged@10",)
# The columns every table of a run or a comparison shows (console, Markdown, HTML, baselines).
TABLE_METRICS = REPORTED_METRICS[:4]
# Bump when any metric's definition changes: reports with different versions are not comparable.
METRIC_DEFINITIONS = {"version": metrics.DEFINITIONS_VERSION, "metrics": list(REPORTED_METRICS) + [UNJUDGED_COUNT],
                      "notes": "trec_eval definitions; mrr = recip_rank cut at 10; ndcg gain = grade; "
                               "judged@10 = judged (grade >= 0) in the top 10 / 10; (condensed) = unjudged ids "
                               "removed first (trec_eval -J); unjudged@10 = count, summed in aggregates; "
                               "measures are computed on the ranking as returned, to the run's k"}
FLIP_DEPTH = 10  # "found" = relevant ids within this depth; a flip is one lost from it


@dataclass(frozen=True, slots=True)
class Answer:
    """What the backend returned for one query, and its end-to-end latency."""

    ids: tuple[str, ...]
    scores: tuple[float, ...] | None
    latency_seconds: float
    passages: tuple[tuple[int, int] | None, ...] | None = None  # per hit (docs/adapters.md, "Passages")


def report_metric_name(name: str) -> str:
    """The report's key for a metric named in any accepted spelling (`R@10`, `nDCG@10`, `RR@10`, `mrr`).

    Raises ValueError when the name is unknown or not one the reports carry per query.
    """
    key = metrics.parse_metric(name).name  # RR@10's canonical name is mrr
    if key not in REPORTED_METRICS:
        raise ValueError(f"{name!r} ({key}) is not kept per query in reports; "
                         f"choose one of {', '.join(REPORTED_METRICS)}")
    return key


def policy_metric_name(name: str) -> str:
    """The report's key for a metric a gate policy names: any registry measure (`nDCG@20`, `AP@100`,
    `ndcg@10(condensed)`), with the reported ones keyed as reports key them (`RR@10` -> `mrr`).

    Runs gated by that policy compute it per query and aggregate its mean (`evaluate_set`'s
    `metrics`). Raises ValueError for an unknown name and for the unjudged@10 count (never gated).
    """
    if name.strip().lower() == UNJUDGED_COUNT:
        raise ValueError(f"{name!r} is a count of unjudged documents, not a gated measure; gate judged@10 "
                         "coverage with the policy's judged.warn_drop_points")
    return metrics.parse_metric(name).name


def _measures(extra: Sequence[str]) -> tuple[str, ...]:
    """The reported metrics, then the extra (policy) ones not already among them, as canonical names
    (an evidence measure is left out: every query with evidence carries all of them anyway)."""
    parsed = (metrics.parse_metric(policy_metric_name(name)) for name in extra)
    return tuple(dict.fromkeys(REPORTED_METRICS + tuple(m.name for m in parsed if not m.nullable)))


def evaluate_query(query: Query, answer: Answer, k: int, metrics_computed: Sequence[str] = REPORTED_METRICS) -> QueryResult:
    """Metrics, contracts and the outcome of one answered query.

    Ranking measures (`metrics_computed`: the reported ones plus any a gate policy names, each
    on the ranking as returned, cut at k) only for queries with a relevant (grade >= 1)
    document; judged coverage (judged@10, unjudged@10) for every query. `tied` counts the
    positions whose score equals the previous position's (0 without scores).
    """
    top = answer.ids[:k]
    scores = tuple(answer.scores[:k]) if answer.scores is not None else None
    has_relevant = any(grade >= metrics.RELEVANCE_LEVEL for grade in query.relevant.values())
    values = metrics.compute_many(metrics_computed if has_relevant else COVERAGE_METRICS, top, query.relevant,
                                  scores=scores)
    values[UNJUDGED_COUNT] = sum(1 for doc_id in top[:UNJUDGED_DEPTH] if query.relevant.get(doc_id, -1) < 0)
    found = tuple(doc_id for doc_id in top[:FLIP_DEPTH] if query.relevant.get(doc_id, 0) >= metrics.RELEVANCE_LEVEL)
    passages = tuple(answer.passages[:k]) if answer.passages is not None else None
    contracts = tuple(check_contracts(query, top, scores, passages=passages))
    passed = all(c.passed for c in contracts) and (not has_relevant or bool(found))
    outcome = ("xpass" if passed else "xfail") if query.xfail else ("pass" if passed else "fail")
    return QueryResult(
        qid=query.qid, query=query.query, category=query.category, split=query.split, ids=tuple(top),
        scores=scores, latency_seconds=answer.latency_seconds, metrics=values, found=found,
        tied=tied_positions(scores or ()),
        contracts=contracts, outcome=outcome, scored=query.scored, group=query.group, passages=passages,
        evidence=evidence.query_evidence(top, passages, query.evidence, query.canonical)
        if (query.evidence or query.canonical) else None,
    )


def tied_positions(scores: Sequence[float]) -> int:
    """Positions whose score equals the previous position's: where the scores do not fix the order."""
    return sum(1 for before, after in zip(scores, scores[1:]) if before == after)


def ranking_change(first_ids: Sequence[str], first_scores: Sequence[float] | None,
                   again_ids: Sequence[str]) -> str | None:
    """How a second answer to the same request differs from the first: None (the same list),
    "tied" (only documents the first answer scored equally swapped places) or "ranking".

    Ties are read from the first answer's scores; without scores any difference is "ranking".
    """
    if tuple(first_ids) == tuple(again_ids):
        return None
    if first_scores is None or len(first_scores) != len(first_ids) or len(first_ids) != len(again_ids):
        return "ranking"
    for start, end in ties.score_runs(first_scores, len(first_ids)):  # runs of equal scores, singletons included
        if set(first_ids[start - 1:end]) != set(again_ids[start - 1:end]):
            return "ranking"
    return "tied"


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
        yield _max_score_contract(query, top, scores, query.max_score)
    elif query.no_relevant:
        if top:
            yield ContractResult("no_relevant", False, f"returned {len(top)} ids for a query with no answer (first {top[0]})")
        else:
            yield ContractResult("no_relevant", True, "returned nothing")
    if query.forbid_stale_before_current:
        stale = evidence.first_window_before_current(evidence.windows_of(top, passages), query.evidence, "stale")
        if stale is None:
            yield ContractResult("stale_before_current", True, "no stale evidence shown above the current")
        else:
            yield ContractResult("stale_before_current", False,
                                 f"window at rank {stale} ({top[stale - 1]}) shows stale evidence above any current")


def _max_score_contract(query: Query, top: Sequence[str], scores: Sequence[float] | None,
                        limit: float) -> ContractResult:
    name = "no_relevant" if query.no_relevant else "max_score"
    if not top:
        return ContractResult(name, True, "returned nothing")
    if scores is None:
        return ContractResult(name, False, f"max_score {limit} needs scores; the adapter returned none")
    over = [(doc_id, s) for doc_id, s in zip(top, scores) if s >= limit]
    if over:
        doc_id, score = over[0]
        return ContractResult(name, False, f"{doc_id} scored {score:.4f} >= max_score {limit}")
    return ContractResult(name, True, f"top score {scores[0]:.4f} < {limit}")


def aggregate(results: Sequence[QueryResult], extra: Sequence[str] | None = None) -> Aggregates:
    """Means over scored queries: overall, per category, per split (each with its n).

    `extra`: metric keys beyond the reported ones (a gate policy's) to average too; None: every
    other key the scored rows all carry (so shards merged by `merge` keep the policy's metrics).
    """
    scored = [r for r in results if r.scored]
    if extra is None:
        carried = [name for name in (scored[0].metrics if scored else ())
                   if name not in REPORTED_METRICS and name != UNJUDGED_COUNT]
        extra = [name for name in carried if all(name in r.metrics for r in scored)]
    with_evidence = any(r.evidence is not None for r in scored)
    by_category: dict[str, list[QueryResult]] = {}
    by_split: dict[str, list[QueryResult]] = {}
    for result in scored:
        by_category.setdefault(result.category, []).append(result)
        by_split.setdefault(result.split, []).append(result)

    def scope(rows: Sequence[QueryResult]) -> ScopeNumbers:
        numbers = mean_metrics(rows, extra)
        if not with_evidence:
            return numbers
        figures = evidence.aggregate_evidence([r.evidence for r in rows if r.evidence is not None])
        return dataclasses.replace(numbers, evidence=figures)
    return Aggregates(overall=scope(scored),
                      category={name: scope(rows) for name, rows in sorted(by_category.items())},
                      split={name: scope(rows) for name, rows in sorted(by_split.items())})


def pooled_aggregate(results: Sequence[SetResult]) -> ScopeNumbers:
    """Means over every scored query of every set (each query weighs the same, whatever its set),
    with n, as `mean_metrics` gives them; unjudged@10 summed."""
    return aggregate([row for result in results for row in result.queries]).overall


def mean_metrics(rows: Sequence[QueryResult], extra: Sequence[str] = ()) -> ScopeNumbers:
    """n, the mean of the reported metrics (and `extra` keys), and unjudged@10 as a sum.

    An empty group has n 0 and no means. A metric some row lacks (a row read from an older
    report) is left out rather than averaged over fewer rows.
    """
    if not rows:
        return ScopeNumbers(n=0)
    means = {name: sum(r.metrics[name] for r in rows) / len(rows)
             for name in dict.fromkeys(REPORTED_METRICS + tuple(extra)) if all(name in r.metrics for r in rows)}
    unjudged = (sum(int(r.metrics[UNJUDGED_COUNT]) for r in rows)
                if all(UNJUDGED_COUNT in r.metrics for r in rows) else None)
    return ScopeNumbers(n=len(rows), means=means, unjudged=unjudged)


def latency_summary(latencies_seconds: Sequence[float]) -> Latency:
    """p50 / p95 / max in milliseconds, nearest-rank percentiles (docs/design.md), of the per-query
    latencies as a report records them, so a summary recomputed from a report (`merge`) is the same."""
    if not latencies_seconds:
        return Latency()
    ms = [round(value * 1000, 4) for value in latencies_seconds]  # as reports write each query's (0.1 µs)
    return Latency(n=len(ms), p50=metrics.percentile(ms, 50), p95=metrics.percentile(ms, 95), max=max(ms))


def with_base_latency(result: SetResult, base_seconds: Mapping[str, float]) -> SetResult:
    """`result` with the baseline's paired latency per query (seconds, by qid: docs/gate.md, "Paired latency")
    and its summary over those queries."""
    queries = tuple(dataclasses.replace(q, base_latency_seconds=base_seconds[q.qid]) for q in result.queries)
    summary = latency_summary([base_seconds[q.qid] for q in result.queries])
    return dataclasses.replace(result, queries=queries, base_latency=summary)


def evaluate_set(query_set: QuerySet, answers: Mapping[str, Answer], k: int, metrics: Sequence[str] = ()) -> SetResult:
    """Evaluate the queries that were answered; a set with unanswered queries is incomplete.

    `metrics`: measures beyond the reported ones to compute per query and aggregate (a gate
    policy's, any registry spelling; see `policy_metric_name`), on the ranking as returned.
    """
    computed = _measures(metrics)
    extra = computed[len(REPORTED_METRICS):]
    results = [evaluate_query(q, answers[q.qid], k, computed) for q in query_set.queries if q.qid in answers]
    if any(q.evidence for q in query_set.queries):
        results = evidence.with_windows_shown(results, query_set)
    return SetResult(
        name=query_set.name, kind=query_set.kind, revision=query_set.revision,
        corpus_hash=query_set.corpus_hash, k=k, query_count=len(query_set.queries),
        complete=len(results) == len(query_set.queries), aggregates=aggregate(results, extra),
        latency=latency_summary([r.latency_seconds for r in results]), queries=tuple(results),
    )
