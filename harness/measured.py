"""A set's measured numbers as typed records, and the one strict reader of the documents that hold them.

A run produces them (`records.SetResult.numbers()`), a baseline file is read into them
(harness/gating/baseline.py), a report is read into them (harness/report/reading.py); the gates,
`compare`, the re-baseline change table and `baselines diff` compare record with record. The JSON
shapes stay as the report and baseline formats define them (docs/design.md): each record writes
its own (`to_dict`) and `read_*` here reads it back, strictly, naming the file and the first bad
field in one line.

Scopes: `overall`, each `category` and each `split` of a set's scored queries. A scope holds the
mean of every measure its queries all carry, the count of unjudged documents (a sum), and, for
sets with evidence (docs/sets.md, "Evidence"), the evidence figures, whose per-query value may be
null (unjudgeable): their mean is over the judged queries only.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from harness.errors import HarnessError
from harness.quoting import field_key
from harness.strict_json import is_finite_number

# The per-query count of unjudged documents in the top 10: summed, not averaged, in a scope.
UNJUDGED_COUNT = "unjudged@10"
COUNTS = ("n", UNJUDGED_COUNT)  # the keys of a scope or a query's values that are counts, not measures
# A scope's mean and the mean its rows give may differ by float noise this small, never more.
AGREEMENT = 1e-9
SCOPE_GROUPS = ("category", "split")


def resampling_unit(qid: str, group: str | None) -> str:
    """What paired statistics resample: the query's `group` (paraphrases, translations of one
    question are not independent), else the query itself."""
    return group or qid


# -- the strict reader ---------------------------------------------------------------------------------

class StrictReader:
    """A cursor into a parsed JSON document that names the file and the path of every field it rejects.

    `error` is the exception class raised (`ReportError` for reports, `BaselineError` for
    baselines): one line, `label: path.to.field: why`.
    """

    __slots__ = ("value", "label", "where", "error")

    def __init__(self, value: object, label: str, error: type[HarnessError], where: str = "") -> None:
        self.value = value
        self.label = label
        self.where = where
        self.error = error

    def fail(self, why: str) -> HarnessError:
        return self.error(f"{self.label}: {self.where}: {why}" if self.where else f"{self.label}: {why}")

    def child(self, value: object, step: str) -> StrictReader:
        where = f"{self.where}{step}" if step.startswith("[") else (f"{self.where}.{step}" if self.where else step)
        return StrictReader(value, self.label, self.error, where)

    def obj(self) -> dict[str, object]:
        if not isinstance(self.value, dict):
            raise self.fail(f"must be an object, got {kind_of(self.value)}")
        return self.value

    def get(self, key: str, required: bool = True) -> StrictReader:
        document = self.obj()
        if key not in document and required:
            raise self.child(None, key).fail("missing")
        return self.child(document.get(key), key)

    def optional(self, key: str, default: object) -> StrictReader:
        """The field, or `default` when the object has no such key (a null given stays null)."""
        document = self.obj()
        return self.child(document[key] if key in document else default, key)

    def only(self, known: Collection[str]) -> StrictReader:
        """Itself, an object whose every key is known; else the first unknown key is refused by name
        (a misspelt key must not switch a setting off unseen)."""
        unknown = sorted(set(self.obj()) - set(known))
        if unknown:
            raise self.child(None, field_key(unknown[0])).fail(f"unknown field (known: {', '.join(sorted(known))})")
        return self

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and self.value.get(key) is not None

    def optional_text(self) -> str | None:
        return None if self.value is None else self.text()

    def text(self) -> str:
        if not isinstance(self.value, str):
            raise self.fail(f"must be a string, got {kind_of(self.value)}")
        try:
            self.value.encode("utf-8")
        except UnicodeEncodeError:
            raise self.fail("holds a lone surrogate, not text") from None
        return self.value

    def optional_integer(self) -> int | None:
        return None if self.value is None else self.integer()

    def integer(self) -> int:
        if isinstance(self.value, bool) or not isinstance(self.value, int) or abs(self.value) > 2 ** 53:
            raise self.fail(f"must be an integer, got {kind_of(self.value)}")
        return self.value

    def version(self, expected: int) -> int:
        """A document's `format`: exactly the integer `expected` (true and 1.0 are not formats)."""
        if type(self.value) is not int or self.value != expected:
            raise self.fail(f"expected the integer {expected}, got {kind_of(self.value)}")
        return self.value

    def integer_in(self, low: int, high: int, why: str = "") -> int:
        """An integer from `low` to `high`; `why` says what the range means (e.g. what could never fail past it)."""
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(f"must be an integer from {low} to {high}, got {kind_of(value)}" + (f"; {why}" if why else ""))
        return value

    def number_in(self, low: float, high: float, *, above: bool = False, below: bool = False, why: str = "") -> float:
        """A finite number from `low` to `high` (`above`: more than `low`; `below`: less than `high`), as a float;
        `why` says what the range means."""
        value = self.value
        if is_finite_number(value) and (low < value if above else low <= value) and (
                value < high if below else value <= high):
            return float(value)
        ends = [f"{'above' if above else 'from'} {_plain(low)}", f"{'below' if below else 'up to'} {_plain(high)}"]
        span = " and ".join(ends) if above or below else f"from {_plain(low)} to {_plain(high)}"
        raise self.fail(f"must be a number {span}, got {kind_of(value)}" + (f"; {why}" if why else ""))

    def count(self) -> int:
        value = self.integer()
        if value < 0:
            raise self.fail(f"must be >= 0, got {value}")
        return value

    def optional_number(self) -> float | None:
        return None if self.value is None else self.number()

    def number(self) -> float:
        value = self.value
        if not is_finite_number(value):
            raise self.fail(f"must be a finite number, got {kind_of(value)}")
        return value  # an int stays an int, so a document read back writes the same text

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            raise self.fail(f"must be true or false, got {kind_of(self.value)}")
        return self.value

    def items(self) -> list[tuple[str, StrictReader]]:
        return [(key, self.child(value, field_key(key))) for key, value in self.obj().items()]

    def elements(self) -> list[StrictReader]:
        if not isinstance(self.value, list):
            raise self.fail(f"must be a list, got {kind_of(self.value)}")
        return [self.child(value, f"[{index}]") for index, value in enumerate(self.value)]

    def strings(self) -> tuple[str, ...]:
        return tuple(element.text() for element in self.elements())

    def ids(self) -> tuple[str, ...]:
        """A list of unique, non-empty document ids (a string is refused, never split into characters)."""
        values = self.strings()
        if any(not value for value in values):
            raise self.fail("holds an empty document id")
        if len(set(values)) != len(values):
            raise self.fail("repeats a document id")
        return values

    def numbers(self) -> dict[str, float]:
        return {key: value.number() for key, value in self.items()}

    def optional_numbers(self) -> dict[str, float | None]:
        return {key: value.optional_number() for key, value in self.items()}

    def fraction(self) -> float:
        """A measure's value: every measure of the registry is a fraction in [0, 1]."""
        value = self.number()
        if not 0 <= value <= 1:
            raise self.fail(f"must lie between 0 and 1 (a measure's value), got {kind_of(value)}")
        return value

    def measures(self) -> dict[str, float]:
        """A query's or a scope's measure values by name: fractions in [0, 1], but unjudged@10, a count,
        and a scope's `n`, a count."""
        return {key: value.count() if key in COUNTS else value.fraction() for key, value in self.items()}


