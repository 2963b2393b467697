"""Reading a report document back, strictly: every field the renderers and commands use is checked.

A report is our output, but as an input it is untrusted (hand-edited, truncated, another
version): `read_document` walks it once and builds the typed records of harness/report/document.py,
naming the file and the path of the first bad field in one line
(`report.json: sets[0].queries[3].ids: must be a list, got "doc-01"`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from harness.records import ContractResult, GateResult, QueryResult, SetResult
from harness.report.document import (OUTCOMES, SUPPORTED_FORMATS, AdapterStart, Backend, Provenance, Report,
                                     ReportError, SetSource, exit_code_for)
from harness.scoring.flips import Flip
from harness.scoring.metrics import parse_metric
from harness.measured import UNJUDGED_COUNT, StrictReader, read_aggregates, read_latency, read_resources, read_scope
from harness.strict_json import read_json_file

T = TypeVar("T")


def read_report(path: Path) -> Report:
    """Read a JSON report file (`--out`); ReportError naming the file and field when it is not one."""
    return read_document(read_json_file(path, ReportError, what="run report"), str(path))


def report_from_json(text: str, label: str = "report") -> Report:
    """Parse a report written by `Report.to_json`; ReportError naming `label` and the field otherwise."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ReportError(f"{label}: run report, not valid JSON ({exc})") from None
    except RecursionError:
        raise ReportError(f"{label}: run report, JSON nested too deeply") from None
    return read_document(document, label)


def read_document(document: object, label: str = "report") -> Report:
    """The typed Report of a parsed JSON document; ReportError naming `label` and the field otherwise."""
    reader = StrictReader(document, label, ReportError)
    if not isinstance(document, dict) or "report_format" not in document:
        raise reader.fail("not a retrieval-gate run report (written by a run's --out)")
    return _read_report(reader)


def _read_report(reader: StrictReader) -> Report:
    document = reader.obj()
    version = document.get("report_format")
    if version not in SUPPORTED_FORMATS:
        raise ReportError(f"{reader.label}: report_format: {json.dumps(version)} is not a report format this "
                          f"harness reads ({', '.join(map(str, SUPPORTED_FORMATS))}); "
                          "read it with the retrieval-gate version that wrote it")
    sets = tuple(_read_set(element) for element in reader.get("sets").elements())
    names = [s.name for s in sets]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise reader.child(None, f"sets[{index}].name").fail(f"{json.dumps(name)} appears twice")
    gates = tuple(_read_gate(element) for element in reader.get("gates").elements())
    complete = reader.get("complete").boolean()
    error = reader.get("error", required=False).optional_text()
    return Report(
        provenance=_read_provenance(reader.get("provenance")), sets=sets, gates=gates, complete=complete,
        error=error, exit_code=reader.get("exit_code").integer() if reader.has("exit_code") else exit_code_for(None, gates),
        warnings=reader.get("warnings").strings() if reader.has("warnings") else (),
        what_if=_mapping_or_none(reader.get("what_if", required=False)),
        previous_baseline=_mapping_or_none(reader.get("previous_baseline", required=False)),
        pooled=read_scope(reader.get("pooled")) if reader.has("pooled") else None,
        flips=_read_flips(reader.get("flips"), sets) if reader.has("flips") else None,
        baseline_latency={name: read_latency(row) for name, row in reader.get("baseline_latency").items()}
        if reader.has("baseline_latency") else None,
        baseline_resources={name: read_resources(row) for name, row in reader.get("baseline_resources").items()}
        if reader.has("baseline_resources") else None,
    )


def _read_flips(reader: StrictReader, sets: tuple[SetResult, ...]) -> dict[str, tuple[Flip, ...]]:
    """Per set, the queries whose relevant ids found moved against the baseline (query text from the set's rows)."""
    texts = {s.name: {q.qid: q.query for q in s.queries} for s in sets}
    return {name: tuple(Flip(name, row.get("qid").text(), texts.get(name, {}).get(row.get("qid").text(), ""),
                             row.get("lost").ids(), row.get("gained").ids()) for row in rows.elements())
            for name, rows in reader.items()}


