"""Baseline files: build one from a run, read it back strictly (once, as a typed `Baseline`), write it atomically."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BaselineError
from harness.fsutil import atomic_write_text
from harness.strict_json import is_finite_number, read_json_file, strict_json_dumps
from harness.gating.identity import BackendIdentity, text_or_none
from harness.gating.policy import FOUNDING_METRIC
from harness.records import QuerySet, SetResult
from harness.quoting import field_key, preview

BASELINE_FORMAT = "retrieval-gate-baseline"
BASELINE_VERSION = 1
DEFAULT_BASELINE_PATH = Path("baselines/current.json")


@dataclass(frozen=True)
class Baseline:
    """A baseline file read once: where it is, its per-set entries, whose backend, when and at which commit.

    Gating reads `entries` (through `set_entry_for`), the identity check `identity`, every output
    the `gated_against` record, `--update-baseline` the `document` it replaces.
    """

    path: Path
    entries: Mapping[str, Mapping]
    identity: BackendIdentity
    created: str | None
    commit: str | None
    document: Mapping[str, object]

    @classmethod
    def read(cls, path: Path) -> Baseline:
        """The baseline at `path`; BaselineError naming file and field when it is not one."""
        document = read_baseline(path)
        return cls(path=path, entries=document["sets"],
                   identity=BackendIdentity.from_record(document["backend"]),  # type: ignore[arg-type]
                   created=text_or_none(document.get("created")), commit=text_or_none(document.get("git_commit")),
                   document=document)

    def identity_for(self, name: str) -> BackendIdentity:
        """Whose backend the set `name` was recorded for: its own record, else the file's (older files)."""
        record = (self.entries.get(name) or {}).get("backend")
        return BackendIdentity.from_record(record) if record is not None else self.identity

    def gated_against(self, names: Sequence[str] = ()) -> dict[str, object]:
        """What a report says it was gated against: the file, whose backend (for the sets `names`),
        when, at which commit."""
        backends = dict.fromkeys(self.identity_for(name).describe() for name in names) or {self.identity.describe(): 1}
        return {"path": str(self.path), "backend": "; ".join(backends), "created": self.created,
                "git_commit": self.commit}


def build_baseline(set_results: list[SetResult], provenance: dict[str, object], *,
                   judgments: Mapping[str, str] | None = None) -> dict[str, object]:
    """The baseline document for a complete run: identity, per-set aggregates and per-query values.

    `judgments` maps set name -> `QuerySet.judgments_hash` of the sets the run measured (when
    None: `provenance["sets"][name]["judgments_hash"]`, if the provenance carries it); each
    set's entry records it, so a later gold edit without a revision bump is refused instead
    of compared (`set_entry_for`). The result is checked as `read_baseline` would check it
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
    sets = {r.name: {**_set_entry(r, judgments.get(r.name)), "backend": backend} for r in set_results}
    for name, entry in sets.items():
        _check_entry(entry, f"this run: sets.{field_key(name)}")
    return {
        "format": BASELINE_FORMAT,
        "version": BASELINE_VERSION,
        "created": provenance.get("started"),
        "harness_version": provenance.get("harness_version"),
        "git_commit": provenance.get("git_commit"),
        "backend": backend,  # this write's; each set keeps its own too (another backend may re-baseline one set)
        "condition": provenance.get("condition"),
        "metric_definitions": provenance.get("metric_definitions"),
        "sets": sets,
    }


def backend_record(provenance: dict[str, object]) -> dict[str, object]:
    """Who the baseline is for: the label, the portable command and the banner's identity fields."""
    backend = provenance.get("backend") or {}
    banner = (provenance.get("adapter") or {}).get("banner")
    identity = BackendIdentity.of(banner, [str(a) for a in backend.get("argv") or []])
    return {"label": backend.get("label"), **identity.to_dict()}


def _set_entry(result: SetResult, judgments_hash: str | None = None) -> dict[str, object]:
    return {
        "revision": result.revision, "corpus_hash": result.corpus_hash,
        **({"judgments_hash": judgments_hash} if judgments_hash else {}), "k": result.k,
        "query_count": result.query_count, "aggregates": result.aggregates,
        "latency_ms": result.latency_ms,
        "queries": {q.qid: {"query": q.query, "category": q.category, "split": q.split, "group": q.group,
                            "scored": q.scored,
                            "outcome": q.outcome, "metrics": q.metrics, "found": list(q.found),
                            "broken": [c.key for c in q.contracts if not c.passed],
                            **({"evidence": dict(q.evidence)} if q.evidence is not None else {})}
                    for q in result.queries},
    }


