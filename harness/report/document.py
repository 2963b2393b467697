"""The run report as a typed `Report`: frozen records, its JSON schema in both directions, its exit code.

Every output (console, Markdown, JUnit, HTML, TREC export, compare) reads a `Report`, never a
raw dict; the JSON written by `--out` is `Report.to_json()` and reads back with
`Report.from_json()`, which checks every field it needs and names the first bad one in one line.

REPORT_FORMAT history (bump on any change a reader of an older version would misread):
  1 — first version: provenance, sets (aggregates, latency, per-query rows), gates, complete,
      exit_code; optional `what_if`, `previous_baseline` and `warnings`. Gates gained `status`
      ("pass", "warn", "fail") later in version 1; a gate without it reads as pass or fail.
      Later in version 1 (issues 13, 14, all optional, absent reads as before): `pooled` (means
      over every scored query of every set, with n), per-query `tied` (tied positions, written
      only when > 0), per-query metrics judged@10, unjudged@10 (a count; summed in aggregates)
      and ndcg@10(condensed), and provenance `tied_order_changed` (with --repeats).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import EXIT_GATE_FAILED, EXIT_OK, UsageError
from harness.fsutil import read_json_file, strict_json_dumps
from harness.records import ContractResult, GateResult, QueryResult, SetResult

REPORT_FORMAT = 1
SUPPORTED_FORMATS = (1,)
OUTCOMES = ("pass", "fail", "xfail", "xpass")


class ReportError(UsageError):
    """A report document is not one this version can read (exit 2, one line naming file and field)."""


# -- provenance ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Backend:
    """Who answered: the alias or command line as the user gave it, and the argv started."""

    label: str
    argv: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"label": self.label, "argv": list(self.argv)}


@dataclass(frozen=True, slots=True)
class AdapterStart:
    """How the adapter started: its ready banner (as it printed it), start-up and warm-up seconds, log."""

    expect_banner: bool = False
    banner: Mapping[str, object] | None = None
    startup_seconds: float | None = None
    warmup_seconds: float | None = None
    log: str | None = None

    def to_dict(self) -> dict[str, object]:
        row: dict[str, object] = {"expect_banner": self.expect_banner,
                                  "banner": dict(self.banner) if self.banner is not None else None,
                                  "startup_seconds": self.startup_seconds, "log": self.log}
        if self.warmup_seconds is not None:
            row["warmup_seconds"] = self.warmup_seconds
        return row


@dataclass(frozen=True, slots=True)
class SetSource:
    """What a set was at run time: enough to know whether two runs measured the same thing."""

    revision: int
    corpus_hash: str
    path: str | None = None
    source: str | None = None
    documents: int | None = None
    judgments_hash: str | None = None  # fingerprint of the gold (harness.sets.loader.judgments_hash)

    def to_dict(self) -> dict[str, object]:
        row: dict[str, object] = {"revision": self.revision, "corpus_hash": self.corpus_hash, "path": self.path,
                                  "source": self.source, "documents": self.documents}
        if self.judgments_hash is not None:
            row["judgments_hash"] = self.judgments_hash
        return row


@dataclass(frozen=True, slots=True)
class Provenance:
    """Who ran what, where. `settings`, `machine` and `metric_definitions` are flat records kept as
    given; `extra` keeps keys a newer harness wrote, so a report round-trips unchanged."""

    harness_version: str
    started: str | None
    backend: Backend
    adapter: AdapterStart = AdapterStart()
    git_commit: str | None = None
    condition: str | None = None
    metric_definitions: Mapping[str, object] | None = None
    settings: Mapping[str, object] = field(default_factory=dict)
    sets: Mapping[str, SetSource] = field(default_factory=dict)
    machine: Mapping[str, object] = field(default_factory=dict)
    duration_seconds: float | None = None
    asking_seconds: float | None = None
    nondeterministic_queries: tuple[str, ...] = ()
    run_file: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        row: dict[str, object] = {
            "harness_version": self.harness_version, "started": self.started, "git_commit": self.git_commit,
            "backend": self.backend.to_dict(), "adapter": self.adapter.to_dict(), "condition": self.condition,
            "metric_definitions": _plain(self.metric_definitions), "settings": _plain(self.settings),
            "sets": {name: s.to_dict() for name, s in self.sets.items()}, "machine": _plain(self.machine),
        }
        for key, value in (("duration_seconds", self.duration_seconds), ("asking_seconds", self.asking_seconds),
                           ("run_file", self.run_file)):
            if value is not None:
                row[key] = value
        row["nondeterministic_queries"] = list(self.nondeterministic_queries)
        row.update(_plain(self.extra))
        return row


# -- the report ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Report:
    """One run: provenance, every set's evaluated result, the gates, and the verdict as an exit code.

    `complete` is False when the backend failed or the run was interrupted (`error` says how);
    such a report can never become a baseline. `exit_code` is the run's verdict: 0 pass, 1 a
    gate failed, 2/3/128+n an error (see `verdict`).
    """

    provenance: Provenance
    sets: tuple[SetResult, ...]
    gates: tuple[GateResult, ...] = ()
    complete: bool = True
    error: str | None = None
    exit_code: int = EXIT_OK
    warnings: tuple[str, ...] = ()
    what_if: Mapping[str, object] | None = None
    previous_baseline: Mapping[str, object] | None = None
    pooled: Mapping[str, float] | None = None  # means over every scored query of every set (issue 14)

    @property
    def failed_gates(self) -> tuple[GateResult, ...]:
        return tuple(g for g in self.gates if not g.passed)

    @property
    def warned_gates(self) -> tuple[GateResult, ...]:
        return tuple(g for g in self.gates if g.status == "warn")

    @property
    def gated(self) -> bool:
        return bool(self.gates)

    def set_named(self, name: str) -> SetResult:
        for result in self.sets:
            if result.name == name:
                return result
        raise KeyError(name)

    def to_dict(self) -> dict[str, object]:
        row: dict[str, object] = {
            "report_format": REPORT_FORMAT, "complete": self.complete, "error": self.error,
            "provenance": self.provenance.to_dict(), "sets": [s.to_dict() for s in self.sets],
            "gates": [g.to_dict() for g in self.gates], "exit_code": self.exit_code,
        }
        if self.warnings:
            row["warnings"] = list(self.warnings)
        if self.what_if is not None:
            row["what_if"] = _plain(self.what_if)
        if self.previous_baseline is not None:
            row["previous_baseline"] = _plain(self.previous_baseline)
        if self.pooled is not None:
            row["pooled"] = _plain(self.pooled)
        return row

    def to_json(self) -> str:
        """Strict JSON (no NaN or Infinity literals), one space indent, UTF-8 text kept as is."""
        return strict_json_dumps(self.to_dict(), what="report", indent=1, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, label: str = "report") -> Report:
        """Parse a report written by `to_json`; ReportError naming `label` and the field otherwise."""
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise ReportError(f"{label}: run report, not valid JSON ({exc})") from None
        except RecursionError:
            raise ReportError(f"{label}: run report, JSON nested too deeply") from None
        return cls.from_dict(document, label)

    @classmethod
    def from_dict(cls, document: object, label: str = "report") -> Report:
        reader = _Reader(document, label)
        if not isinstance(document, dict) or "report_format" not in document:
            raise reader.fail("not a retrieval-gate run report (written by a run's --out)")
        return _read_report(reader)


def verdict(error_exit_code: int | None, gates: Sequence[GateResult]) -> int:
    """The exit code of a run: its error's code if it failed, else 1 when any gate failed, else 0."""
    if error_exit_code is not None:
        return error_exit_code
    return EXIT_GATE_FAILED if any(not g.passed for g in gates) else EXIT_OK


