"""Baseline files: build one from a run, read it back strictly (once, as a typed `Baseline`), write it atomically."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field as dataclass_field
from pathlib import Path
from typing import Any

from harness.errors import BaselineError, UsageError
from harness.fsutil import SHIPPED_REFUSAL, atomic_write_text
from harness.shipped import is_shipped_data
from harness.measured import QueryNumbers, SetNumbers, StrictReader, read_aggregates, read_latency, read_resources
from harness.strict_json import read_json_file, strict_json_dumps
from harness.gating.calibration import SetCalibration, read_calibration
from harness.gating.identity import BackendIdentity, text_or_none
from harness.gating.policy import FOUNDING_METRIC
from harness.records import QuerySet, SetResult
from harness.quoting import field_key, preview

BASELINE_FORMAT = "retrieval-gate-baseline"
BASELINE_VERSION = 1
DEFAULT_BASELINE_PATH = Path("baselines/current.json")


@dataclass(frozen=True)
class BackendRecord:
    """A baseline's `backend` object read strictly: its label and the identity it records."""

    label: str | None
    identity: BackendIdentity


@dataclass(frozen=True)
class Baseline:
    """A baseline file read once, strictly: where it is, each set's numbers (the records a run
    produces), whose backend recorded each set, when and at which commit.

    Gating reads `sets` (through `comparable`), the identity check `identity_for`, every output
    the `gated_against` record, `--update-baseline` the `document` it replaces.
    """

    path: Path
    sets: Mapping[str, SetNumbers]
    backend: BackendRecord  # the file's; older files record it alone
    backends: Mapping[str, BackendRecord]  # set -> the record it was recorded for: its own, else the file's
    created: str | None
    commit: str | None
    document: Mapping[str, Any]  # the file's JSON, as read: what --update-baseline replaces
    calibration: Mapping[str, SetCalibration] = dataclass_field(default_factory=dict)  # set -> its `calibrate` record

    @classmethod
    def read(cls, path: Path) -> Baseline:
        """The baseline at `path`; BaselineError naming file and field when it is not one."""
        if not path.exists():
            raise BaselineError(f"{path}: no baseline file; record one with --update-baseline (or run with --no-gate)")
        return cls.from_document(read_json_file(path, BaselineError, str(path), what="corrupt baseline"), path)

    @classmethod
    def from_document(cls, document: object, path: Path, label: str | None = None) -> Baseline:
        """A baseline document already parsed (from `path`, named `label` in errors), read strictly."""
        reader = StrictReader(document, label or str(path), BaselineError)
        if not isinstance(document, dict) or document.get("format") != BASELINE_FORMAT:
            raise reader.fail("format: not a retrieval-gate baseline")
        if document.get("version") != BASELINE_VERSION:
            raise reader.fail(f"version: expected {BASELINE_VERSION}, got {document.get('version')!r}")
        top = _read_backend(reader.get("backend", required=False))
        sets, own, calibration = {}, {}, {}
        if not reader.get("sets").items():  # a baseline of nothing would gate nothing, and pass
            raise reader.fail("sets: records no set; record one with --update-baseline")
        for name, entry in reader.get("sets").items():
            sets[name] = _read_entry(name, entry)
            own[name] = _read_backend(entry.get("backend", required=False))
            if entry.has("calibration"):  # optional: written by `calibrate` alone; older files have none
                calibration[name] = read_calibration(entry.get("calibration"))
        if top is None:  # a removed record would gate any backend against this file
            raise reader.fail("backend: missing; restore it from git, or re-baseline")
        return cls(path=path, sets=sets, backend=top, backends={name: record or top for name, record in own.items()},
                   created=text_or_none(document.get("created")), commit=text_or_none(document.get("git_commit")),
                   document=document, calibration=calibration)

    def identity_for(self, name: str) -> BackendIdentity:
        """Whose backend the set `name` was recorded for: its own record, else the file's (older files)."""
        return self.backends.get(name, self.backend).identity

    def gated_against(self, names: Sequence[str] = ()) -> dict[str, object]:
        """What a report says it was gated against: the file, whose backend (for the sets `names`),
        when, at which commit."""
        backends = (dict.fromkeys(self.identity_for(name).describe() for name in names)
                    or {self.backend.identity.describe(): 1})
        record: dict[str, object] = {"path": str(self.path), "backend": "; ".join(backends), "created": self.created,
                                     "git_commit": self.commit}
        calibrated = [f"{name}: {self.calibration[name].summary()}" for name in names if name in self.calibration]
        if calibrated:  # only a calibrated baseline adds the key: an uncalibrated report is as it was
            record["calibrated"] = "; ".join(calibrated)
        return record

    def comparable(self, measured: SetResult | QuerySet, *, k: int | None = None) -> SetNumbers:
        """The set's numbers comparable with a set or its result asked at `k` (None: its own k), or a
        BaselineError saying why not.

        Called with the loaded set before the run, so a mismatch stops it before the adapter starts.
        """
        label, name, k = str(self.path), measured.name, k if k is not None else measured.k
        numbers = self.sets.get(name)
        if numbers is None:
            raise BaselineError(f"{label}: sets: no baseline for set {name!r}; record it with --update-baseline")
        for field, recorded, now in (("revision", numbers.revision, measured.revision),
                                     ("corpus_hash", numbers.corpus_hash, measured.corpus_hash), ("k", numbers.k, k)):
            if recorded != now:
                raise BaselineError(
                    f"{label}: sets.{name}.{field}: baseline has {recorded!r}, this run has {now!r}; "
                    f"the numbers are not comparable: re-baseline deliberately with --update-baseline")
        # Pins cover documents, not judgments: a gold edit without a revision bump shows here. Baselines
        # written before the field existed, and results that do not carry it, compare on the rest.
        recorded_hash, now_hash = numbers.judgments_hash, getattr(measured, "judgments_hash", "")
        if recorded_hash and now_hash and recorded_hash != now_hash:
            raise BaselineError(
                f"{label}: sets.{name}.judgments_hash: judgments changed without a revision bump (baseline "
                f"{recorded_hash[:12]}, set {now_hash[:12]}); a changed gold is neither a regression nor an "
                f"improvement: bump the set's revision and re-baseline with --update-baseline")
        # The text asked is part of what was measured: a query reworded (to an easier one, say) is refused
        # as a changed judgment is. Rows recorded without their text compare on the rest.
        for query in measured.queries:
            row = numbers.queries.get(query.qid)
            if row is not None and row.query and row.query != query.query:
                raise BaselineError(
                    f"{label}: sets.{name}.queries.{field_key(query.qid)}.query: the baseline asked "
                    f"{preview(row.query, 60)}, the set now asks {preview(query.query, 60)}; a reworded query is "
                    f"another measurement: bump the set's revision and re-baseline with --update-baseline")
        return numbers


