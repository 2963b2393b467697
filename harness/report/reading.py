"""Read back a JSON run report (--out) for compare and export: every field they use checked, one line each.

A report is output, but as an input it is untrusted (hand-edited, truncated, another
version): `check_report` walks the structure once, so later code indexes it without
KeyError or TypeError. Errors are UsageError (exit 2) `FILE: sets[0].queries[3].ids: why`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from harness.errors import BaselineError, UsageError
from harness.fsutil import read_json_file
from harness.gating.baseline import BASELINE_FORMAT, check_baseline
from harness.report.document import REPORT_FORMAT

OUTCOMES = ("pass", "fail", "xfail", "xpass")


def read_report(path: Path) -> dict:
    """A run report read from `path` and checked by `check_report`; UsageError naming file and field."""
    return check_report(read_json_file(path, UsageError, str(path), what="run report"), str(path))


def read_report_or_baseline(path: Path) -> dict:
    """What `compare` reads: a run report (checked here) or a baseline (checked by gating.baseline).

    A baseline defect is reported as UsageError too: for `compare` both are inputs named on
    the command line.
    """
    document = read_json_file(path, UsageError, str(path), what="report or baseline")
    if isinstance(document, dict) and "report_format" in document:
        return check_report(document, str(path))
    if isinstance(document, dict) and document.get("format") == BASELINE_FORMAT:
        try:
            return check_baseline(document, str(path))
        except BaselineError as exc:
            raise UsageError(str(exc)) from None
    raise UsageError(f"{path}: neither a retrieval-gate report nor a baseline")


def check_report(document: object, label: str) -> dict:
    """Validate the fields compare, export and the renderers read; return the document.

    Checked: `report_format` (this version), `complete` (bool), `provenance` (object, with
    `backend` an object whose `label` is a string or null, optional `sets` an object of
    objects whose `path` is a string), `sets` (list of set reports with a unique safe `name`,
    `revision`, `corpus_hash`, `k`, `query_count`, `complete`, `aggregates`, `latency_ms`,
    `queries`), each query row (`qid` unique, `query`, `ids` a list of unique strings,
    `scores` null or as many finite numbers, `metrics` finite numbers, `found` strings,
    `scored` bool, `outcome`, `category`/`split`/`group` strings or null), `gates` (list of
    objects with `set`, `gate`, `passed`, `message`). No string may hold a lone surrogate.
    """
    _Checker(label).report(document)
    return document  # type: ignore[return-value]


class _Checker:
    def __init__(self, label: str) -> None:
        self.label = label

    def fail(self, where: str, why: str) -> UsageError:
        return UsageError(f"{self.label}: {where}: {why}" if where else f"{self.label}: {why}")

    def report(self, document: object) -> None:
        if not isinstance(document, dict) or "report_format" not in document:
            raise self.fail("", "not a retrieval-gate run report (written by a run's --out)")
        if document["report_format"] != REPORT_FORMAT or type(document["report_format"]) is not int:
            raise self.fail("report_format", f"expected {REPORT_FORMAT}, got {_preview(document['report_format'])}")
        self.flag(document, "complete", "")
        provenance = self.mapping(document, "provenance", "")
        backend = self.mapping(provenance, "backend", "provenance")
        if backend.get("label") is not None:
            self.text(backend, "label", "provenance.backend")
        recorded = provenance.get("sets")
        if recorded is not None:
            if not isinstance(recorded, dict):
                raise self.fail("provenance.sets", "must be an object")
            for name, entry in recorded.items():
                where = f"provenance.sets.{_key(name)}"
                if not isinstance(entry, dict):
                    raise self.fail(where, "must be an object")
                if entry.get("path") is not None:
                    self.text(entry, "path", where)
        sets = document.get("sets")
        if not isinstance(sets, list):
            raise self.fail("sets", "missing or not a list")
        names: set[str] = set()
        for index, set_report in enumerate(sets):
            where = f"sets[{index}]"
            if not isinstance(set_report, dict):
                raise self.fail(where, "must be an object")
            name = self.text(set_report, "name", where)
            if name in names:
                raise self.fail(f"{where}.name", f"{_preview(name)} appears twice")
            names.add(name)
            self.set_report(set_report, where)
        gates = document.get("gates", [])
        if not isinstance(gates, list):
            raise self.fail("gates", "must be a list")
        for index, gate in enumerate(gates):
            where = f"gates[{index}]"
            if not isinstance(gate, dict):
                raise self.fail(where, "must be an object")
            for field in ("set", "gate", "message"):
                self.text(gate, field, where)
            self.flag(gate, "passed", where)

    def set_report(self, set_report: Mapping, where: str) -> None:
        for field in ("revision", "k", "query_count"):
            self.integer(set_report, field, where)
        self.text(set_report, "corpus_hash", where)
        self.flag(set_report, "complete", where)
        aggregates = self.mapping(set_report, "aggregates", where)
        self.numbers(self.mapping(aggregates, "overall", f"{where}.aggregates"), f"{where}.aggregates.overall")
        for key in ("category", "split"):
            scopes = self.mapping(aggregates, key, f"{where}.aggregates")
            for scope, values in scopes.items():
                if not isinstance(values, dict):
                    raise self.fail(f"{where}.aggregates.{key}.{_key(scope)}", "must be an object")
                self.numbers(values, f"{where}.aggregates.{key}.{_key(scope)}")
        self.numbers(self.mapping(set_report, "latency_ms", where), f"{where}.latency_ms")
        rows = set_report.get("queries")
        if not isinstance(rows, list):
            raise self.fail(f"{where}.queries", "missing or not a list")
        qids: set[str] = set()
        for index, row in enumerate(rows):
            here = f"{where}.queries[{index}]"
            if not isinstance(row, dict):
                raise self.fail(here, "must be an object")
            qid = self.text(row, "qid", here)
            if qid in qids:
                raise self.fail(f"{here}.qid", f"{_preview(qid)} appears twice")
            qids.add(qid)
            self.row(row, here)

    def row(self, row: Mapping, where: str) -> None:
        self.text(row, "query", where, empty=True)
        ids = self.id_list(row, "ids", where)
        if len(set(ids)) != len(ids):
            raise self.fail(f"{where}.ids", "repeats a document id")
        scores = row.get("scores")
        if scores is not None:
            if not isinstance(scores, list) or len(scores) != len(ids):
                raise self.fail(f"{where}.scores", "must be null or a list as long as ids")
            for score in scores:
                if not _finite(score):
                    raise self.fail(f"{where}.scores", f"must be finite numbers, got {_preview(score)}")
        self.numbers(self.mapping(row, "metrics", where), f"{where}.metrics")
        self.id_list(row, "found", where)
        self.flag(row, "scored", where)
        outcome = row.get("outcome")
        if outcome not in OUTCOMES:
            raise self.fail(f"{where}.outcome", f"{_preview(outcome)} is not one of {', '.join(OUTCOMES)}")
        for field in ("category", "split", "group"):
            if row.get(field) is not None:
                self.text(row, field, where)

    # -- field checkers: each returns the value, or raises naming `where.field` --------------------

    def mapping(self, parent: Mapping, field: str, where: str) -> dict:
        value = parent.get(field)
        if not isinstance(value, dict):
            raise self.fail(_join(where, field), "missing or not an object")
        return value

    def text(self, parent: Mapping, field: str, where: str, *, empty: bool = False) -> str:
        value = parent.get(field)
        if not isinstance(value, str) or (not value and not empty):
            raise self.fail(_join(where, field), "missing or not a non-empty string" if not empty
                            else "missing or not a string")
        if not _is_text(value):
            raise self.fail(_join(where, field), "holds a lone surrogate, not text")
        return value

    def flag(self, parent: Mapping, field: str, where: str) -> bool:
        value = parent.get(field)
        if not isinstance(value, bool):
            raise self.fail(_join(where, field), "missing or not true/false")
        return value

    def integer(self, parent: Mapping, field: str, where: str) -> int:
        value = parent.get(field)
        if type(value) is not int:
            raise self.fail(_join(where, field), "missing or not an integer")
        return value

    def id_list(self, parent: Mapping, field: str, where: str) -> list[str]:
        value = parent.get(field)
        # A string is iterable too: "abc" must not pass as the ids 'a', 'b', 'c'.
        if not isinstance(value, list):
            raise self.fail(_join(where, field), f"must be a list of document ids, got {type(value).__name__}")
        for item in value:
            if not isinstance(item, str) or not item or not _is_text(item):
                raise self.fail(_join(where, field), f"must be a list of document ids, holds {_preview(item)}")
        return value

    def numbers(self, values: Mapping, where: str) -> None:
        for name, value in values.items():
            if not _finite(value):
                raise self.fail(f"{where}.{_key(name)}", f"must be a finite number, got {_preview(value)}")


def _finite(value: object) -> bool:
    # The bound first: math.isfinite overflows on an integer past float range.
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and -1e300 <= value <= 1e300 and math.isfinite(value))


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _join(where: str, field: str) -> str:
    return f"{where}.{field}" if where else field


def _key(name: object) -> str:
    text = str(name)
    return text if text.isprintable() and text.strip() == text and text and _is_text(text) else repr(text)


def _preview(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."