def _plain(bound: float) -> str:
    """A range's end as a person writes it: 86400000, 0.5, 1e+300."""
    return str(int(bound)) if float(bound).is_integer() and abs(bound) < 1e15 else f"{bound:g}"


def kind_of(value: object) -> str:
    """A value as an error line shows it: its type for containers, else its JSON text, cut."""
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return type(value).__name__
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (str, int, float, bool)) else repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


# -- a scope's numbers ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class EvidenceFigure:
    """One evidence measure over a scope: the mean over the `judged` queries (None when none is),
    the `null` ones left out (unjudgeable or nothing to judge), and the sum of the judged values."""

    mean: float | None
    judged: int
    null: int
    total: float

    def to_dict(self) -> dict[str, object]:
        return {"mean": self.mean, "judged": self.judged, "null": self.null, "sum": self.total}


@dataclass(frozen=True, slots=True)
class ScopeNumbers:
    """One scope of a set: `n` scored queries, each measure's mean over them (`means`), the count of
    unjudged documents in their top 10s (`unjudged`, a sum; None when not recorded), and the
    evidence figures (`evidence`, empty for a set without evidence)."""

    n: int
    means: Mapping[str, float] = field(default_factory=dict)
    unjudged: int | None = None
    evidence: Mapping[str, EvidenceFigure] = field(default_factory=dict)

    def mean(self, metric: str, *, nullable: bool = False) -> tuple[float | None, int]:
        """(the mean or None, the queries it is over). `nullable` (an evidence measure): over the
        queries judged on it, (None, 0) when the set has none."""
        if nullable:
            figure = self.evidence.get(metric)
            return (figure.mean, figure.judged) if figure is not None else (None, 0)
        return self.means.get(metric), self.n

    def to_dict(self) -> dict[str, object]:
        """The scope as documents write it: `n`, each mean, `unjudged@10` (the evidence goes in its own block)."""
        row: dict[str, object] = {"n": self.n, **self.means}
        if self.unjudged is not None:
            row[UNJUDGED_COUNT] = self.unjudged
        return row