def build_baseline(set_results: list[SetResult], provenance: Mapping[str, Any], *,
                   judgments: Mapping[str, str | None] | None = None) -> dict[str, object]:
    """The baseline document for a complete run: identity, per-set aggregates and per-query values.

    `judgments` maps set name -> `QuerySet.judgments_hash` of the sets the run measured (when
    None: `provenance["sets"][name]["judgments_hash"]`, if the provenance carries it); each
    set's entry records it, so a later gold edit without a revision bump is refused instead
    of compared (`Baseline.comparable`). The result is read back as `Baseline.read` would read it
    (finite numbers, recall@10 in every scored scope): a baseline no later run could read is
    never written.
    """
    incomplete = [r.name for r in set_results if not r.complete]
    if incomplete:
        raise BaselineError(f"refusing to write a baseline from an incomplete run (sets: {', '.join(incomplete)})")
    if judgments is None:  # else as the run's provenance recorded it (asking.base_provenance), when it does
        recorded = provenance.get("sets")
        judgments = {name: entry.get("judgments_hash") for name, entry in recorded.items()
                     if isinstance(entry, dict)} if isinstance(recorded, dict) else {}
    backend = backend_record(provenance)
    document = {
        "format": BASELINE_FORMAT,
        "version": BASELINE_VERSION,
        "created": provenance.get("started"),
        "harness_version": provenance.get("harness_version"),
        "git_commit": provenance.get("git_commit"),
        "backend": backend,  # this write's; each set keeps its own too (another backend may re-baseline one set)
        "condition": provenance.get("condition"),
        "metric_definitions": provenance.get("metric_definitions"),
        "sets": {r.name: {**baseline_entry(r.numbers(judgments.get(r.name))), "backend": backend}
                 for r in set_results},
    }
    Baseline.from_document(document, Path("this run"))
    return document


# The name a baseline recorded from a TREC run file (`--run-file`, no adapter, no banner) gives its backend.
RUN_FILE_BACKEND = "run-file"


def backend_record(provenance: Mapping[str, Any]) -> dict[str, object]:
    """Who the baseline is for: the label, the portable command and the banner's identity fields
    (a run file's rankings: the name `run-file`, so the record names a backend all the same)."""
    backend = provenance.get("backend") or {}
    banner = (provenance.get("adapter") or {}).get("banner")
    if banner is None and provenance.get("run_file"):
        banner = {"name": RUN_FILE_BACKEND}
    identity = BackendIdentity.of(banner, [str(a) for a in backend.get("argv") or []])
    return {"label": backend.get("label"), **identity.to_dict()}


