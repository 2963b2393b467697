"""Fusion of ranked lists for the hybrid adapter: weighted RRF, and score fusion after min-max or z-score normalisation.

Each part (BM25, the embedder) gives its top `candidates` as (id, score) pairs, best first.
`weight` is the embedder's share: the fused score is (1 - weight) * lexical + weight *
semantic, where a part's term is

- `rrf`: 1 / (rrf_k + rank), rank from 1 (Cormack, Clarke and Buettcher, SIGIR 2009, with
  weight 0.5 ranking exactly as plain RRF);
- `minmax`: (s - min) / (max - min) over that part's candidates (1 when they all tie);
- `zscore`: (s - mean) / std over that part's candidates (0 when they all tie).

A document missing from a part's candidates gets that part's lowest value (rrf: nothing,
minmax: 0, zscore: the lowest z of the list), so being found by one part only is never
better than being found last by it. Ties: fused score descending, then id ascending.

The tuned table (`TUNED_TABLE`, written by `python -m benchmarks.tune_hybrid --write`) holds the
settings chosen for each corpus on its sets' development split, keyed by the corpus's kind and
the sha256 of its `<kind>.jsonl` as the harness writes it, so a corpus that is not the one tuned
on (another revision, a team's own set of the same kind) never gets them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

METHODS = ("rrf", "minmax", "zscore")
TUNED_TABLE = Path(__file__).resolve().parent / "fusion_tuned.json"
TABLE_FORMAT = 1


DEFAULT_RRF_K = 60.0  # Cormack, Clarke and Buettcher's k


@dataclass(frozen=True, slots=True)
class FusionSettings:
    method: str = "rrf"
    weight: float = 0.5  # the embedder's share, 0..1
    rrf_k: float = DEFAULT_RRF_K
    candidates: int = 100

    def banner(self) -> dict[str, object]:
        out: dict[str, object] = {"method": self.method, "weight": self.weight, "candidates": self.candidates}
        if self.method == "rrf":
            out["rrf_k"] = self.rrf_k
        return out

    def summary(self) -> str:
        extra = f", rrf_k={self.rrf_k:g}" if self.method == "rrf" else ""
        return f"{self.method}(weight={self.weight:g}{extra}, candidates={self.candidates})"


def check(settings: FusionSettings) -> None:
    """Raise ValueError for settings outside their domain (the argument parser checks them first)."""
    if settings.method not in METHODS:
        raise ValueError(f"fusion method {settings.method!r}: expected one of {', '.join(METHODS)}")
    if not 0 <= settings.weight <= 1:
        raise ValueError(f"weight: must be between 0 and 1, got {settings.weight}")
    if not (math.isfinite(settings.rrf_k) and settings.rrf_k >= 0):
        raise ValueError(f"rrf_k: must be a finite number >= 0, got {settings.rrf_k}")
    if settings.candidates < 1:
        raise ValueError(f"candidates: must be at least 1, got {settings.candidates}")


def _unique(ranking: Sequence[tuple[str, float]]) -> None:
    if len({doc_id for doc_id, _ in ranking}) != len(ranking):
        raise ValueError("fusion: a ranking repeats an id")


def normalised(ranking: Sequence[tuple[str, float]], method: str, rrf_k: float) -> tuple[dict[str, float], float]:
    """One part's term per document, and the value a document missing from it gets."""
    _unique(ranking)
    if method == "rrf":
        return {doc_id: 1.0 / (rrf_k + rank) for rank, (doc_id, _) in enumerate(ranking, start=1)}, 0.0
    scores = [float(score) for _, score in ranking]
    if not scores:
        return {}, 0.0
    if method == "minmax":
        low, high = min(scores), max(scores)
        span = high - low
        values = [(score - low) / span if span > 0 else 1.0 for score in scores]
        return dict(zip((doc_id for doc_id, _ in ranking), values)), 0.0
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((score - mean) ** 2 for score in scores) / len(scores))
    values = [(score - mean) / std if std > 0 else 0.0 for score in scores]
    return dict(zip((doc_id for doc_id, _ in ranking), values)), min(values)


