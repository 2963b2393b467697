"""Committed baselines as text: side by side (`python -m harness baselines`), and what moved between two (`baselines diff`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.quoting import preview
from harness.report.escape import markdown_text
from harness.scoring.evaluate import TABLE_METRICS
from harness.scoring.flips import find_flips


def render_table(baselines: list[tuple[Path, dict]]) -> str:
    lines = ["| set | backend | n | recall@5 | recall@10 | MRR | nDCG@10 | p95 ms |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    names = sorted({name for _, document in baselines for name in document["sets"]})
    for name in names:
        for path, document in baselines:
            entry = document["sets"].get(name)
            if entry is None:
                continue
            overall = entry["aggregates"]["overall"]
            backend = (document.get("backend") or {}).get("label") or path.stem
            cells = " | ".join(f"{overall[m]:.3f}" if m in overall else "-" for m in TABLE_METRICS)
            latency = _number(entry["latency_ms"].get("p95"), 1)
            lines.append(f"| {markdown_text(name)} | {markdown_text(f'{backend} ({_label(path)})')} | {overall['n']} | {cells} | {latency} |")
    return "\n".join(lines) + "\n"


# -- baselines diff OLD NEW: what a re-baseline moved ---------------------------------------------

MOVED = 1e-9       # a value that changed by less is unchanged (a float written back)
FLIPS_SHOWN = 20   # flipped queries listed per set; the rest are counted
def _label(path: Path) -> str:
    """The file's name, or its path below a `baselines` folder (`companions/current.json`)."""
    parts = path.parts[:-1]
    if "baselines" not in parts:
        return path.name
    return "/".join(path.parts[len(parts) - parts[::-1].index("baselines"):])


IDENTITY_FIELDS = ("label", "name", "version", "model_digest", "command")


def render_diff(old: tuple[Path, Mapping], new: tuple[Path, Mapping], metrics: Sequence[str]) -> str:
    """What moved from the baseline `old` to `new`, as plain text for a review.

    The backend's identity (name, version, model digest, each setting, command), then per set:
    added or removed; revision, corpus or judgments changed; query count; p95; each scope
    (overall, category:NAME, split:NAME) whose `metrics` or query count moved (unchanged scopes
    are counted, not listed); the flips, queries whose found relevant documents changed
    (`scoring.flips.find_flips`). Both documents are checked ones (`read_baseline`).
    """
    (old_path, old_doc), (new_path, new_doc) = old, new
    lines = [f"baselines diff: {old_path} -> {new_path}"]
    identity = _identity_changes(old_doc.get("backend") or {}, new_doc.get("backend") or {})
    if identity:
        lines += [f"identity: {len(identity)} field{'s' if len(identity) != 1 else ''} changed"]
        lines += [f"  {change}" for change in identity]
    else:
        lines.append(f"identity: unchanged ({_describe(new_doc.get('backend') or {})})")
    old_sets, new_sets = old_doc["sets"], new_doc["sets"]
    moved = 0
    for name in sorted(set(old_sets) | set(new_sets)):
        if name not in new_sets:
            lines.append(f"set {name}: removed (had {old_sets[name]['query_count']} queries)")
            moved += 1
        elif name not in old_sets:
            lines.append(f"set {name}: added ({new_sets[name]['query_count']} queries)")
            moved += 1
        else:
            set_lines = _set_diff(name, old_sets[name], new_sets[name], metrics)
            moved += bool(set_lines)
            lines += set_lines or [f"set {name}: unchanged"]
    lines.append(f"{moved} of {len(set(old_sets) | set(new_sets))} sets moved; gated metrics: {', '.join(metrics)}")
    return "\n".join(lines) + "\n"


def _describe(backend: Mapping) -> str:
    return " ".join(str(backend[key]) for key in ("name", "version") if backend.get(key)) or "no banner identity"


