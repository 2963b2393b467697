"""The history store: every appended run and accepted baseline in one SQLite file, read back as series.

Why SQLite: one file a CI job keeps as an artifact (or a team commits), appended by concurrent
jobs safely (each append is one `BEGIN IMMEDIATE` transaction; a writer waits up to
BUSY_TIMEOUT_SECONDS for another's), queried without loading everything, and in the standard
library. The journal stays the default rollback journal, not WAL: the store is always one
self-contained file, readable from a read-only checkout.

A store that is not one (another file, a newer schema, a damaged page) is one HistoryError line,
exit 2, and is never written to, replaced or "repaired": the history it holds is the team's.

The tables are SCHEMA's below: one `runs` row per appended run or accepted baseline, its sets'
numbers in the others (`query_values`: every scored query's value of a metric, as one JSON object).
Scopes are `overall`, `category:NAME` and `split:NAME`; latency is the `overall` figures `p50`,
`p95`, `max` (ms) and the per-query metric `latency` (ms).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness.errors import UsageError
from harness.fsutil import new_file_beside
from harness.measured import UNJUDGED_COUNT, SetNumbers

HISTORY_FORMAT = "retrieval-gate-history"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_SECONDS = 60.0  # a concurrent appender holds the lock for one transaction: milliseconds
RUN, BASELINE = "run", "baseline"
LATENCY_FIGURES = ("p50", "p95", "max")  # a set's latency summary, ms
LATENCY = "latency"                      # the per-query latency, ms
OVERALL = "overall"

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('run', 'baseline')),
    time TEXT,
    git_commit TEXT,
    backend TEXT NOT NULL,
    identity TEXT,
    condition TEXT,
    machine TEXT,
    exit_code INTEGER,
    resources TEXT
);
CREATE INDEX runs_in_order ON runs (kind, backend, time, id);
CREATE TABLE set_runs (
    run INTEGER NOT NULL REFERENCES runs (id),
    set_name TEXT NOT NULL,
    revision INTEGER,
    corpus_hash TEXT,
    judgments_hash TEXT,
    k INTEGER,
    query_count INTEGER,
    numbers_hash TEXT NOT NULL,
    PRIMARY KEY (run, set_name)
) WITHOUT ROWID;
CREATE TABLE figures (
    run INTEGER NOT NULL REFERENCES runs (id),
    set_name TEXT NOT NULL,
    scope TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    n INTEGER,
    PRIMARY KEY (run, set_name, scope, metric)
) WITHOUT ROWID;
CREATE TABLE query_values (
    run INTEGER NOT NULL REFERENCES runs (id),
    set_name TEXT NOT NULL,
    metric TEXT NOT NULL,
    per_query TEXT NOT NULL,
    PRIMARY KEY (run, set_name, metric)
) WITHOUT ROWID;
"""


class HistoryError(UsageError):
    """The history store cannot be used (missing, not a store, damaged, a newer schema): exit 2, one line."""


# -- a set's numbers: the one place they are read --------------------------------------------------

@dataclass(frozen=True, slots=True)
class StoredNumbers:
    """What the store keeps of one set's result: `figures` (scope, metric) -> (value, n), per-query
    values metric -> {qid: value}; latency figures in ms."""

    figures: Mapping[tuple[str, str], tuple[float, int | None]]
    per_query: Mapping[str, Mapping[str, float]]


def stored_numbers(numbers: SetNumbers, metrics: Sequence[str]) -> StoredNumbers:
    """A set's numbers (a run's or a baseline's: harness/measured.py) as the store keeps them: every
    mean of every scope, the latency summary, and the per-query values of `metrics` (the gated ones)
    and latency. Only scored queries carry per-query values (as in aggregates)."""
    figures: dict[tuple[str, str], tuple[float, int | None]] = {}
    for scope, values in numbers.aggregates.scopes():
        for metric, value in values.means.items():
            figures[(scope, metric)] = (float(value), values.n)
        if values.unjudged is not None:
            figures[(scope, UNJUDGED_COUNT)] = (float(values.unjudged), values.n)
    latency = numbers.latency
    for name, figure in zip(LATENCY_FIGURES, (latency.p50, latency.p95, latency.max)):
        if figure is not None:
            figures[(OVERALL, name)] = (figure, latency.n)
    rows = numbers.rows()
    per_query = {metric: {row.qid: row.metrics[metric] for row in rows if metric in row.metrics} for metric in metrics}
    per_query[LATENCY] = {row.qid: row.latency_ms for row in rows if row.latency_ms is not None}
    return StoredNumbers(figures, {metric: values for metric, values in per_query.items() if values})