def _mapping_or_none(reader: StrictReader) -> Mapping[str, object] | None:
    return None if reader.value is None else reader.obj()


_PROVENANCE_KEYS = {field.name for field in dataclasses.fields(Provenance)} - {"extra"}  # `extra` keeps the rest


def _read_provenance(reader: StrictReader) -> Provenance:
    document = reader.obj()
    backend = reader.get("backend")
    argv = backend.get("argv", required=False)
    adapter = reader.get("adapter", required=False)
    start = AdapterStart()
    if adapter.value is not None:
        start = AdapterStart(
            expect_banner=bool(adapter.get("expect_banner", required=False).value),
            banner=_mapping_or_none(adapter.get("banner", required=False)),
            startup_seconds=adapter.get("startup_seconds", required=False).optional_number(),
            warmup_seconds=adapter.get("warmup_seconds", required=False).optional_number(),
            log=adapter.get("log", required=False).optional_text())
    sets = {name: SetSource(revision=entry.get("revision").integer(),
                            corpus_hash=entry.get("corpus_hash").text(),
                            path=entry.get("path", required=False).optional_text(),
                            source=entry.get("source", required=False).optional_text(),
                            documents=entry.get("documents", required=False).optional_integer(),
                            judgments_hash=entry.get("judgments_hash", required=False).optional_text())
            for name, entry in (reader.get("sets", required=False).items() if reader.has("sets") else [])}
    nondeterministic = reader.get("nondeterministic_queries", required=False)
    return Provenance(
        harness_version=reader.get("harness_version").text(),
        started=reader.get("started", required=False).optional_text(),
        backend=Backend(label=backend.get("label").text(),
                        argv=argv.strings() if argv.value is not None else ()),
        adapter=start,
        git_commit=reader.get("git_commit", required=False).optional_text(),
        condition=reader.get("condition", required=False).optional_text(),
        metric_definitions=_mapping_or_none(reader.get("metric_definitions", required=False)),
        settings=_mapping_or_none(reader.get("settings", required=False)) or {},
        sets=sets,
        machine=_mapping_or_none(reader.get("machine", required=False)) or {},
        duration_seconds=reader.get("duration_seconds", required=False).optional_number(),
        asking_seconds=reader.get("asking_seconds", required=False).optional_number(),
        nondeterministic_queries=nondeterministic.strings() if nondeterministic.value is not None else (),
        run_file=reader.get("run_file", required=False).optional_text(),
        extra={key: value for key, value in document.items() if key not in _PROVENANCE_KEYS},
    )


def _read_set(reader: StrictReader) -> SetResult:
    return SetResult(
        name=reader.get("name").text(),
        kind=reader.get("kind").text(),
        revision=reader.get("revision").integer(),
        corpus_hash=reader.get("corpus_hash").text(),
        k=reader.get("k").integer(),
        query_count=reader.get("query_count").integer(),
        complete=reader.get("complete").boolean(),
        aggregates=read_aggregates(reader.get("aggregates")),
        latency=read_latency(reader.get("latency_ms")),
        queries=_read_queries(reader.get("queries")),
        resources=read_resources(reader.get("resources", required=False)),
        base_latency=read_latency(reader.get("base_latency_ms")) if reader.has("base_latency_ms") else None,
    )


def _read_queries(reader: StrictReader) -> tuple[QueryResult, ...]:
    rows = tuple(_read_query(element) for element in reader.elements())
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if row.qid in seen:
            raise reader.child(None, f"[{index}].qid").fail(f"{json.dumps(row.qid)} appears twice")
        seen.add(row.qid)
    return rows