def write_baseline(path: Path, baseline: dict[str, object], *, merge: bool = True) -> None:
    """Write atomically. With `merge`, sets not in this run keep their previous entries.

    Read, merge and replace happen under an exclusive lock (`baseline_lock`), so two runs
    updating different sets of one baseline at the same time both keep their set.
    """
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


# Where the layout opens an object one key a line (`*`: any key) when it holds objects; all else is one line.
_EXPANDED = ((), ("sets",), ("sets", "*"), ("sets", "*", "aggregates"), ("sets", "*", "aggregates", "*"),
             ("sets", "*", "queries"))


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
    lines: list[str] = []
    _lay_out(document, (), "", 0, lines, last=True)
    return "\n".join(lines) + "\n"


def _lay_out(value: object, path: tuple[str, ...], prefix: str, depth: int, lines: list[str], *, last: bool) -> None:
    comma = "" if last else ","
    indent = " " * depth
    expanded = isinstance(value, Mapping) and any(isinstance(item, Mapping) for item in value.values()) and any(
        len(pattern) == len(path) and all(p in ("*", key) for p, key in zip(pattern, path)) for pattern in _EXPANDED)
    if not expanded:
        lines.append(f"{indent}{prefix}{json.dumps(value, ensure_ascii=False, sort_keys=True)}{comma}")
        return
    lines.append(f"{indent}{prefix}{{")
    items = list(value.items())
    for index, (key, item) in enumerate(items):
        _lay_out(item, (*path, str(key)), json.dumps(str(key), ensure_ascii=False) + ": ", depth + 1, lines,
                 last=index == len(items) - 1)
    lines.append(f"{indent}}}{comma}")


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


def read_baseline(path: Path) -> dict[str, object]:
    """Read and validate a baseline; any defect is a BaselineError naming file and field."""
    label = str(path)
    if not path.exists():
        raise BaselineError(f"{label}: no baseline file; record one with --update-baseline (or run with --no-gate)")
    document = read_json_file(path, BaselineError, label, what="corrupt baseline")
    return check_baseline(document, label)


def check_baseline(document: object, label: str) -> dict[str, object]:
    """Validate a baseline document already parsed (read from `label`); BaselineError naming the field."""
    if not isinstance(document, dict) or document.get("format") != BASELINE_FORMAT:
        raise BaselineError(f"{label}: format: not a retrieval-gate baseline")
    if document.get("version") != BASELINE_VERSION:
        raise BaselineError(f"{label}: version: expected {BASELINE_VERSION}, got {document.get('version')!r}")
    _check_backend(document.get("backend"), f"{label}: backend")
    sets = document.get("sets")
    if not isinstance(sets, dict):
        raise BaselineError(f"{label}: sets: missing or not an object")
    for name, entry in sets.items():
        _check_entry(entry, f"{label}: sets.{field_key(name)}")
    if document.get("backend") is None:  # a removed record would gate any backend against this file
        raise BaselineError(f"{label}: backend: missing; restore it from git, or re-baseline")
    return document


def _check_backend(backend: object, where: str) -> None:
    """The recorded backend: absent (refused by the caller where it must be there), or an object whose
    text fields are text and whose command is argv; never read as "any backend"."""
    if backend is None:
        return
    if not isinstance(backend, dict):
        raise BaselineError(f"{where}: must be an object (label, name, version, command), got {preview(backend)}")
    for field in ("label", "name", "version", "model_digest"):
        if backend.get(field) is not None and not isinstance(backend[field], str):
            raise BaselineError(f"{where}.{field}: must be a string, got {preview(backend[field])}")
    for field in ("command", "argv"):
        value = backend.get(field)
        if value is not None and not (isinstance(value, list) and all(isinstance(part, str) for part in value)):
            raise BaselineError(f"{where}.{field}: must be a list of strings, got {preview(value)}")
    if backend.get("settings") is not None and not isinstance(backend["settings"], dict):
        raise BaselineError(f"{where}.settings: must be an object, got {preview(backend['settings'])}")


