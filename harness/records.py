"""Frozen records shared across modules: documents, queries and what a run produces."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.measured import Aggregates, Latency, QueryNumbers, Resources, SetNumbers, resampling_unit


@dataclass(frozen=True, slots=True)
class Document:
    """One corpus document. `sha256` is of the UTF-8 bytes of the content (file bytes for code)."""

    id: str
    text: str
    sha256: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class RankBefore:
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class EvidenceSpan:
    """A reviewed span of a document: `text` is `document.text[start:end]` (characters, end exclusive).

    `label` is relative to the time the query asks about (docs/sets.md): current, stale, mixed,
    neither or unjudgeable.
    """

    doc: str
    start: int
    end: int
    text: str
    label: str
    supports_answer: bool


@dataclass(frozen=True, slots=True)
class Query:
    """One judged query of a set (queries.jsonl line), with its optional contracts."""

    qid: str
    query: str
    relevant: dict[str, int]
    category: str
    split: str
    source: str
    group: str | None = None
    forbid: tuple[str, ...] = ()
    rank_before: tuple[RankBefore, ...] = ()
    no_relevant: bool = False
    xfail: bool = False
    measure_only: bool = False
    max_score: float | None = None
    line: int = 0  # line number in queries.jsonl, for error messages
    # Evidence (docs/sets.md, "Evidence"; harness/sets/evidence.py): reviewed spans, intent, canonical pages.
    evidence: tuple[EvidenceSpan, ...] = ()
    intent: str | None = None  # "current" | "historical"
    canonical: tuple[str, ...] = ()
    forbid_stale_before_current: bool = False

    @property
    def scored(self) -> bool:
        """Whether the query counts in aggregates and baselines."""
        return not (self.xfail or self.measure_only or self.no_relevant)

    @property
    def resampling_unit(self) -> str:
        return resampling_unit(self.qid, self.group)


@dataclass(frozen=True, slots=True)
class QuerySet:
    """A loaded, validated set: its metadata, queries and corpus."""

    name: str
    kind: str
    revision: int
    description: str
    k: int
    path: str
    queries: tuple[Query, ...]
    documents: tuple[Document, ...]
    corpus_hash: str
    corpus_source: str
    extra: dict[str, object] = field(default_factory=dict)
    # sha256 over the canonical JSON of every query's judgments (sets/loader.py `judgments_hash`):
    # a gold edit without a revision bump changes it. "" when not computed (sets built by hand in tests).
    judgments_hash: str = ""
    # How its hard contracts gate (set.json `contracts`, CONTRACT_RULES): "strict", every new break fails;
    # "graded", a change fails only when it breaks significantly more contracts than it fixes.
    contracts: str = "strict"


# The rules a set.json `contracts` key may name (docs/sets.md, "set.json"): the first is the default.
CONTRACT_RULES = ("strict", "graded")


@dataclass(frozen=True, slots=True)
class ContractResult:
    """One contract checked on one query (`forbid`, `rank_before`, `no_relevant`, `max_score`)."""

    name: str
    passed: bool
    detail: str = ""
    subject: str = ""  # what the contract is about (a forbidden id, "before>after"); stable across runs

    @property
    def key(self) -> str:
        """Identifies the contract within its query, e.g. `forbid:fact-027` (for known-failure matching)."""
        return f"{self.name}:{self.subject}" if self.subject else self.name

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail, "key": self.key}


@dataclass(frozen=True, slots=True)
class QueryResult:
    """What one query got: ids, latency, metrics, contracts, and its outcome."""

    qid: str
    query: str
    category: str
    split: str
    ids: tuple[str, ...]
    scores: tuple[float, ...] | None
    latency_seconds: float
    metrics: dict[str, float]
    found: tuple[str, ...]  # relevant ids in the top 10, best first: what "flipped" compares
    contracts: tuple[ContractResult, ...]
    outcome: str  # pass | fail | xfail | xpass
    scored: bool
    group: str | None = None
    # Evidence (docs/adapters.md, "Passages"): the window shown per hit ((start, end) or None for the whole
    # document), and the evidence metrics (a value None = unjudgeable, left out of means).
    passages: tuple[tuple[int, int] | None, ...] | None = None
    evidence: dict[str, float | None] | None = None
    # The first hit's window when it did not expose current evidence, for the HTML report:
    # {"doc", "start", "end", "text", "spans": [[start, end, label], ...] relative to the window}.
    window: dict[str, object] | None = None
    # Positions whose score equals the previous position's (docs/adapters.md, "Scores and ties"): the order between those
    # documents is the adapter's choice, not its scores'. 0 without scores; written only when > 0.
    tied: int = 0
    # The baseline's backend's latency on this query, timed beside this one in the same run (`--baseline-adapter`:
    # paired latency, docs/gate.md); None when the latency is compared across runs.
    base_latency_seconds: float | None = None

    @property
    def resampling_unit(self) -> str:
        return resampling_unit(self.qid, self.group)

    @property
    def latency_ms(self) -> float:
        """The latency as reports write it: milliseconds, rounded to 4 decimals (0.1 µs)."""
        return round(self.latency_seconds * 1000, 4)

    def numbers(self) -> QueryNumbers:
        """The row's numbers, as a baseline keeps them (with the latency, which a baseline does not)."""
        return QueryNumbers(qid=self.qid, query=self.query, category=self.category, split=self.split,
                            group=self.group, scored=self.scored, outcome=self.outcome, metrics=self.metrics,
                            evidence=self.evidence, found=self.found,
                            broken=tuple(c.key for c in self.contracts if not c.passed), latency_ms=self.latency_ms)

    def to_dict(self) -> dict[str, object]:
        return {
            "qid": self.qid, "query": self.query, "category": self.category, "split": self.split, "group": self.group,
            "ids": list(self.ids), "scores": list(self.scores) if self.scores is not None else None,
            "latency_ms": self.latency_ms, "metrics": self.metrics,
            "found": list(self.found), "contracts": [c.to_dict() for c in self.contracts],
            "outcome": self.outcome, "scored": self.scored,
            **({"passages": [list(p) if p is not None else None for p in self.passages]}
               if self.passages is not None else {}),
            **({"evidence": dict(self.evidence)} if self.evidence is not None else {}),
            **({"window": dict(self.window)} if self.window is not None else {}),
            **({"tied": self.tied} if self.tied else {}),
            **({"base_latency_ms": round(self.base_latency_seconds * 1000, 4)}  # rounded as `latency_ms`
               if self.base_latency_seconds is not None else {}),
        }


