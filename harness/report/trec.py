"""TREC export: a report's rankings as a run file and its sets' gold as qrels, for trec_eval.

Formats (what trec_eval reads; fields separated by any whitespace, so no id may contain any):
  run:   `qid Q0 docid rank score tag`, one retrieved document a line;
  qrels: `qid 0 docid grade`, one judgment a line.
Query ids are spelled as `--run-file` reads them back (harness/sets/trec_input.py `trec_qid`).

What trec_eval will and will not reproduce of a report:
- per query, every reported metric (recall@5/10 = recall_5/10, precision@10 = P_10,
  ndcg@10 = ndcg_cut_10, hit@10 = success_10, mrr = recip_rank when k <= 10, else
  recip_rank on the run cut at 10: `trec_eval -M 10`);
- scores: the adapter's own rounded to single precision (trec_eval 9.0.8 and pytrec_eval
  compare single-precision floats, trec_eval 10 doubles: the rounded value reads the same in
  both), except that trec_eval re-sorts by score and breaks ties by docno descending, so a
  tied document that would move is nudged just below the one before it (`write_run` returns
  how many, `ExportNotes`); a query without usable scores is written n, n-1, ..., 1.
  `--run-file` ranks as trec_eval 9.0.8 does (`scoring.metrics.trec_eval_order`);
- judged coverage: grade 0 judgments are written as qrels lines with grade 0;
- a query that returned nothing has no run line: give `trec_eval -c` so it counts as 0;
- negative probes (`no_relevant`) have no qrels line, so trec_eval skips them; xfail and
  measure_only queries are judged and trec_eval averages them too, unless the qrels are
  written for scored queries only (export `--scored-only`), which makes `trec_eval -c`
  means equal the report's overall aggregates.
"""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Sequence
from pathlib import Path

from harness.errors import UsageError
from harness.scoring.metrics import trec_eval_score
from harness.fsutil import atomic_write_text
from harness.strict_json import is_finite_number
from harness.records import QuerySet
from harness.sets.loader import load_set
from harness.sets.trec_input import trec_qid
from harness.report.document import Report
from harness.text import plural

DEFAULT_RUN_TAG = "retrieval-gate"


def run_lines(report: Report, run_tag: str = DEFAULT_RUN_TAG) -> tuple[list[str], ExportNotes]:
    """The run file's lines for every query of every set in `report` (see `write_run`), and what had
    to change in the scores to keep the adapter's order."""
    _check_token(run_tag, "run tag")
    prefixed = len(report.sets) > 1
    lines: list[str] = []
    nudged_queries = nudged_scores = max_ulps = synthetic = 0
    for result in report.sets:
        name = result.name
        for row in result.queries:
            where = f"set {name}: query {row.qid}"
            qid = _check_token(trec_qid(name, row.qid, prefixed), f"{where}: qid")
            ids = [_check_token(doc_id, f"{where}: id") for doc_id in row.ids]
            written, nudged, ulps = _strict_scores(ids, row.scores)
            if nudged < 0:
                synthetic += bool(ids)
            elif nudged:
                nudged_queries += 1
                nudged_scores += nudged
                max_ulps = max(max_ulps, ulps)
            for rank, (doc_id, score) in enumerate(zip(ids, written), start=1):
                lines.append(f"{qid} Q0 {doc_id} {rank} {_number(score)} {run_tag}")
    return lines, ExportNotes(nudged_queries, nudged_scores, max_ulps, synthetic)


def write_run(report: Report, path: Path, run_tag: str = DEFAULT_RUN_TAG) -> ExportNotes:
    """Write `report`'s rankings as a TREC run, atomically; return what was nudged (`ExportNotes`).

    The scores are written so that trec_eval, which re-sorts by score, keeps the adapter's order
    (`_strict_scores`). Ids or a tag containing whitespace (the format's separator) raise UsageError.
    """
    lines, notes = run_lines(report, run_tag)
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return notes


def write_qrels(query_sets: list[QuerySet], path: Path) -> None:
    """Write the sets' judgments as TREC qrels (`qid 0 docid grade`), atomically.

    Grade 0 (judged non-relevant) lines are written too; a negative probe may have only
    those, or none. qids are prefixed `SET:` when there are
    several sets, exactly as `write_run` does for a report over the same sets.
    """
    prefixed = len(query_sets) > 1
    lines: list[str] = []
    for query_set in query_sets:
        for query in query_set.queries:
            where = f"set {query_set.name}: query {query.qid}"
            qid = _check_token(trec_qid(query_set.name, query.qid, prefixed), f"{where}: qid")
            for doc_id, grade in query.relevant.items():
                lines.append(f"{qid} 0 {_check_token(doc_id, f'{where}: relevant')} {grade}\n")
    atomic_write_text(path, "".join(lines))