def baseline_entry(numbers: SetNumbers) -> dict[str, object]:
    """A set's numbers as a baseline file records them (every query's row without its latency)."""
    return {
        "revision": numbers.revision, "corpus_hash": numbers.corpus_hash,
        **({"judgments_hash": numbers.judgments_hash} if numbers.judgments_hash else {}), "k": numbers.k,
        "query_count": numbers.query_count, "aggregates": numbers.aggregates.to_dict(),
        "latency_ms": numbers.latency.to_dict(),
        # the run's adapter cost (docs/gate.md, "Resource budgets"); baselines recorded before it have none
        **({"resources": numbers.resources.to_dict()} if numbers.resources.measured else {}),
        "queries": {row.qid: {"query": row.query, "category": row.category, "split": row.split, "group": row.group,
                              "scored": row.scored, "outcome": row.outcome, "metrics": row.metrics,
                              "found": list(row.found), "broken": list(row.broken),
                              **({"evidence": dict(row.evidence)} if row.evidence is not None else {})}
                    for row in numbers.queries.values()},
    }


def write_baseline(path: Path, baseline: Mapping[str, Any], *, merge: bool = True) -> None:
    """Write atomically. With `merge`, sets not in this run keep their previous entries.

    Read, merge and replace happen under an exclusive lock (`baseline_lock`), so two runs
    updating different sets of one baseline at the same time both keep their set.
    """
    if is_shipped_data(path):  # checked before the lock, whose file would be created beside it
        raise BaselineError(f"{path}: {SHIPPED_REFUSAL}")
    try:
        with baseline_lock(path):
            document = dict(baseline)
            if merge and path.exists():
                previous = read_baseline(path)
                # a set kept from the previous file keeps its own backend (older files recorded it once, on top)
                sets = {name: {**entry, "backend": entry.get("backend") or previous["backend"]}
                        for name, entry in previous["sets"].items()}
                sets.update(baseline["sets"])
                document["sets"] = dict(sorted(sets.items()))
            atomic_write_text(path, baseline_text(document, str(path)))
    except OSError as exc:  # a full disk or a read-only folder: the environment's, said of the baseline, not stdout
        raise UsageError(f"{path}: cannot write the baseline: {exc.strerror or exc} (the file is left as it "
                         f"was)") from None


def write_calibration(path: Path, calibrations: Mapping[str, SetCalibration]) -> None:
    """Record each set's calibration in the baseline at `path` (atomically, under `baseline_lock`), replacing
    the set's previous one; everything else in the file is kept. BaselineError when a set has no entry."""
    if is_shipped_data(path):
        raise BaselineError(f"{path}: {SHIPPED_REFUSAL}")
    with baseline_lock(path):
        document = read_baseline(path)
        sets = dict(document["sets"])
        for name, calibration in calibrations.items():
            if name not in sets:
                raise BaselineError(f"{path}: sets: no baseline for set {name!r}; record it with --update-baseline "
                                    f"first, then calibrate")
            sets[name] = {**sets[name], "calibration": calibration.to_dict()}
        document["sets"] = sets
        atomic_write_text(path, baseline_text(document, str(path)))


# Where the layout opens an object one key a line (`*`: any key) when it holds objects; all else is one line.
_EXPANDED = ((), ("sets",), ("sets", "*"), ("sets", "*", "aggregates"), ("sets", "*", "aggregates", "*"),
             ("sets", "*", "queries"), ("sets", "*", "calibration"), ("sets", "*", "calibration", "quality"))


def baseline_text(document: Mapping[str, object], label: str = "baseline") -> str:
    """The file's text, laid out so that a re-baseline of one set is a small git diff.

    The outer objects (the document, `sets`, each set, its `aggregates` and scopes, `queries`)
    hold one key a line in the document's order; everything under them is one line with sorted
    keys: one line per query row, per aggregate scope, per category. A query whose found ids or
    values moved changes its own line only. Strict JSON (BaselineError naming `label` otherwise),
    UTF-8 text kept as is; it parses to the same document.
    """
    try:
        strict_json_dumps(document, what=f"{label}: baseline")
    except ValueError as exc:
        raise BaselineError(str(exc)) from None
    return _lay_out(document, (), 0) + "\n"


def _lay_out(value: object, path: tuple[str, ...], depth: int) -> str:
    indent = " " * depth
    expanded = isinstance(value, Mapping) and any(isinstance(item, Mapping) for item in value.values()) and any(
        len(pattern) == len(path) and all(p in ("*", key) for p, key in zip(pattern, path)) for pattern in _EXPANDED)
    if not (expanded and isinstance(value, Mapping)):  # (isinstance again: mypy narrows on it)
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    items = ",\n".join(f"{indent} {json.dumps(str(key), ensure_ascii=False)}: "
                       f"{_lay_out(item, (*path, str(key)), depth + 1)}" for key, item in value.items())
    return f"{{\n{items}\n{indent}}}"