# -- what is appended ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SetRecord:
    """One set of an appended run: what makes two runs comparable, and its numbers."""

    name: str
    revision: int | None
    corpus_hash: str | None
    judgments_hash: str | None
    k: int | None
    query_count: int | None
    numbers: StoredNumbers

    def numbers_hash(self) -> str:
        """Equal for two records measuring the same thing with the same numbers (a baseline's set
        carried unchanged into its next version)."""
        document = [self.revision, self.corpus_hash, self.k, sorted(["|".join(key), *value]
                                                                  for key, value in self.numbers.figures.items()),
                    {metric: sorted(values.items()) for metric, values in sorted(self.numbers.per_query.items())}]
        return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Entry:
    """One appended run or accepted baseline. `source` keys it: appending the same twice adds nothing."""

    source: str
    kind: str
    time: str | None
    git_commit: str | None
    backend: str
    sets: tuple[SetRecord, ...]
    identity: str | None = None
    condition: str | None = None
    machine: Mapping[str, object] = field(default_factory=dict)
    exit_code: int | None = None
    resources: Mapping[str, float] = field(default_factory=dict)


def utc_time(text: object) -> str | None:
    """An ISO 8601 time as UTC to the second (`2026-12-01T09:20:13+00:00`), so times sort as text; None
    for anything else."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def source_key(kind: str, *parts: object) -> str:
    """`kind:` and a digest of what identifies the appended thing (the same thing twice: the same key)."""
    return f"{kind}:" + hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


# -- the store -------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Point:
    """One run of a series: which run, when, at which commit, its value; `comparable` changes when the
    set's revision, corpus or k did (values across such a change measure different things)."""

    run: int
    time: str | None
    git_commit: str | None
    identity: str | None
    value: float
    comparable: str
    numbers_hash: str


@dataclass(frozen=True, slots=True)
class SeriesKey:
    kind: str
    backend: str
    set_name: str
    scope: str
    metric: str

    def label(self) -> str:
        scope = "" if self.scope == OVERALL else f" {self.scope}"
        return f"{self.backend}: {self.set_name}{scope} {self.metric}"