def read_report(path: Path) -> Report:
    """Read a JSON report file (`--out`); ReportError naming the file and field when it is not one."""
    return Report.from_dict(read_json_file(path, ReportError, what="run report"), str(path))


def to_json(report: Report) -> str:
    return report.to_json()


def _plain(value: object) -> object:
    """Mappings and sequences as plain dicts and lists, for json.dumps."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# -- reading, strictly -----------------------------------------------------------------------------

class _Reader:
    """A cursor into a JSON document that names the file and the path of every field it rejects:
    `report.json: sets[0].queries[3].ids: must be a list, got "doc-01"`."""

    __slots__ = ("value", "label", "where")

    def __init__(self, value: object, label: str, where: str = "") -> None:
        self.value = value
        self.label = label
        self.where = where

    def fail(self, why: str) -> ReportError:
        return ReportError(f"{self.label}: {self.where}: {why}" if self.where else f"{self.label}: {why}")

    def child(self, value: object, step: str) -> _Reader:
        where = f"{self.where}{step}" if step.startswith("[") else (f"{self.where}.{step}" if self.where else step)
        return _Reader(value, self.label, where)

    def obj(self) -> dict:
        if not isinstance(self.value, dict):
            raise self.fail(f"must be an object, got {_kind(self.value)}")
        return self.value

    def get(self, key: str, required: bool = True) -> _Reader:
        document = self.obj()
        if key not in document and required:
            raise self.child(None, key).fail("missing")
        return self.child(document.get(key), key)

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and self.value.get(key) is not None

    def string(self, optional: bool = False) -> str | None:
        if self.value is None and optional:
            return None
        if not isinstance(self.value, str):
            raise self.fail(f"must be a string, got {_kind(self.value)}")
        try:
            self.value.encode("utf-8")
        except UnicodeEncodeError:
            raise self.fail("holds a lone surrogate, not text") from None
        return self.value

    def integer(self, optional: bool = False) -> int | None:
        if self.value is None and optional:
            return None
        if isinstance(self.value, bool) or not isinstance(self.value, int) or abs(self.value) > 2 ** 53:
            raise self.fail(f"must be an integer, got {_kind(self.value)}")
        return self.value

    def number(self, optional: bool = False) -> float | None:
        if self.value is None and optional:
            return None
        value = self.value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            raise self.fail(f"must be a finite number, got {_kind(value)}")
        return float(value) if isinstance(value, float) else value

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            raise self.fail(f"must be true or false, got {_kind(self.value)}")
        return self.value

    def items(self) -> list[tuple[str, _Reader]]:
        return [(key, self.child(value, _key(key))) for key, value in self.obj().items()]

    def elements(self) -> list[_Reader]:
        if not isinstance(self.value, list):
            raise self.fail(f"must be a list, got {_kind(self.value)}")
        return [self.child(value, f"[{index}]") for index, value in enumerate(self.value)]

    def strings(self) -> tuple[str, ...]:
        return tuple(element.string() for element in self.elements())  # type: ignore[misc]

    def ids(self) -> tuple[str, ...]:
        """A list of unique, non-empty document ids (a string is refused, never split into characters)."""
        values = self.strings()
        if any(not value for value in values):
            raise self.fail("holds an empty document id")
        if len(set(values)) != len(values):
            raise self.fail("repeats a document id")
        return values

    def numbers(self) -> dict[str, float]:
        return {key: value.number() for key, value in self.items()}  # type: ignore[misc]


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return type(value).__name__
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (str, int, float, bool)) else repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _key(name: str) -> str:
    return name if name.isprintable() and name and name.strip() == name else json.dumps(name)


def _read_report(reader: _Reader) -> Report:
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
    error = reader.get("error", required=False).string(optional=True)
    exit_code = reader.get("exit_code", required=False)
    warnings = reader.get("warnings", required=False)
    return Report(
        provenance=_read_provenance(reader.get("provenance")), sets=sets, gates=gates, complete=complete,
        error=error, exit_code=exit_code.integer() if exit_code.value is not None else verdict(None, gates),
        warnings=warnings.strings() if warnings.value is not None else (),
        what_if=_mapping_or_none(reader.get("what_if", required=False)),
        previous_baseline=_mapping_or_none(reader.get("previous_baseline", required=False)),
        pooled=reader.get("pooled").numbers() if reader.has("pooled") else None,
    )


def _mapping_or_none(reader: _Reader) -> Mapping[str, object] | None:
    return None if reader.value is None else reader.obj()


_PROVENANCE_KEYS = {"harness_version", "started", "git_commit", "backend", "adapter", "condition",
                    "metric_definitions", "settings", "sets", "machine", "duration_seconds", "asking_seconds",
                    "nondeterministic_queries", "run_file"}


def _read_provenance(reader: _Reader) -> Provenance:
    document = reader.obj()
    backend = reader.get("backend")
    argv = backend.get("argv", required=False)
    adapter = reader.get("adapter", required=False)
    start = AdapterStart()
    if adapter.value is not None:
        adapter.obj()
        banner = adapter.get("banner", required=False)
        start = AdapterStart(
            expect_banner=bool(adapter.get("expect_banner", required=False).value),
            banner=None if banner.value is None else banner.obj(),
            startup_seconds=adapter.get("startup_seconds", required=False).number(optional=True),
            warmup_seconds=adapter.get("warmup_seconds", required=False).number(optional=True),
            log=adapter.get("log", required=False).string(optional=True))
    sets = {name: SetSource(revision=entry.get("revision").integer(),  # type: ignore[arg-type]
                            corpus_hash=entry.get("corpus_hash").string(),  # type: ignore[arg-type]
                            path=entry.get("path", required=False).string(optional=True),
                            source=entry.get("source", required=False).string(optional=True),
                            documents=entry.get("documents", required=False).integer(optional=True),
                            judgments_hash=entry.get("judgments_hash", required=False).string(optional=True))
            for name, entry in (reader.get("sets", required=False).items() if reader.has("sets") else [])}
    nondeterministic = reader.get("nondeterministic_queries", required=False)
    return Provenance(
        harness_version=reader.get("harness_version").string(),  # type: ignore[arg-type]
        started=reader.get("started", required=False).string(optional=True),
        backend=Backend(label=backend.get("label").string(),  # type: ignore[arg-type]
                        argv=argv.strings() if argv.value is not None else ()),
        adapter=start,
        git_commit=reader.get("git_commit", required=False).string(optional=True),
        condition=reader.get("condition", required=False).string(optional=True),
        metric_definitions=_mapping_or_none(reader.get("metric_definitions", required=False)),
        settings=_mapping_or_none(reader.get("settings", required=False)) or {},
        sets=sets,
        machine=_mapping_or_none(reader.get("machine", required=False)) or {},
        duration_seconds=reader.get("duration_seconds", required=False).number(optional=True),
        asking_seconds=reader.get("asking_seconds", required=False).number(optional=True),
        nondeterministic_queries=nondeterministic.strings() if nondeterministic.value is not None else (),
        run_file=reader.get("run_file", required=False).string(optional=True),
        extra={key: value for key, value in document.items() if key not in _PROVENANCE_KEYS},
    )


def _read_aggregates(reader: _Reader) -> dict[str, object]:
    overall = reader.get("overall").numbers()
    summary: dict[str, object] = {"overall": overall,
               "category": {name: row.numbers() for name, row in reader.get("category").items()},
               "split": {name: row.numbers() for name, row in reader.get("split").items()}}
    if reader.has("evidence"):  # issue 17: {scope: {metric: {mean, judged, null, sum}}}
        summary["evidence"] = reader.get("evidence").obj()
    return summary


def _read_set(reader: _Reader) -> SetResult:
    return SetResult(
        name=reader.get("name").string(),  # type: ignore[arg-type]
        kind=reader.get("kind").string(),  # type: ignore[arg-type]
        revision=reader.get("revision").integer(),  # type: ignore[arg-type]
        corpus_hash=reader.get("corpus_hash").string(),  # type: ignore[arg-type]
        k=reader.get("k").integer(),  # type: ignore[arg-type]
        query_count=reader.get("query_count").integer(),  # type: ignore[arg-type]
        complete=reader.get("complete").boolean(),
        aggregates=_read_aggregates(reader.get("aggregates")),
        latency_ms=reader.get("latency_ms").numbers(),
        queries=_read_queries(reader.get("queries")),
    )


def _read_queries(reader: _Reader) -> tuple[QueryResult, ...]:
    rows = tuple(_read_query(element) for element in reader.elements())
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if row.qid in seen:
            raise reader.child(None, f"[{index}].qid").fail(f"{json.dumps(row.qid)} appears twice")
        seen.add(row.qid)
    return rows


def _read_query(reader: _Reader) -> QueryResult:
    ids = reader.get("ids").ids()
    scores = reader.get("scores", required=False)
    score_values = None
    if scores.value is not None:
        score_values = tuple(element.number() for element in scores.elements())  # type: ignore[misc]
        if len(score_values) != len(ids):
            raise scores.fail(f"has {len(score_values)} entries for {len(ids)} ids")
    latency_ms = reader.get("latency_ms").number()
    return QueryResult(
        qid=reader.get("qid").string(),  # type: ignore[arg-type]
        query=reader.get("query").string(),  # type: ignore[arg-type]
        category=reader.get("category").string(),  # type: ignore[arg-type]
        split=reader.get("split").string(),  # type: ignore[arg-type]
        ids=ids, scores=score_values,
        latency_seconds=float(latency_ms) / 1000,  # type: ignore[arg-type]
        metrics=reader.get("metrics").numbers(),
        found=reader.get("found").ids(),
        contracts=tuple(_read_contract(element) for element in reader.get("contracts").elements()),
        outcome=_outcome(reader.get("outcome")),
        scored=reader.get("scored").boolean(),
        group=reader.get("group", required=False).string(optional=True),
        tied=_tied(reader.get("tied", required=False)),
        **_evidence_fields(reader),
    )


def _tied(reader: _Reader) -> int:
    """Tied positions (absent: 0, as written for a query without ties or by an older harness)."""
    value = reader.integer(optional=True)
    if value is not None and value < 0:
        raise reader.fail(f"must be >= 0, got {value}")
    return value or 0


def _outcome(reader: _Reader) -> str:
    value = reader.string()
    if value not in OUTCOMES:
        raise reader.fail(f"{json.dumps(value)} is not one of {', '.join(OUTCOMES)}")
    return value  # type: ignore[return-value]
def _evidence_fields(reader: _Reader) -> dict[str, object]:
    """A row's optional evidence fields (issue 17): passages, evidence metrics, the window shown."""
    fields: dict[str, object] = {}
    if reader.has("passages"):
        fields["passages"] = tuple(None if p.value is None else tuple(p.value)  # type: ignore[arg-type]
                                   for p in reader.get("passages").elements())
    if reader.has("evidence"):
        fields["evidence"] = dict(reader.get("evidence").obj())
    if reader.has("window"):
        fields["window"] = dict(reader.get("window").obj())
    return fields


def _read_contract(reader: _Reader) -> ContractResult:
    name = reader.get("name").string()
    key = reader.get("key", required=False).string(optional=True) or name
    subject = key.split(":", 1)[1] if ":" in key else ""  # type: ignore[union-attr]
    return ContractResult(name=name, passed=reader.get("passed").boolean(),  # type: ignore[arg-type]
                          detail=reader.get("detail", required=False).string(optional=True) or "", subject=subject)


def _read_gate(reader: _Reader) -> GateResult:
    return GateResult(
        set_name=reader.get("set").string(),  # type: ignore[arg-type]
        gate=reader.get("gate").string(),  # type: ignore[arg-type]
        passed=reader.get("passed").boolean(),
        message=reader.get("message").string(),  # type: ignore[arg-type]
        category=reader.get("category", required=False).string(optional=True),
        flipped=reader.get("flipped", required=False).strings() if reader.has("flipped") else (),
        warning=reader.get("status", required=False).value == "warn",
    )
