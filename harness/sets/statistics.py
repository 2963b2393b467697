"""What `sets show` reports about a set: contract counts and lexical-overlap headroom."""

from __future__ import annotations

from collections import Counter

from harness.records import QuerySet
from harness.text import content_words


def contract_counts(query_set: QuerySet) -> Counter:
    """How many queries carry each kind of contract or marker."""
    contracts: Counter = Counter()
    for query in query_set.queries:
        contracts["forbid"] += bool(query.forbid)
        contracts["rank_before"] += bool(query.rank_before)
        contracts["no_relevant"] += query.no_relevant
        contracts["xfail"] += query.xfail
        contracts["measure_only"] += query.measure_only
        contracts["grouped"] += query.group is not None
    return contracts


def overlap_statistics(query_set: QuerySet) -> dict[str, float]:
    """Share of judged queries sharing no content word with any relevant document (headroom for
    semantic backends), and the mean share of query content words found in the relevant documents.
    Relevant is grade 1 or more: a grade-0 distractor worded like the query is not the answer."""
    texts = {doc.id: doc.text for doc in query_set.documents}
    judged = [q for q in query_set.queries if any(grade > 0 for grade in q.relevant.values())]
    zero = 0
    covered = []
    for query in judged:
        query_words = content_words(query.query)
        relevant_words = set().union(*(content_words(texts[doc_id])
                                       for doc_id, grade in query.relevant.items() if grade > 0))
        shared = query_words & relevant_words
        zero += not shared
        covered.append(len(shared) / len(query_words) if query_words else 0.0)
    return {"judged": len(judged), "zero_overlap": zero,
            "zero_overlap_share": zero / len(judged) if judged else 0.0,
            "mean_word_coverage": sum(covered) / len(covered) if covered else 0.0}
