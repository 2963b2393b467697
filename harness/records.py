"""Frozen records shared across modules: documents, queries and what a run produces."""

from __future__ import annotations

from dataclasses import dataclass, field


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

    @property
    def scored(self) -> bool:
        """Whether the query counts in aggregates and baselines."""
        return not (self.xfail or self.measure_only or self.no_relevant)

    @property
    def intent(self) -> str:
        """The resampling unit for paired statistics: the group if any, else the query itself."""
        return self.group or self.qid


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