@dataclass(frozen=True, slots=True)
class Aggregates:
    """A set's scopes: overall, each category, each split (sorted by name, as the evaluator makes them)."""

    overall: ScopeNumbers
    category: Mapping[str, ScopeNumbers] = field(default_factory=dict)
    split: Mapping[str, ScopeNumbers] = field(default_factory=dict)

    def scope(self, category: str | None = None) -> ScopeNumbers | None:
        """`overall` (category None) or the named category; None when the set has no such category."""
        return self.overall if category is None else self.category.get(category)

    def scopes(self) -> Iterator[tuple[str, ScopeNumbers]]:
        """Every scope with its label: `overall`, then `category:NAME`, then `split:NAME`."""
        yield "overall", self.overall
        for group in SCOPE_GROUPS:
            for name, scope in getattr(self, group).items():
                yield f"{group}:{name}", scope

    @property
    def has_evidence(self) -> bool:
        return bool(self.overall.evidence)

    def to_dict(self) -> dict[str, object]:
        document: dict[str, object] = {
            "overall": self.overall.to_dict(),
            "category": {name: scope.to_dict() for name, scope in self.category.items()},
            "split": {name: scope.to_dict() for name, scope in self.split.items()}}
        if self.has_evidence:
            def figures(scope: ScopeNumbers) -> dict[str, object]:
                return {name: figure.to_dict() for name, figure in scope.evidence.items()}
            document["evidence"] = {
                "overall": figures(self.overall),
                **{group: {name: figures(scope) for name, scope in getattr(self, group).items()}
                   for group in SCOPE_GROUPS}}
        return document


@dataclass(frozen=True, slots=True)
class Latency:
    """A set's latency summary in milliseconds: n timed queries, nearest-rank p50 and p95, the max
    (all None when nothing was timed)."""

    n: int = 0
    p50: float | None = None
    p95: float | None = None
    max: float | None = None

    def to_dict(self) -> dict[str, object]:
        if self.p50 is None or self.p95 is None or self.max is None:
            return {"n": self.n}
        return {"n": self.n, "p50": self.p50, "p95": self.p95, "max": self.max}


# What each resource figure is: its field, its unit, its words (every output and the gates read this table).
RESOURCE_FIGURES = (("startup_seconds", "s", "start-up"), ("peak_rss_mib", "MiB", "peak RSS"),
                    ("index_bytes", "bytes", "index size"))