def _identity_changes(old: Mapping, new: Mapping) -> list[str]:
    """`field old -> new` for each identity field and each setting that differs."""
    changes = [f"{key} {old.get(key)!r} -> {new.get(key)!r}" for key in IDENTITY_FIELDS if old.get(key) != new.get(key)]
    old_settings, new_settings = old.get("settings") or {}, new.get("settings") or {}
    changes += [f"settings.{key} {old_settings.get(key, '(none)')!r} -> {new_settings.get(key, '(none)')!r}"
                for key in sorted(set(old_settings) | set(new_settings)) if old_settings.get(key) != new_settings.get(key)]
    return changes


def _set_diff(name: str, old: Mapping, new: Mapping, metrics: Sequence[str]) -> list[str]:
    """The lines of one set present in both; empty when nothing moved."""
    head = []
    for field in ("revision", "corpus_hash", "judgments_hash", "k", "query_count"):
        if old.get(field) != new.get(field):
            before, after = old.get(field), new.get(field)
            if field.endswith("_hash"):
                before, after = str(before)[:12], str(after)[:12]
            head.append(f"{field} {before} -> {after}")
    old_p95, new_p95 = old["latency_ms"].get("p95"), new["latency_ms"].get("p95")
    if _moved(old_p95, new_p95):
        head.append(f"p95 {_number(old_p95, 1)} -> {_number(new_p95, 1)} ms")
    scope_lines, unchanged = [], 0
    old_scopes, new_scopes = _scopes(old["aggregates"]), _scopes(new["aggregates"])
    for scope in [*old_scopes, *(s for s in new_scopes if s not in old_scopes)]:
        before, after = old_scopes.get(scope, {}), new_scopes.get(scope, {})
        cells = [f"n {before.get('n', '-')} -> {after.get('n', '-')}"] if before.get("n") != after.get("n") else []
        cells += [f"{metric} {_number(before.get(metric), 3)} -> {_number(after.get(metric), 3)}{_points(before.get(metric), after.get(metric))}"
                  for metric in metrics if _moved(before.get(metric), after.get(metric))]
        if cells:
            scope_lines.append(f"  {scope}: " + "; ".join(cells))
        else:
            unchanged += 1
    flips = find_flips(name, {qid: row["found"] for qid, row in old["queries"].items()},
                       {qid: row["found"] for qid, row in new["queries"].items()},
                       {qid: str(row.get("query", "")) for qid, row in new["queries"].items()})
    if not (head or scope_lines or flips):
        return []
    lines = [f"set {name}: " + ("; ".join(head) if head else "identity and query count unchanged")]
    lines += scope_lines
    if unchanged:
        lines.append(f"  ({unchanged} scope{'s' if unchanged != 1 else ''} unchanged)")
    if flips:
        lines.append(f"  flips: {len(flips)} quer{'ies' if len(flips) != 1 else 'y'} found other relevant documents")
        lines += [f"    {flip.qid}: {flip.change_text()}  {preview(flip.query, 60)}" for flip in flips[:FLIPS_SHOWN]]
        if len(flips) > FLIPS_SHOWN:
            lines.append(f"    ... and {len(flips) - FLIPS_SHOWN} more")
    return lines


def _scopes(aggregates: Mapping) -> dict[str, Mapping]:
    """overall, then category:NAME and split:NAME (and any other grouping) in the document's order."""
    scopes: dict[str, Mapping] = {"overall": aggregates.get("overall", {})}
    for grouping, groups in aggregates.items():
        if grouping != "overall" and isinstance(groups, Mapping):
            scopes.update({f"{grouping}:{group}": values for group, values in groups.items() if isinstance(values, Mapping)})
    return scopes


def _moved(before: object, after: object) -> bool:
    if isinstance(before, (int, float)) and isinstance(after, (int, float)):
        return abs(after - before) > MOVED
    return before != after


def _number(value: object, places: int) -> str:
    return f"{value:.{places}f}" if isinstance(value, (int, float)) else "-"


def _points(before: object, after: object) -> str:
    if isinstance(before, (int, float)) and isinstance(after, (int, float)):
        return f" ({(after - before) * 100:+.1f} points)"
    return ""
