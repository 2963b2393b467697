"""A precomputed TREC run read as an input (`--run-file`, in place of an adapter), and the TREC spelling of qids.

The format is trec_eval's (harness/report/trec.py writes it). A query is `SET:QID` when several
sets share a file, else its own qid; a run's query is found under either (`run_scores`). A run
is read as pytrec_eval reads one, qid -> {docid: score}: trec_eval ranks by score, ignoring the
rank column, so the ranking is a scoring rule (`scoring.metrics.trec_eval_order`) applied
where the run becomes answers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from harness.errors import UsageError
from harness.fsutil import open_regular
from harness.records import QuerySet
from harness.sets.corpus import _label

SET_SEPARATOR = ":"  # between set name and qid when a file holds several sets
Run = dict[str, dict[str, float]]  # qid -> {docid: score}, as written


def trec_qid(set_name: str, qid: str, prefixed: bool) -> str:
    """The query id in a TREC file: `SET:QID` when several sets share the file."""
    return f"{set_name}{SET_SEPARATOR}{qid}" if prefixed else qid


def read_run(path: Path) -> Run:
    """Parse a TREC run: qid -> {docid: score}, the scores as written.

    The rank, Q0 and tag columns are ignored (as trec_eval ignores them). A malformed line, a
    non-finite score or a docid listed twice for one query raises UsageError naming
    file:line:field.
    """
    label = _label(path)
    run: Run = {}
    lines: dict[tuple[str, str], int] = {}
    for number, fields in _fields(path, label):
        where = f"{label}:{number}"
        if len(fields) != 6:
            raise UsageError(f"{where}: expected 6 fields 'qid Q0 docid rank score tag', got {len(fields)}")
        qid, _, doc_id, rank, score_text, _ = fields
        try:
            int(rank)
        except ValueError:
            raise UsageError(f"{where}: rank: {rank!r} is not an integer") from None
        try:
            score = float(score_text)
        except ValueError:
            raise UsageError(f"{where}: score: {score_text!r} is not a number") from None
        if not math.isfinite(score):
            raise UsageError(f"{where}: score: {score_text!r} is not finite")
        if (qid, doc_id) in lines:
            raise UsageError(f"{where}: docid: {doc_id!r} already listed for query {qid!r} on line {lines[qid, doc_id]}")
        lines[qid, doc_id] = number
        run.setdefault(qid, {})[doc_id] = score
    return run


def run_scores(run: Mapping[str, dict[str, float]], set_name: str, qid: str) -> dict[str, float] | None:
    """A query's {docid: score} in a run, under `SET:QID` first, then its bare qid; None when absent."""
    entry = run.get(trec_qid(set_name, qid, True))
    return entry if entry is not None else run.get(qid)


def missing_from_run(run: Mapping[str, dict[str, float]], query_set: QuerySet) -> list[str]:
    """qids of `query_set` the run has no line for, under either spelling (set order)."""
    return [q.qid for q in query_set.queries if run_scores(run, query_set.name, q.qid) is None]


def unknown_in_run(run: Mapping[str, object], query_sets: Sequence[QuerySet]) -> list[str]:
    """Run qids that match no query of `query_sets` under either spelling (sorted)."""
    known = {spelling for query_set in query_sets for query in query_set.queries
             for spelling in (query.qid, trec_qid(query_set.name, query.qid, True))}
    return sorted(qid for qid in run if qid not in known)


def _fields(path: Path, label: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, whitespace-separated fields) of each non-blank line; blank lines are skipped."""
    with open_regular(path, UsageError, label) as handle:  # a FIFO or device is refused, not read forever
        for number, raw in enumerate(handle, start=1):
            try:
                # bytes.split() cuts at ASCII whitespace only, as trec_eval does.
                fields = [field.decode("utf-8") for field in raw.split()]
            except UnicodeDecodeError:
                raise UsageError(f"{label}:{number}: line is not valid UTF-8") from None
            if fields:
                yield number, fields