@dataclass(frozen=True, slots=True)
class SetResult:
    """A set's evaluated run: aggregates (overall / category / split), latency, per-query rows, and what the
    run's adapter cost (`resources`, the same for every set of the run; nothing measured for a run file)."""

    name: str
    kind: str
    revision: int
    corpus_hash: str
    k: int
    query_count: int
    complete: bool
    aggregates: Aggregates
    latency: Latency
    queries: tuple[QueryResult, ...]
    resources: Resources = Resources()
    base_latency: Latency | None = None  # the baseline's backend's, timed beside this run's (paired latency)

    @property
    def latency_paired(self) -> bool:
        """Whether the baseline's backend was timed beside this run, query by query (`--baseline-adapter`)."""
        return self.base_latency is not None

    def numbers(self, judgments_hash: str | None = None) -> SetNumbers:
        """The set's numbers as a baseline records them, to compare record with record."""
        return SetNumbers(name=self.name, revision=self.revision, corpus_hash=self.corpus_hash, k=self.k,
                          query_count=self.query_count, aggregates=self.aggregates, latency=self.latency,
                          queries={q.qid: q.numbers() for q in self.queries}, judgments_hash=judgments_hash,
                          resources=self.resources)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name, "kind": self.kind, "revision": self.revision,
            "corpus_hash": self.corpus_hash, "k": self.k, "query_count": self.query_count,
            "complete": self.complete, "aggregates": self.aggregates.to_dict(), "latency_ms": self.latency.to_dict(),
            **({"base_latency_ms": self.base_latency.to_dict()} if self.base_latency is not None else {}),
            "queries": [q.to_dict() for q in self.queries],
            **({"resources": self.resources.to_dict()} if self.resources.measured else {}),
        }


@dataclass(frozen=True, slots=True)
class GateResult:
    """One gate outcome; a failed gate is a result, not an exception.

    Three verdicts: PASS, WARN (`passed` and `warning`: printed after the failures, counted
    in every output, never fails CI) and FAIL (not `passed`). The numbers the gate decided on
    travel with it, so every output reads the report alone: `metric` (what was compared:
    `recall@10`, `p95`, `queries`, `broken contracts`, ...), `baseline` and `current` values,
    the `limit` it was held to and its `unit` ("fraction": a [0, 1] mean whose limit is a
    drop, shown in points; "ms"; "count"), and for a metric drop the paired 95% CI of the change
    (`ci`, in the value's unit) and its p-value when computed; for a metric, what one query is
    worth and the smallest change the scope can detect, and whether it `improved`.
    """

    set_name: str
    gate: str  # recall | latency | query-count | contract | ...
    passed: bool
    message: str
    category: str | None = None
    flipped: tuple[str, ...] = ()
    warning: bool = False
    metric: str | None = None
    baseline: float | None = None
    current: float | None = None
    limit: float | None = None
    unit: str | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    one_query: float | None = None    # what one query is worth in the scope (1/n), in the value's unit
    detectable: float | None = None   # the smallest change the scope can detect (harness/scoring/detectability.py)
    improved: bool = False            # the figure moved the good way

    @property
    def status(self) -> str:
        """"pass", "warn" or "fail"."""
        if not self.passed:
            return "fail"
        return "warn" if self.warning else "pass"

    @property
    def scope(self) -> str:
        """`overall` or the category the gate is about."""
        return self.category or "overall"

    @property
    def change(self) -> float | None:
        """current - baseline, when the gate has both."""
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline

    def to_dict(self) -> dict[str, object]:
        row: dict[str, object] = {"set": self.set_name, "gate": self.gate, "passed": self.passed,
                                  "status": self.status, "category": self.category, "message": self.message,
                                  "flipped": list(self.flipped)}
        for key in ("metric", "baseline", "current", "limit", "unit", "p_value", "one_query", "detectable"):
            value = getattr(self, key)
            if value is not None:
                row[key] = value
        if self.ci is not None:
            row["ci"] = list(self.ci)
        if self.improved:
            row["improved"] = True
        return row

