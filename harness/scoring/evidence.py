"""Exposed-evidence metrics: does the window a backend shows expose the current answer?

Pure functions over a query's reviewed spans (records.EvidenceSpan) and the hits' windows.
Definitions (docs/sets.md, "Evidence"):

- A window is `(doc, start, end)`, characters of the document's text, end exclusive; a hit
  shown whole has the window `(doc, 0, inf)`. A window *exposes* a span of the same document
  when it contains the whole span (`start <= span.start and span.end <= end`): a window that
  cuts a span exposes nothing of it, and a correction just outside the window earns nothing.
- *Current evidence*: a span labelled `current` with `supports_answer` true. Labels are
  relative to the time the query asks about (now, or the date a historical query names).
- The verdict of a list of windows: 1 when one exposes current evidence; None (unjudgeable)
  when every span they expose, `neither` spans aside, is labelled `unjudgeable` and there is
  at least one; 0 otherwise (stale, mixed, current-but-not-supporting, or nothing exposed).
- `answer_hit@k`: the verdict of the top k windows. `ku@1`: the verdict of the first window
  (an empty ranking is 0).
- `stale_before_current` (`mixed_before_current`): 1 when a window exposing a `stale`
  (`mixed`) span ranks above the first window exposing current evidence, or such a window is
  shown and no current evidence is; judged (else None) only on queries with such a span.
- `canonical_hit@10`, `canonical_mrr` (reciprocal rank cut at 10): document-level, on the
  query's canonical pages; None when it has none.
- Each exposed-evidence metric also has a `full_` twin computed with every hit shown whole,
  so visible-excerpt and full-source judgments sit side by side and are never mixed.

Null stays null: `aggregate_evidence` leaves None out of the mean and counts it apart.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from harness.measured import EvidenceFigure
from harness.scoring.metrics import evidence_measure_names
from harness.records import EvidenceSpan, QueryResult, QuerySet

SHOWN_CHARACTERS = 2000  # a whole document shown as the first hit is cut here in the report
Window = tuple[str, float, float]  # (doc id, start, end); end may be math.inf (whole document)
ANSWER_HIT_DEPTHS = (1, 5, 10)
CANONICAL_DEPTH = 10


def windows_of(ids: Sequence[str], passages: Sequence[tuple[int, int] | None] | None) -> list[Window]:
    """The window each hit shows: its passage, or the whole document when none (or None) is given."""
    shown = list(passages) if passages is not None else []
    shown += [None] * (len(ids) - len(shown))
    return [(doc_id, *window) if window is not None else (doc_id, 0, math.inf) for doc_id, window in zip(ids, shown)]


def exposed(window: Window, spans: Sequence[EvidenceSpan]) -> list[EvidenceSpan]:
    """The spans the window contains whole."""
    doc_id, start, end = window
    return [span for span in spans if span.doc == doc_id and start <= span.start and span.end <= end]


def is_current_evidence(span: EvidenceSpan) -> bool:
    return span.label == "current" and span.supports_answer


def exposure_verdict(windows: Sequence[Window], spans: Sequence[EvidenceSpan]) -> int | None:
    """1 current evidence exposed; None only unjudgeable evidence exposed; 0 otherwise."""
    shown = [span for window in windows for span in exposed(window, spans)]
    if any(is_current_evidence(span) for span in shown):
        return 1
    judged = [span for span in shown if span.label != "neither"]
    if judged and all(span.label == "unjudgeable" for span in judged):
        return None
    return 0


def before_current(windows: Sequence[Window], spans: Sequence[EvidenceSpan], label: str) -> int | None:
    """1 when a window exposing a `label` span ranks above the first exposing current evidence.

    None when the query has no span with that label (nothing to judge).
    """
    if not any(span.label == label for span in spans):
        return None
    return 0 if first_window_before_current(windows, spans, label) is None else 1


def first_window_before_current(windows: Sequence[Window], spans: Sequence[EvidenceSpan], label: str) -> int | None:
    """The 1-based rank of the first window exposing a `label` span above any exposing current evidence."""
    for rank, window in enumerate(windows, start=1):
        shown = exposed(window, spans)
        if any(is_current_evidence(span) for span in shown):
            return None  # a tie (both in one window) is not "before"
        if any(span.label == label for span in shown):
            return rank
    return None


def canonical_figures(ids: Sequence[str], canonical: Sequence[str]) -> dict[str, float | None]:
    """canonical_hit@10 and canonical_mrr (reciprocal rank of the first canonical page, cut at 10)."""
    if not canonical:
        return {"canonical_hit@10": None, "canonical_mrr": None}
    wanted = set(canonical)
    rank = next((position for position, doc_id in enumerate(ids[:CANONICAL_DEPTH], start=1) if doc_id in wanted), None)
    return {"canonical_hit@10": 1.0 if rank is not None else 0.0,
            "canonical_mrr": 1.0 / rank if rank is not None else 0.0}


def exposure_figures(windows: Sequence[Window], spans: Sequence[EvidenceSpan], prefix: str = "") -> dict[str, float | None]:
    """answer_hit@1/5/10, ku@1 and the two before-current figures for one list of windows."""
    values = {f"{prefix}answer_hit@{depth}": _float(exposure_verdict(windows[:depth], spans)) for depth in ANSWER_HIT_DEPTHS}
    values[f"{prefix}ku@1"] = _float(exposure_verdict(windows[:1], spans)) if windows else 0.0
    values[f"{prefix}stale_before_current"] = _float(before_current(windows, spans, "stale"))
    values[f"{prefix}mixed_before_current"] = _float(before_current(windows, spans, "mixed"))
    return values


def query_evidence(ids: Sequence[str], passages: Sequence[tuple[int, int] | None] | None,
                   spans: Sequence[EvidenceSpan], canonical: Sequence[str]) -> dict[str, float | None]:
    """Every evidence metric of one query, in `metrics.evidence_measure_names()` order (None: not judged).

    `ids` are the top-k hits best first; `passages` parallel to them (or None: all shown whole).
    A query without spans gets None for the exposure figures.
    """
    values = {**exposure_figures(windows_of(ids, passages), spans),
              **exposure_figures(windows_of(ids, None), spans, "full_")}
    if not spans:  # nothing to expose: every exposure figure unjudged
        values = dict.fromkeys(values)
    values.update(canonical_figures(ids, canonical))
    return values


def aggregate_evidence(rows: Sequence[Mapping[str, float | None]]) -> dict[str, EvidenceFigure]:
    """Per metric: the mean over the judged rows (None when none is), judged, null and the sum.

    `rows` are the per-query evidence dicts of the scored queries that have one. A None value is
    counted in `null` and left out of the mean: never averaged in as a zero or a one.
    """
    summary: dict[str, EvidenceFigure] = {}
    for name in evidence_measure_names():
        values = [value for row in rows if (value := row.get(name)) is not None]
        total = sum(values)
        summary[name] = EvidenceFigure(mean=total / len(values) if values else None, judged=len(values),
                                       null=sum(1 for row in rows if row.get(name) is None), total=total)
    return summary


def _float(value: int | None) -> float | None:
    return None if value is None else float(value)


def window_shown(result: QueryResult, spans: Sequence[EvidenceSpan], text: str) -> dict[str, object]:
    """The first hit's window as the report shows it: its text and every span touching it,
    clipped, with offsets relative to the window (a cut span is drawn as far as it is visible)."""
    passage = result.passages[0] if result.passages else None
    start, end = passage if passage is not None else (0, min(len(text), SHOWN_CHARACTERS))
    touching = sorted(([max(span.start, start) - start, min(span.end, end) - start, span.label]
                       for span in spans if span.doc == result.ids[0] and span.start < end and span.end > start),
                      key=lambda item: (item[0], item[1]))
    return {"doc": result.ids[0], "start": start, "end": end, "text": text[start:end], "spans": touching}


def with_windows_shown(results: Sequence[QueryResult], query_set: QuerySet) -> list[QueryResult]:
    """`results` where each query whose first window did not expose current evidence carries it."""
    texts = {doc.id: doc.text for doc in query_set.documents}
    queries = {query.qid: query for query in query_set.queries}
    out = []
    for result in results:
        query = queries[result.qid]
        if (result.evidence is not None and query.evidence and result.ids and result.ids[0] in texts
                and result.evidence.get("ku@1") != 1.0):
            result = dataclasses.replace(result, window=window_shown(result, query.evidence, texts[result.ids[0]]))
        out.append(result)
    return out