def _check_entry(entry: object, where: str) -> None:
    if not isinstance(entry, dict):
        raise BaselineError(f"{where}: must be an object")
    for field, kind in (("revision", int), ("corpus_hash", str), ("k", int), ("query_count", int),
                        ("aggregates", dict), ("queries", dict), ("latency_ms", dict)):
        if not isinstance(entry.get(field), kind) or isinstance(entry.get(field), bool):
            raise BaselineError(f"{where}.{field}: missing or not a {kind.__name__}")
    _check_backend(entry.get("backend"), f"{where}.backend")
    if "judgments_hash" in entry and not isinstance(entry["judgments_hash"], str):
        raise BaselineError(f"{where}.judgments_hash: must be a string")
    overall = entry["aggregates"].get("overall")
    categories = entry["aggregates"].get("category")
    if not isinstance(overall, dict) or not isinstance(categories, dict):
        raise BaselineError(f"{where}.aggregates: needs 'overall' and 'category'")
    _check_scope(overall, f"{where}.aggregates.overall")
    for category, values in categories.items():
        if not isinstance(values, dict):
            raise BaselineError(f"{where}.aggregates.category.{field_key(category)}: must be an object")
        _check_scope(values, f"{where}.aggregates.category.{field_key(category)}")
    _check_numbers(entry["latency_ms"], f"{where}.latency_ms")
    for qid, row in entry["queries"].items():
        if not isinstance(row, dict) or not isinstance(row.get("found"), list) or not isinstance(row.get("metrics"), dict):
            raise BaselineError(f"{where}.queries.{field_key(qid)}: needs 'found' and 'metrics'")
        if not all(isinstance(doc_id, str) for doc_id in row["found"]):
            raise BaselineError(f"{where}.queries.{field_key(qid)}.found: must be a list of document ids")
        _check_numbers(row["metrics"], f"{where}.queries.{field_key(qid)}.metrics")
        if "broken" in row and not (isinstance(row["broken"], list) and all(isinstance(k, str) for k in row["broken"])):
            raise BaselineError(f"{where}.queries.{field_key(qid)}.broken: must be a list of contract keys")
        if "evidence" in row:  # per-query evidence values; null = unjudgeable
            if not isinstance(row["evidence"], dict):
                raise BaselineError(f"{where}.queries.{field_key(qid)}.evidence: must be an object")
            _check_numbers({k: v for k, v in row["evidence"].items() if v is not None},
                           f"{where}.queries.{field_key(qid)}.evidence")
        if not isinstance(row.get("scored", True), bool):
            raise BaselineError(f"{where}.queries.{field_key(qid)}.scored: must be true or false")
        if row.get("category") is not None and not isinstance(row["category"], str):
            raise BaselineError(f"{where}.queries.{field_key(qid)}.category: must be a string")


def _check_scope(values: dict, where: str) -> None:
    """One aggregate scope: finite numbers, a count `n`, and the gated metric whenever n > 0.

    Without recall@10 in a scope that has scored queries the recall gate would have nothing
    to compare against: refused here rather than letting that gate pass unseen.
    """
    _check_numbers(values, where)
    count = values.get("n")
    if type(count) is not int or count < 0:
        raise BaselineError(f"{where}.n: missing or not a count of scored queries")
    if count > 0 and FOUNDING_METRIC not in values:
        raise BaselineError(f"{where}.{FOUNDING_METRIC}: missing; the recall gate needs it for every scope with "
                            f"scored queries (restore the file from git, or remove it and re-baseline)")


def _check_numbers(values: dict, where: str) -> None:
    """Metric values the gates compute with must be finite numbers (a hand-edited string must not crash them)."""
    for name, value in values.items():
        if not is_finite_number(value):
            raise BaselineError(f"{where}.{field_key(name)}: must be a finite number, got {preview(value, 60)}")


def set_entry_for(baseline: dict[str, object], result: SetResult | QuerySet, label: str, *,
                  k: int | None = None) -> dict[str, object]:
    """The baseline entry comparable with a set or its result, or a BaselineError saying why not.

    Called with the loaded set before the run (k as asked), so a mismatch stops it before the adapter starts.
    """
    name, k = result.name, k if k is not None else result.k
    entry = baseline["sets"].get(name)
    if entry is None:
        raise BaselineError(f"{label}: sets: no baseline for set {name!r}; record it with --update-baseline")
    for field, now in (("revision", result.revision), ("corpus_hash", result.corpus_hash), ("k", k)):
        if entry[field] != now:
            raise BaselineError(
                f"{label}: sets.{name}.{field}: baseline has {entry[field]!r}, this run has {now!r}; "
                f"the numbers are not comparable: re-baseline deliberately with --update-baseline")
    # Pins cover documents, not judgments: a gold edit without a revision bump shows here. Baselines
    # written before the field existed, and results that do not carry it, compare on the rest.
    recorded, now_hash = entry.get("judgments_hash"), getattr(result, "judgments_hash", "")
    if recorded and now_hash and recorded != now_hash:
        raise BaselineError(
            f"{label}: sets.{name}.judgments_hash: judgments changed without a revision bump (baseline "
            f"{recorded[:12]}, set {now_hash[:12]}); a changed gold is neither a regression nor an improvement: "
            f"bump the set's revision and re-baseline with --update-baseline")
    return entry