def resource_text(value: float | None, unit: str) -> str:
    """A resource figure as every output and gate message writes it: `1.25 s`, `310.5 MiB`, `16,324 bytes`."""
    if value is None:
        return "not measured"
    if unit == "bytes":
        return f"{int(value):,} bytes"
    return f"{value:.{2 if unit == 's' else 1}f} {unit}"


@dataclass(frozen=True, slots=True)
class Resources:
    """What the adapter cost in the run that measured a set (docs/gate.md, "Resource budgets"): seconds
    from spawn to its ready banner, the peak resident memory of its process group in MiB
    (harness/process_memory.py), and the index size in bytes its banner reported; each None when not
    measured. The figures are the run's: every set of one run carries the same."""

    startup_seconds: float | None = None
    peak_rss_mib: float | None = None
    index_bytes: int | None = None

    @property
    def measured(self) -> bool:
        return any(getattr(self, name) is not None for name, _, _ in RESOURCE_FIGURES)

    def figure(self, name: str) -> float | None:
        """The figure `name` (a field of RESOURCE_FIGURES), None when not measured."""
        value: float | None = getattr(self, name)
        return value

    def to_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name, _, _ in RESOURCE_FIGURES if getattr(self, name) is not None}

    @classmethod
    def largest(cls, records: Iterable[Resources]) -> Resources:
        """Each figure's largest over `records` (shards of one run, each its own adapter: the most one cost)."""
        rows = list(records)
        return cls(**{name: max((v for v in (getattr(r, name) for r in rows) if v is not None), default=None)
                      for name, _, _ in RESOURCE_FIGURES})


# -- a query's and a set's numbers -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class QueryNumbers:
    """What a run's row and a baseline's row both hold of one query: its labels, whether it counts
    (`scored`), its outcome, each measure's value, its evidence figures (None per figure when
    unjudgeable; None for a query without evidence), the relevant ids it found in the top 10
    (what a flip compares), the keys of its broken contracts, and its latency (None in a baseline,
    which keeps only the summary)."""

    qid: str
    query: str = ""
    category: str | None = None
    split: str | None = None
    group: str | None = None
    scored: bool = True
    outcome: str | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    evidence: Mapping[str, float | None] | None = None
    found: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()
    latency_ms: float | None = None

    @property
    def resampling_unit(self) -> str:
        return resampling_unit(self.qid, self.group)

    def value(self, metric: str, *, nullable: bool = False) -> float | None:
        """The query's value of `metric` (an evidence figure when `nullable`); None when it has none."""
        if nullable:
            return (self.evidence or {}).get(metric)
        return self.metrics.get(metric)


@dataclass(frozen=True)
class SetNumbers:
    """A set's measured numbers: what it was (revision, corpus, judgments, k, query count), its
    scopes, its latency, every query's row by qid in the set's order, and the run's resources."""

    name: str
    revision: int
    corpus_hash: str
    k: int
    query_count: int
    aggregates: Aggregates
    latency: Latency
    queries: Mapping[str, QueryNumbers]
    judgments_hash: str | None = None
    resources: Resources = Resources()

    def rows(self, category: str | None = None) -> list[QueryNumbers]:
        """The scored rows of the set, or of one category."""
        return [row for row in self.queries.values() if row.scored and (category is None or row.category == category)]

    def disagreement(self) -> tuple[str, str] | None:
        """The first figure of the aggregates that the rows do not give, as (its path below the set, why),
        or None when every one agrees: a scope's n is its scored rows, each mean their mean, unjudged@10
        their sum (a scope whose rows do not name their category or split is not checked).

        A baseline edited by hand (or truncated) is then refused instead of gated: edited aggregates
        over untouched rows would let a drop pass.
        """
        scored = self.rows()
        for label, scope in self.aggregates.scopes():
            group, _, name = label.partition(":")
            if name and any(getattr(row, group) is None for row in scored):
                continue
            rows = [row for row in scored if not name or getattr(row, group) == name]
            path = f"aggregates.{group}" + (f".{field_key(name)}" if name else "")
            if scope.n != len(rows):
                return f"{path}.n", f"{scope.n}, but {len(rows)} scored queries in the rows"
            for metric, mean in scope.means.items():
                if rows and all(metric in row.metrics for row in rows):
                    given = sum(row.metrics[metric] for row in rows) / len(rows)
                    if abs(given - mean) > AGREEMENT:
                        return f"{path}.{field_key(metric)}", f"{mean:.6g}, but its rows give {given:.6g}"
            if scope.unjudged is not None and all(UNJUDGED_COUNT in row.metrics for row in rows):
                given_count = sum(int(row.metrics[UNJUDGED_COUNT]) for row in rows)
                if given_count != scope.unjudged:
                    return f"{path}.{UNJUDGED_COUNT}", f"{scope.unjudged}, but its rows give {given_count}"
        return None


