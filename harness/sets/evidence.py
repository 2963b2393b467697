"""Parse and validate a query's evidence fields: reviewed spans, intent, canonical pages (docs/sets.md).

Called by the loader. Every problem is one SetError line naming the query line and field;
a span whose text no longer matches its document is drift (exit 2), never a scored regression.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import TypedDict

from harness.errors import SetError
from harness.records import Document, EvidenceSpan, Query
from harness.quoting import preview

LABELS = ("current", "stale", "mixed", "neither", "unjudgeable")
INTENTS = ("current", "historical")
SPAN_FIELDS = ("doc", "start", "end", "text", "label", "supports_answer")
QUERY_FIELDS = ("evidence", "intent", "canonical", "forbid_stale_before_current")
_ISO_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")


class QueryEvidence(TypedDict):
    """The evidence fields of a Query, as its keyword arguments."""

    evidence: tuple[EvidenceSpan, ...]
    intent: str | None
    canonical: tuple[str, ...]
    forbid_stale_before_current: bool


def parse_query_fields(obj: Mapping[str, object], relevant: Mapping[str, int], where: str) -> QueryEvidence:
    """The Query keyword arguments for the evidence fields of one queries.jsonl object.

    Checks shapes and the rules that need no corpus: labels, offsets, intent with its ISO date,
    canonical a subset of the relevant ids, the stale contract needing a stale span.
    """
    spans = _spans(obj.get("evidence", []), where)
    intent = obj.get("intent")
    if intent is not None:
        if not isinstance(intent, str) or intent not in INTENTS:
            raise SetError(f"{where}: intent: {intent!r} is not one of {', '.join(INTENTS)}")
        if intent == "historical" and not query_dates(str(obj.get("query", ""))):
            raise SetError(f"{where}: intent: historical queries must name an ISO date (YYYY-MM-DD) in the query text")
    canonical = obj.get("canonical", [])
    if not isinstance(canonical, list) or not all(isinstance(v, str) and v for v in canonical):
        raise SetError(f"{where}: canonical: must be a list of document ids")
    for doc_id in canonical:
        if doc_id not in relevant:
            raise SetError(f"{where}: canonical: {doc_id!r} is not one of the query's relevant ids")
    if len(set(canonical)) != len(canonical):
        raise SetError(f"{where}: canonical: repeats an id")
    forbid = obj.get("forbid_stale_before_current", False)
    if not isinstance(forbid, bool):
        raise SetError(f"{where}: forbid_stale_before_current: must be true or false")
    if forbid and not any(span.label == "stale" for span in spans):
        raise SetError(f"{where}: forbid_stale_before_current: the query has no span labelled stale")
    return QueryEvidence(evidence=spans, intent=intent, canonical=tuple(canonical),
                         forbid_stale_before_current=forbid)


def passage_hint(meta: Mapping[str, object], where: str) -> dict[str, int] | None:
    """set.json `passages`: `{"window": N, "overlap": M}` asks the reference adapters to show windows.

    The harness writes it beside the materialised corpus as `<kind>.passages.json`
    (adapters/passages.py reads it in `--passages auto` mode, the default).
    """
    hint = meta.get("passages")
    if hint is None:
        return None
    if (not isinstance(hint, dict) or set(hint) != {"window", "overlap"}
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in hint.values())
            or not 0 <= hint["overlap"] < hint["window"]):
        raise SetError(f"{where}: passages: must be {{\"window\": N, \"overlap\": M}} with integers 0 <= M < N")
    return dict(hint)


def evidence_ids(query: Query) -> set[str]:
    """The documents a query's evidence and canonical pages name (pinned like the relevant ones)."""
    return {span.doc for span in query.evidence} | set(query.canonical)


def check_against_corpus(query: Query, by_id: Mapping[str, Document], where: str) -> None:
    """Every span inside its document and its text equal to the document's characters there."""
    for index, span in enumerate(query.evidence):
        field = f"evidence[{index}]"
        document = by_id.get(span.doc)
        if document is None:
            raise SetError(f"{where}: {field}: doc {span.doc!r} is not in the corpus")
        if span.end > len(document.text):
            raise SetError(f"{where}: {field}: end {span.end} is past the end of {span.doc!r} "
                           f"({len(document.text)} characters; query {query.qid})")
        found = document.text[span.start:span.end]
        if found != span.text:
            raise SetError(f"{where}: {field}: span text drifted in {span.doc!r} at offset {span.start} "
                           f"(query {query.qid}): expected {preview(span.text, 40)}, the corpus has {preview(found, 40)}")


def check_groups(queries: Sequence[Query], label: str) -> None:
    """Queries sharing a group (translations, paraphrases) ask about the same dates and intent."""
    first: dict[str, Query] = {}
    for query in queries:
        if query.group is None or query.intent is None:
            continue
        other = first.setdefault(query.group, query)
        if other is query:
            continue
        if query.intent != other.intent:
            raise SetError(f"{label}:{query.line}: intent: {query.intent!r} differs from {other.intent!r} "
                           f"of {other.qid} in group {query.group!r}")
        if query_dates(query.query) != query_dates(other.query):
            raise SetError(f"{label}:{query.line}: query: names dates {sorted(query_dates(query.query))} "
                           f"but {other.qid} in group {query.group!r} names {sorted(query_dates(other.query))}")


def query_dates(text: str) -> frozenset[str]:
    """The valid ISO dates (YYYY-MM-DD) a query's text names."""
    found = set()
    for candidate in _ISO_DATE.findall(text):
        try:
            date.fromisoformat(candidate)
        except ValueError:
            continue
        found.add(candidate)
    return frozenset(found)


def _spans(value: object, where: str) -> tuple[EvidenceSpan, ...]:
    if not isinstance(value, list):
        raise SetError(f"{where}: evidence: must be a list of spans {{{', '.join(SPAN_FIELDS)}}}")
    return tuple(_span(item, f"{where}: evidence[{index}]") for index, item in enumerate(value))


def _span(item: object, where: str) -> EvidenceSpan:
    if not isinstance(item, dict):
        raise SetError(f"{where}: must be an object with {', '.join(SPAN_FIELDS)}")
    missing = [name for name in SPAN_FIELDS if name not in item]
    if missing:
        raise SetError(f"{where}: {missing[0]}: missing")
    unknown = sorted(set(item) - set(SPAN_FIELDS))
    if unknown:
        raise SetError(f"{where}: {unknown[0]!r}: unknown field (known: {', '.join(SPAN_FIELDS)})")
    doc, start, end, text = item["doc"], item["start"], item["end"], item["text"]
    if not isinstance(doc, str) or not doc:
        raise SetError(f"{where}: doc: must be a document id")
    for name, number in (("start", start), ("end", end)):
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise SetError(f"{where}: {name}: must be an integer >= 0")
    if end <= start:
        raise SetError(f"{where}: end: must be greater than start ({start}), got {end}")
    if not isinstance(text, str) or len(text) != end - start:
        raise SetError(f"{where}: text: must be the {end - start} characters from start to end")
    if item["label"] not in LABELS:
        raise SetError(f"{where}: label: {item['label']!r} is not one of {', '.join(LABELS)}")
    if not isinstance(item["supports_answer"], bool):
        raise SetError(f"{where}: supports_answer: must be true or false")
    return EvidenceSpan(doc=doc, start=start, end=end, text=text, label=item["label"],
                        supports_answer=item["supports_answer"])