class HistoryStore(contextlib.AbstractContextManager["HistoryStore"]):
    """An open history store. `append` adds an entry in one transaction; the readers return series."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._connection = connection

    # -- opening ---------------------------------------------------------------------------------

    @classmethod
    def for_append(cls, path: str | os.PathLike[str]) -> HistoryStore:
        """The store at `path`, created (empty, atomically) when nothing is there, checked whole
        (`PRAGMA quick_check`) before anything is written to it."""
        path = Path(path)
        if not os.path.lexists(path):
            _create(path)
        store = cls._open(path, read_only=False)
        store._check_whole()
        return store

    @classmethod
    def for_reading(cls, path: str | os.PathLike[str]) -> HistoryStore:
        """The store at `path`, opened read-only; HistoryError when there is none."""
        path = Path(path)
        if not path.is_file():
            raise HistoryError(f"{path}: no history store here (a run appends to one with --history FILE, "
                               f"`history import` fills one from reports and git)")
        return cls._open(path, read_only=True)

    @classmethod
    def _open(cls, path: Path, *, read_only: bool) -> HistoryStore:
        if not path.is_file():
            raise HistoryError(f"{path}: not a history store (not a regular file); it was left as it is")
        uri = f"{path.resolve().as_uri()}?mode={'ro' if read_only else 'rw'}"
        try:
            connection = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
        except sqlite3.Error as exc:
            raise HistoryError(f"{path}: cannot open the history store: {exc}") from None
        store = cls(path, connection)
        try:
            store._check_format()
        except BaseException:
            connection.close()
            raise
        return store

    def _check_format(self) -> None:
        meta = dict(self._rows("SELECT key, value FROM meta"))
        if meta.get("format") != HISTORY_FORMAT:
            raise HistoryError(f"{self.path}: meta.format: not a retrieval-gate history store; it was left as it is")
        if meta.get("schema") != str(SCHEMA_VERSION):
            raise HistoryError(f"{self.path}: meta.schema: {meta.get('schema')!r}, this harness reads schema "
                               f"{SCHEMA_VERSION}; it was left as it is (a newer harness wrote it?)")

    def _damaged(self, exc: BaseException) -> HistoryError:
        return HistoryError(f"{self.path}: not a readable history store ({exc}); it was left as it is: "
                            f"restore it from the last good copy (a CI artifact, git)")

    def _check_whole(self) -> None:
        rows = self._rows("PRAGMA quick_check")
        if not rows or rows[0][0] != "ok":
            raise self._damaged(RuntimeError(f"integrity check: {rows[0][0] if rows else 'no answer'}"))

    def close(self) -> None:
        self._connection.close()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- appending -------------------------------------------------------------------------------

    def append(self, entry: Entry) -> bool:
        """Add `entry` in one transaction; False (nothing added) when its `source` is already there."""
        execute = self._connection.execute
        try:
            execute("BEGIN IMMEDIATE")
            try:
                if execute("SELECT 1 FROM runs WHERE source = ?", (entry.source,)).fetchone():
                    execute("ROLLBACK")
                    return False
                run = execute(
                    "INSERT INTO runs (source, kind, time, git_commit, backend, identity, condition, machine, "
                    "exit_code, resources) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (entry.source, entry.kind, entry.time, entry.git_commit, entry.backend, entry.identity,
                     entry.condition, json.dumps(dict(entry.machine), sort_keys=True), entry.exit_code,
                     json.dumps(dict(entry.resources), sort_keys=True))).lastrowid
                if run is None:
                    raise HistoryError(f"{self.path}: the run was not appended (SQLite gave it no row id)")
                for record in entry.sets:
                    _insert_set(self._connection, run, record)
                execute("COMMIT")
            except BaseException:
                if self._connection.in_transaction:
                    execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None
        return True

    # -- reading ---------------------------------------------------------------------------------

    def series_keys(self, kind: str) -> list[SeriesKey]:
        """Every series of `kind` the store holds, by backend, set, scope (overall first) and metric."""
        rows = self._rows("SELECT DISTINCT r.backend, f.set_name, f.scope, f.metric FROM figures f "
                          "JOIN runs r ON r.id = f.run WHERE r.kind = ?", (kind,))
        keys = [SeriesKey(kind, *row) for row in rows]
        return sorted(keys, key=lambda k: (k.backend, k.set_name, k.scope != OVERALL, k.scope, k.metric))

    def series(self, key: SeriesKey) -> list[Point]:
        """The points of one series in time order (then append order). Accepted baselines whose set
        entry did not change from the previous one (another set was re-baselined) are one point."""
        rows = self._rows(
            "SELECT r.id, r.time, r.git_commit, r.identity, f.value, s.revision, s.corpus_hash, s.k, "
            "s.numbers_hash FROM runs r JOIN figures f ON f.run = r.id "
            "JOIN set_runs s ON s.run = r.id AND s.set_name = f.set_name "
            "WHERE r.kind = ? AND r.backend = ? AND f.set_name = ? AND f.scope = ? AND f.metric = ? "
            "ORDER BY r.time IS NULL, r.time, r.id", (key.kind, key.backend, key.set_name, key.scope, key.metric))
        points: list[Point] = []
        for run, time, commit, identity, value, revision, corpus, k, numbers_hash in rows:
            if key.kind == BASELINE and points and points[-1].numbers_hash == numbers_hash:
                continue
            # the same set version (a judgments edit bumps the revision: docs/sets.md, "set.json"): values compare
            comparable = f"revision {revision}, corpus {(corpus or '?')[:12]}, k {k}"
            points.append(Point(run, time, commit, identity, value, comparable, numbers_hash))
        return points

    def per_query(self, runs: Sequence[int], set_name: str, metric: str) -> dict[int, dict[str, float]]:
        """run -> {qid: value} of `metric` for the runs that kept them (a scope's queries: filter by qid)."""
        found: dict[int, dict[str, float]] = {}
        for start in range(0, len(runs), 500):  # SQLite's bound-parameter limit
            chunk = list(runs[start:start + 500])
            marks = ", ".join("?" * len(chunk))
            for run, text in self._rows(f"SELECT run, per_query FROM query_values WHERE set_name = ? AND metric = ? "
                                        f"AND run IN ({marks})", (set_name, metric, *chunk)):
                found[run] = json.loads(text)
        return found

    def run_count(self) -> dict[str, int]:
        return {kind: count for kind, count in self._rows("SELECT kind, count(*) FROM runs GROUP BY kind")}

    def _rows(self, sql: str, parameters: Sequence[object] = ()) -> list[tuple]:
        try:
            return self._connection.execute(sql, tuple(parameters)).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None


def _insert_set(connection: sqlite3.Connection, run: int, record: SetRecord) -> None:
    connection.execute(
        "INSERT INTO set_runs (run, set_name, revision, corpus_hash, judgments_hash, k, query_count, numbers_hash) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (run, record.name, record.revision, record.corpus_hash,
                                           record.judgments_hash, record.k, record.query_count, record.numbers_hash()))
    connection.executemany("INSERT INTO figures (run, set_name, scope, metric, value, n) VALUES (?, ?, ?, ?, ?, ?)",
                           [(run, record.name, scope, metric, value, n)
                            for (scope, metric), (value, n) in record.numbers.figures.items()])
    connection.executemany("INSERT INTO query_values (run, set_name, metric, per_query) VALUES (?, ?, ?, ?)",
                           [(run, record.name, metric, json.dumps(values, sort_keys=True, separators=(",", ":")))
                            for metric, values in record.numbers.per_query.items()])


def _create(path: Path) -> None:
    """A new, empty store at `path`, made beside it and linked into place: never over a file that
    appeared meanwhile (a concurrent first append), which is then the one used."""
    fd, temp = new_file_beside(path, ".new")
    os.close(fd)
    try:
        connection = sqlite3.connect(temp, isolation_level=None)
        try:
            connection.executescript(SCHEMA)
            connection.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                                   [("format", HISTORY_FORMAT), ("schema", str(SCHEMA_VERSION))])
        finally:
            connection.close()
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)
    except OSError as exc:
        raise HistoryError(f"{path}: cannot create the history store: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