def _read_query(reader: StrictReader) -> QueryResult:
    ids = reader.get("ids").ids()
    scores = reader.get("scores", required=False)
    score_values = None
    if scores.value is not None:
        score_values = tuple(element.number() for element in scores.elements())
        if len(score_values) != len(ids):
            raise scores.fail(f"has {len(score_values)} entries for {len(ids)} ids")
    latency_ms = reader.get("latency_ms").number()
    if latency_ms < 0:  # a forged or corrupt shard: a negative latency would drag the merged percentiles down
        raise reader.get("latency_ms").fail(f"must be >= 0 milliseconds, got {latency_ms:g}")
    return QueryResult(
        qid=reader.get("qid").text(),
        query=reader.get("query").text(),
        category=reader.get("category").text(),
        split=reader.get("split").text(),
        ids=ids, scores=score_values,
        latency_seconds=float(latency_ms) / 1000,
        metrics=_metrics(reader.get("metrics")),
        found=reader.get("found").ids(),
        contracts=tuple(_read_contract(element) for element in reader.get("contracts").elements()),
        outcome=_outcome(reader.get("outcome")),
        scored=reader.get("scored").boolean(),
        group=reader.get("group", required=False).optional_text(),
        tied=reader.get("tied").count() if reader.has("tied") else 0,  # absent: no ties, or an older harness
        passages=tuple(map(_passage, reader.get("passages").elements())) if reader.has("passages") else None,
        evidence=reader.get("evidence").optional_numbers() if reader.has("evidence") else None,
        window=dict(reader.get("window").obj()) if reader.has("window") else None,
        base_latency_seconds=float(reader.get("base_latency_ms").number()) / 1000
        if reader.has("base_latency_ms") else None,
    )


def _metrics(reader: StrictReader) -> dict[str, float]:
    """A query's metric values, each named as the registry knows it (an unknown name is refused here, naming
    it, rather than failing whoever re-scores the row: `merge`)."""
    values = reader.measures()
    for name in values:
        if name == UNJUDGED_COUNT:
            continue
        try:
            parse_metric(name)
        except ValueError:
            raise reader.get(name).fail("unknown metric name (python -m harness metrics lists them)") from None
    return values


def _outcome(reader: StrictReader) -> str:
    value = reader.text()
    if value not in OUTCOMES:
        raise reader.fail(f"{json.dumps(value)} is not one of {', '.join(OUTCOMES)}")
    return value


def _passage(reader: StrictReader) -> tuple[int, int] | None:
    """A hit's window, [start, end] in characters, or null for the whole document (docs/adapters.md, "Passages")."""
    return None if reader.value is None else _pair(reader, [element.count() for element in reader.elements()],
                                                   "start, end")


def _pair(reader: StrictReader, values: list[T], what: str) -> tuple[T, T]:
    """Two values read from the list `reader` holds: `what` they are, e.g. "low, high"."""
    if len(values) != 2:
        raise reader.fail(f"must be [{what}], got {len(values)} numbers")
    return values[0], values[1]


def _read_contract(reader: StrictReader) -> ContractResult:
    name = reader.get("name").text()
    key = reader.get("key", required=False).optional_text() or name
    subject = key.split(":", 1)[1] if ":" in key else ""
    return ContractResult(name=name, passed=reader.get("passed").boolean(),
                          detail=reader.get("detail", required=False).optional_text() or "", subject=subject)


def _read_gate(reader: StrictReader) -> GateResult:
    ci = reader.get("ci", required=False)
    bounds = _pair(ci, [bound.number() for bound in ci.elements()], "low, high") if ci.value is not None else None
    return GateResult(
        set_name=reader.get("set").text(),
        gate=reader.get("gate").text(),
        passed=reader.get("passed").boolean(),
        message=reader.get("message").text(),
        category=reader.get("category", required=False).optional_text(),
        flipped=reader.get("flipped", required=False).strings() if reader.has("flipped") else (),
        warning=reader.get("status", required=False).value == "warn",
        metric=reader.get("metric", required=False).optional_text(),
        baseline=reader.get("baseline", required=False).optional_number(),
        current=reader.get("current", required=False).optional_number(),
        limit=reader.get("limit", required=False).optional_number(),
        unit=reader.get("unit", required=False).optional_text(),
        ci=bounds,
        p_value=reader.get("p_value", required=False).optional_number(),
        one_query=reader.get("one_query", required=False).optional_number(),
        detectable=reader.get("detectable", required=False).optional_number(),
        improved=reader.get("improved").boolean() if reader.has("improved") else False,
    )