# -- reading them back ----------------------------------------------------------------------------------

def read_scope(reader: StrictReader, figures: StrictReader | None = None) -> ScopeNumbers:
    """A scope as documents write it: `n`, finite means, an optional `unjudged@10` count; its evidence
    figures from `figures`, its entry in the evidence block (None or null: none)."""
    values = reader.measures()
    n = reader.get("n").count()
    unjudged = reader.get(UNJUDGED_COUNT).count() if UNJUDGED_COUNT in values else None
    means = {name: value for name, value in values.items() if name not in COUNTS}
    evidence = {} if figures is None or figures.value is None else {
        name: EvidenceFigure(mean=row.get("mean").optional_number(), judged=row.get("judged").count(),
                             null=row.get("null").count(), total=row.get("sum").number())
        for name, row in figures.items()}
    return ScopeNumbers(n=n, means=means, unjudged=unjudged, evidence=evidence)


def read_aggregates(reader: StrictReader) -> Aggregates:
    """`aggregates` of a report's set or a baseline's entry: overall, category, split, and the evidence block."""
    evidence = reader.get("evidence", required=False) if reader.has("evidence") else None

    def group(name: str) -> dict[str, ScopeNumbers]:
        block = evidence.get(name, required=False) if evidence is not None else None
        return {key: read_scope(row, block.get(key, required=False) if block is not None and block.has(key) else None)
                for key, row in reader.get(name).items()}
    overall = read_scope(reader.get("overall"),
                         evidence.get("overall", required=False) if evidence is not None else None)
    return Aggregates(overall=overall, category=group("category"), split=group("split"))


def read_latency(reader: StrictReader) -> Latency:
    """A latency summary: `{"n": 0}` or n, p50, p95 and max in milliseconds."""
    values = reader.numbers()
    n = reader.get("n").count() if "n" in values else 0
    for key in ("p50", "p95", "max"):
        value = values.get(key)
        if value is not None and value < 0:
            raise reader.get(key).fail(f"must be >= 0 milliseconds, got {_plain(value)}")
    return Latency(n=n, p50=values.get("p50"), p95=values.get("p95"), max=values.get("max"))


def read_resources(reader: StrictReader) -> Resources:
    """A resources record (absent or null: nothing measured): start-up seconds, peak RSS MiB, index bytes,
    each a number >= 0 when present; unknown keys are refused."""
    if reader.value is None:
        return Resources()
    reader.only({name for name, _, _ in RESOURCE_FIGURES})
    figures = {name: reader.get(name, required=False) for name, _, _ in RESOURCE_FIGURES}

    def seconds_or_mib(figure: StrictReader) -> float | None:
        value = figure.optional_number()
        if value is not None and value < 0:
            raise figure.fail(f"must be >= 0, got {kind_of(value)}")
        return value
    index = figures["index_bytes"]
    return Resources(startup_seconds=seconds_or_mib(figures["startup_seconds"]),
                     peak_rss_mib=seconds_or_mib(figures["peak_rss_mib"]),
                     index_bytes=None if index.value is None else index.count())
