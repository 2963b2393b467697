"""Baseline files: build one from a run, read it back strictly, write it atomically."""

from __future__ import annotations

import json
import math
from pathlib import Path

from harness.errors import BaselineError
from harness.fsutil import atomic_write_text, read_json_file
from harness.gating.identity import BackendIdentity
from harness.records import QuerySet, SetResult

BASELINE_FORMAT = "retrieval-gate-baseline"
BASELINE_VERSION = 1


def build_baseline(set_results: list[SetResult], provenance: dict[str, object]) -> dict[str, object]:
    """The baseline document for a complete run: identity, per-set aggregates and per-query values."""
    incomplete = [r.name for r in set_results if not r.complete]
    if incomplete:
        raise BaselineError(f"refusing to write a baseline from an incomplete run (sets: {', '.join(incomplete)})")
    return {
        "format": BASELINE_FORMAT,
        "version": BASELINE_VERSION,
        "created": provenance.get("started"),
        "harness_version": provenance.get("harness_version"),
        "git_commit": provenance.get("git_commit"),
        "backend": backend_record(provenance),
        "condition": provenance.get("condition"),
        "metric_definitions": provenance.get("metric_definitions"),
        "sets": {r.name: _set_entry(r) for r in set_results},
    }


def backend_record(provenance: dict[str, object]) -> dict[str, object]:
    """Who the baseline is for: the label, the portable command and the banner's identity fields."""
    backend = provenance.get("backend") or {}
    banner = (provenance.get("adapter") or {}).get("banner")  # type: ignore[union-attr]
    identity = BackendIdentity.of(banner, [str(a) for a in backend.get("argv") or []])  # type: ignore[union-attr]
    return {"label": backend.get("label"), **identity.to_dict()}  # type: ignore[union-attr]


def _set_entry(result: SetResult) -> dict[str, object]:
    return {
        "revision": result.revision, "corpus_hash": result.corpus_hash, "k": result.k,
        "query_count": result.query_count, "aggregates": result.aggregates,
        "latency_ms": result.latency_ms,
        "queries": {q.qid: {"query": q.query, "category": q.category, "split": q.split, "group": q.group,
                            "scored": q.scored,
                            "outcome": q.outcome, "metrics": q.metrics, "found": list(q.found),
                            "broken": [c.key for c in q.contracts if not c.passed]}
                    for q in result.queries},
    }


def write_baseline(path: Path, baseline: dict[str, object], *, merge: bool = True) -> None:
    """Write atomically. With `merge`, sets not in this run keep their previous entries."""
    document = dict(baseline)
    if merge and path.exists():
        previous = read_baseline(path)
        sets = dict(previous["sets"])
        sets.update(baseline["sets"])  # type: ignore[arg-type]
        document["sets"] = dict(sorted(sets.items()))
    atomic_write_text(path, json.dumps(document, indent=1, sort_keys=False, ensure_ascii=False) + "\n")


def read_baseline(path: Path) -> dict[str, object]:
    """Read and validate a baseline; any defect is a BaselineError naming file and field."""
    label = str(path)
    if not path.exists():
        raise BaselineError(f"{label}: no baseline file; record one with --update-baseline (or run with --no-gate)")
    document = read_json_file(path, BaselineError, label, what="corrupt baseline")
    if not isinstance(document, dict) or document.get("format") != BASELINE_FORMAT:
        raise BaselineError(f"{label}: format: not a retrieval-gate baseline")
    if document.get("version") != BASELINE_VERSION:
        raise BaselineError(f"{label}: version: expected {BASELINE_VERSION}, got {document.get('version')!r}")
    sets = document.get("sets")
    if not isinstance(sets, dict):
        raise BaselineError(f"{label}: sets: missing or not an object")
    for name, entry in sets.items():
        _check_entry(entry, f"{label}: sets.{_key(name)}")
    return document


def _check_entry(entry: object, where: str) -> None:
    if not isinstance(entry, dict):
        raise BaselineError(f"{where}: must be an object")
    for field, kind in (("revision", int), ("corpus_hash", str), ("k", int), ("query_count", int),
                        ("aggregates", dict), ("queries", dict), ("latency_ms", dict)):
        if not isinstance(entry.get(field), kind):
            raise BaselineError(f"{where}.{field}: missing or not a {kind.__name__}")
    overall = entry["aggregates"].get("overall")
    categories = entry["aggregates"].get("category")
    if not isinstance(overall, dict) or not isinstance(categories, dict):
        raise BaselineError(f"{where}.aggregates: needs 'overall' and 'category'")
    _check_numbers(overall, f"{where}.aggregates.overall")
    for category, values in categories.items():
        if not isinstance(values, dict):
            raise BaselineError(f"{where}.aggregates.category.{_key(category)}: must be an object")
        _check_numbers(values, f"{where}.aggregates.category.{_key(category)}")
    for qid, row in entry["queries"].items():
        if not isinstance(row, dict) or not isinstance(row.get("found"), list) or not isinstance(row.get("metrics"), dict):
            raise BaselineError(f"{where}.queries.{_key(qid)}: needs 'found' and 'metrics'")
        if not all(isinstance(doc_id, str) for doc_id in row["found"]):
            raise BaselineError(f"{where}.queries.{_key(qid)}.found: must be a list of document ids")
        _check_numbers(row["metrics"], f"{where}.queries.{_key(qid)}.metrics")


def _key(name: str) -> str:
    """A key as it appears in an error line: as is when printable, else quoted, so the message stays one line."""
    return name if name.isprintable() and name.strip() == name and name else repr(name)


def _check_numbers(values: dict, where: str) -> None:
    """Metric values the gates compute with must be finite numbers (a hand-edited string must not crash them)."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise BaselineError(f"{where}.{_key(name)}: must be a finite number, got {value!r}")


def set_entry_for(baseline: dict[str, object], result: SetResult | QuerySet, label: str, *,
                  k: int | None = None) -> dict[str, object]:
    """The baseline entry comparable with a set or its result, or a BaselineError saying why not.

    Called with the loaded set before the run (k as asked), so a mismatch stops it before the adapter starts.
    """
    name, k = result.name, k if k is not None else result.k  # type: ignore[union-attr]
    entry = baseline["sets"].get(name)  # type: ignore[union-attr]
    if entry is None:
        raise BaselineError(f"{label}: sets: no baseline for set {name!r}; record it with --update-baseline")
    for field, now in (("revision", result.revision), ("corpus_hash", result.corpus_hash), ("k", k)):
        if entry[field] != now:
            raise BaselineError(
                f"{label}: sets.{name}.{field}: baseline has {entry[field]!r}, this run has {now!r}; "
                f"the numbers are not comparable: re-baseline deliberately with --update-baseline")
    return entry