def fuse(lexical: Sequence[tuple[str, float]], semantic: Sequence[tuple[str, float]],
         settings: FusionSettings) -> list[tuple[str, float]]:
    """The fused ranking of both parts' candidates (each cut to `settings.candidates`)."""
    depth = settings.candidates
    return combine(normalised(lexical[:depth], settings.method, settings.rrf_k),
                   normalised(semantic[:depth], settings.method, settings.rrf_k), settings.weight)


def combine(lexical: tuple[dict[str, float], float], semantic: tuple[dict[str, float], float],
            weight: float) -> list[tuple[str, float]]:
    """(1 - weight) x lexical + weight x semantic over both parts' `normalised` terms, best first."""
    (lex, lex_floor), (sem, sem_floor) = lexical, semantic
    fused = {doc_id: (1 - weight) * lex.get(doc_id, lex_floor) + weight * sem.get(doc_id, sem_floor)
             for doc_id in lex.keys() | sem.keys()}
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def settings_from_record(record: object, where: str) -> FusionSettings:
    """FusionSettings from a table's `{"method", "weight", "candidates", "rrf_k"?}`; ValueError naming `where`."""
    if not isinstance(record, Mapping):
        raise ValueError(f"{where}: must be an object")
    unknown = sorted(set(record) - {"method", "weight", "rrf_k", "candidates"})
    missing = sorted({"method", "weight", "candidates"} - set(record))
    if unknown or missing:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}" if unknown else f"{where}: missing {missing[0]!r}")
    for name in ("weight", "rrf_k"):
        if name in record and (isinstance(record[name], bool) or not isinstance(record[name], (int, float))):
            raise ValueError(f"{where}.{name}: must be a number")
    if isinstance(record["candidates"], bool) or not isinstance(record["candidates"], int):
        raise ValueError(f"{where}.candidates: must be an integer")
    settings = FusionSettings(method=record["method"], weight=float(record["weight"]),
                              rrf_k=float(record.get("rrf_k", DEFAULT_RRF_K)), candidates=record["candidates"])
    try:
        check(settings)
    except ValueError as problem:
        raise ValueError(f"{where}: {problem}") from None
    return settings


def read_table(path: Path) -> dict[tuple[str, str], FusionSettings]:
    """The tuned table: (kind, corpus sha256) -> FusionSettings. ValueError naming the file and field."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the fusion table: {exc.strerror or exc}") from None
    except ValueError:
        raise ValueError(f"{path}: not JSON") from None
    if not isinstance(document, dict) or document.get("format") != TABLE_FORMAT:
        raise ValueError(f"{path}: format: expected {TABLE_FORMAT}")
    corpora = document.get("corpora")
    if not isinstance(corpora, list):
        raise ValueError(f"{path}: corpora: must be a list")
    table: dict[tuple[str, str], FusionSettings] = {}
    for number, entry in enumerate(corpora):
        where = f"{path}: corpora[{number}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str) \
                or not isinstance(entry.get("corpus_sha256"), str):
            raise ValueError(f"{where}: needs a kind and a corpus_sha256 (strings)")
        table[entry["kind"], entry["corpus_sha256"]] = settings_from_record(entry.get("fusion"), f"{where}.fusion")
    return table


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], rrf_k: float) -> list[tuple[str, float]]:
    """Plain RRF of any number of id lists: score(d) = sum over lists holding d of 1 / (rrf_k + rank(d)).

    Result: (id, score), score descending, then id ascending. Each list's ids must be unique.
    """
    fused: dict[str, float] = {}
    for ranking in rankings:
        if len(set(ranking)) != len(ranking):
            raise ValueError("reciprocal_rank_fusion: a ranking repeats an id")
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (rrf_k + rank)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))