@dataclasses.dataclass(frozen=True)
class ExportNotes:
    """What `write_run` had to do to keep the adapter's order in a file trec_eval re-sorts.

    nudged_queries / nudged_scores: queries with tied scores in an order trec_eval would not
    keep (score desc, then docno desc) and the scores moved down to restore it, by at most
    `max_ulps` units in the last place each; synthetic_queries: queries with no usable scores
    (none, or not numbers in descending order), written as n, n-1, ..., 1.
    """

    nudged_queries: int = 0
    nudged_scores: int = 0
    max_ulps: int = 0
    synthetic_queries: int = 0

    def lines(self) -> list[str]:
        """The export's notes in words (nothing when the adapter's scores were written as they are)."""
        notes = []
        if self.nudged_queries:
            notes.append(f"export: {plural(self.nudged_queries, 'query', 'queries')} had tied scores in an order "
                         f"trec_eval would not keep; {plural(self.nudged_scores, 'score')} nudged by at most "
                         f"{plural(self.max_ulps, 'ulp')}")
        if self.synthetic_queries:
            notes.append(f"export: {plural(self.synthetic_queries, 'query', 'queries')} had no usable descending "
                         "scores; written as n, n-1, ..., 1 to keep the adapter's order")
        return notes


def _float_below(value: float) -> float:
    """The next single-precision float below `value` (itself a single-precision float), as a double."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if value > 0:
        bits -= 1
    elif value == 0:
        bits = 0x80000001  # the smallest negative subnormal
    else:
        bits += 1
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _strict_scores(ids: Sequence[str], scores: Sequence[float] | None) -> tuple[list[float], int, int]:
    """Scores trec_eval orders as the adapter did: (scores, positions nudged, largest nudge in ulps).

    trec_eval 9.x and pytrec_eval sort by score descending comparing scores in single precision
    (their `float sim`); trec_eval 10.x compares the doubles; both break ties by docno
    descending. So every score is first rounded to single precision (written as the exact
    double of that float, which both read as the same value), then a document that would jump
    above the one before it (a tie whose docno order disagrees, or doubles equal in single
    precision) is moved just below that one: the next single-precision float down, so the
    nudge is counted in single-precision ulps. Later documents follow it down only as far as
    they must. Writing an unrounded double after a nudge could leave it between the nudged
    float and the tie, which a double comparison reorders and a float one does not. Scores
    absent, non-finite, beyond single range or not non-increasing give n, n-1, ..., 1
    (positions nudged = -1).
    """
    if scores is None or len(scores) != len(ids) or not all(
            is_finite_number(s) and math.isfinite(trec_eval_score(s)) for s in scores) or any(
            a < b for a, b in zip(scores, scores[1:])):
        return [float(len(ids) - index) for index in range(len(ids))], -1, 0
    written = [trec_eval_score(s) for s in scores]  # what every trec_eval reads alike
    nudged = max_ulps = 0
    for index in range(1, len(written)):
        before, now = written[index - 1], written[index]
        if now < before or (now == before and ids[index] < ids[index - 1]):
            continue  # trec_eval keeps this pair in the adapter's order
        value = _float_below(before)
        if not math.isfinite(value):  # no room below the lowest float: fall back to n, n-1, ..., 1
            return [float(len(ids) - i) for i in range(len(ids))], -1, 0
        steps = _ulps_between(now, value)  # from the score trec_eval would have read
        written[index] = value
        nudged += 1
        max_ulps = max(max_ulps, steps)
    return written, nudged, max_ulps


def _ulps_between(high: float, low: float) -> int:
    """Single-precision steps from `high` down to `low` (both single-precision floats, high >= low)."""
    def ordinal(x: float) -> int:
        bits = struct.unpack("<i", struct.pack("<f", x))[0]
        return bits if bits >= 0 else -(bits & 0x7FFFFFFF)
    return ordinal(high) - ordinal(low)


def _number(score: float) -> str:
    """Shortest text that reads back as the same double; whole numbers without '.0'."""
    return str(int(score)) if score.is_integer() and abs(score) < 1e15 else repr(score)


def _check_token(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or any(ch.isspace() for ch in value):
        raise UsageError(f"{what}: {value!r} is empty or contains whitespace, which the TREC format "
                         f"uses as its separator")
    return value


# -- a report's sets, for export -------------------------------------------------------------------

def scored_rows_only(report: Report) -> Report:
    """A copy of `report` whose sets keep only the rows counted in aggregates."""
    sets = tuple(dataclasses.replace(s, queries=tuple(row for row in s.queries if row.scored)) for s in report.sets)
    return dataclasses.replace(report, sets=sets)


def report_sets(report: Report, report_path: Path, sets_dirs: Sequence[Path], *, offline: bool = False) -> list[QuerySet]:
    """The sets a report measured, in its order, loaded from the recorded paths (or `DIR/NAME`, each of `sets_dirs`).

    A set whose revision or corpus hash differs from what the report recorded is refused:
    its gold is not the gold the report was scored against.
    """
    recorded = report.provenance.sets
    query_sets = []
    for set_report in report.sets:
        name = set_report.name
        entry = recorded.get(name)
        candidates = [Path(entry.path)] if entry is not None and entry.path else []
        candidates.extend(folder / name for folder in sets_dirs)
        folder = next((c for c in candidates if (c / "set.json").is_file()), None)
        if folder is None:
            raise UsageError(f"{report_path}: set {name}: no set.json at {' or '.join(str(c) for c in candidates)}; "
                             f"run from the folder the report was made in, or give --sets-dir")
        query_set = load_set(folder, offline=offline)
        for field in ("revision", "corpus_hash"):
            now, then = getattr(query_set, field), getattr(set_report, field)
            if now != then:
                raise UsageError(f"{report_path}: set {name}: {field} is {then!r} in the report but {now!r} "
                                 f"in {folder}; export the qrels from a checkout of the measured set")
        query_sets.append(query_set)
    return query_sets