@contextlib.contextmanager
def baseline_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `.NAME.lock` beside `path`; the lock file is removed on release.

    Removing it is safe: a waiter that wins the lock on a file already unlinked (or replaced
    by a newer lock file) sees the inode changed and locks again, so two holders never meet.
    Blocks until the lock is free; writers hold it for one read-merge-write, milliseconds.
    """
    lock_path = path.with_name(f".{path.name}.lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise BaselineError(f"{lock_path}: cannot create the baseline lock: {exc.strerror}") from None
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            current = os.stat(lock_path, follow_symlinks=False)
        except FileNotFoundError:
            current = None
        if current is not None and current.st_ino == os.fstat(fd).st_ino:
            break
        os.close(fd)  # the file we locked was removed by the previous holder: lock the new one
    try:
        yield
    finally:
        try:
            os.unlink(lock_path)
        finally:
            os.close(fd)


def read_baseline(path: Path) -> dict[str, Any]:
    """The document of the baseline at `path`, read and checked as `Baseline.read` does."""
    return dict(Baseline.read(path).document)


def _read_backend(reader: StrictReader) -> BackendRecord | None:
    """A recorded backend: None when absent, else an object whose text fields are text and whose
    command is argv; never read as "any backend"."""
    if reader.value is None:
        return None
    if not isinstance(reader.value, dict):
        raise reader.fail(f"must be an object (label, name, version, command), got {preview(reader.value)}")
    label = reader.get("label", required=False).optional_text()
    for field in ("name", "version", "model_digest"):
        reader.get(field, required=False).optional_text()
    for field in ("command", "argv"):
        if reader.has(field):
            reader.get(field).strings()
    if reader.has("settings"):
        reader.get("settings").obj()
    identity = BackendIdentity.from_record(reader.value)
    if not identity.name and not identity.command:  # `{}`, or emptied: it would match any backend
        raise reader.fail("names no backend (neither a name nor a command); restore it from git, or re-baseline")
    return BackendRecord(label, identity)


def _read_entry(name: str, reader: StrictReader) -> SetNumbers:
    """One set's entry: what it was, its scopes (recall@10 in every scope with scored queries: the
    recall gate needs it, refused here rather than letting that gate pass unseen), its rows."""
    revision, corpus_hash = reader.get("revision").integer(), reader.get("corpus_hash").text()
    k, query_count = reader.get("k").integer(), reader.get("query_count").count()
    aggregates = read_aggregates(reader.get("aggregates"))
    scopes = reader.get("aggregates")
    for where, scope in [("overall", aggregates.overall),
                         *((f"category.{field_key(c)}", s) for c, s in aggregates.category.items())]:
        if scope.n > 0 and FOUNDING_METRIC not in scope.means:
            raise scopes.child(None, f"{where}.{FOUNDING_METRIC}").fail(
                "missing; the recall gate needs it for every scope with scored queries (restore the file from "
                "git, or remove it and re-baseline)")
    numbers = SetNumbers(
        name=name, revision=revision, corpus_hash=corpus_hash, k=k, query_count=query_count, aggregates=aggregates,
        latency=read_latency(reader.get("latency_ms")),
        queries={qid: _read_row(qid, row) for qid, row in reader.get("queries").items()},
        judgments_hash=reader.get("judgments_hash", required=False).optional_text(),
        resources=read_resources(reader.get("resources", required=False)))
    disagreement = numbers.disagreement()
    if disagreement is not None:
        where, why = disagreement
        raise reader.child(None, where).fail(f"{why}: the aggregates disagree with the per-query rows (edited by "
                                             f"hand?); restore the file from git, or re-baseline")
    return numbers


def _read_row(qid: str, reader: StrictReader) -> QueryNumbers:
    evidence = reader.get("evidence", required=False)
    return QueryNumbers(
        qid=qid, query=reader.get("query", required=False).optional_text() or "",
        category=reader.get("category", required=False).optional_text(),
        split=reader.get("split", required=False).optional_text(),
        group=reader.get("group", required=False).optional_text(),
        scored=reader.get("scored").boolean() if reader.has("scored") else True,
        outcome=reader.get("outcome", required=False).optional_text(),
        metrics=reader.get("metrics").measures(), found=reader.get("found").strings(),
        broken=reader.get("broken").strings() if reader.has("broken") else (),
        evidence=evidence.optional_numbers() if evidence.value is not None else None)
