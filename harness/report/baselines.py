"""Committed baselines as text: side by side (`python -m harness baselines`), and what moved between two (`baselines diff`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.gating.baseline import BackendRecord, Baseline
from harness.measured import SetNumbers
from harness.quoting import preview
from harness.report.escape import markdown_text, terminal_line
from harness.scoring.evaluate import TABLE_METRICS
from harness.scoring.flips import find_flips
from harness.scoring.metrics import parse_metric
from harness.text import plural


def render_table(baselines: Sequence[Baseline]) -> str:
    lines = ["| set | backend | n | recall@5 | recall@10 | MRR | nDCG@10 | p95 ms |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    names = sorted({name for baseline in baselines for name in baseline.sets})
    for name in names:
        for baseline in baselines:
            numbers = baseline.sets.get(name)
            if numbers is None:
                continue
            overall = numbers.aggregates.overall
            backend = baseline.backend.label or baseline.path.stem
            cells = " | ".join(f"{overall.means[m]:.3f}" if m in overall.means else "-" for m in TABLE_METRICS)
            latency = _number(numbers.latency.p95, 1)
            lines.append(f"| {markdown_text(name)} | {markdown_text(f'{backend} ({_label(baseline.path)})')} | "
                         f"{overall.n} | {cells} | {latency} |")
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


def render_diff(old: Baseline, new: Baseline, metrics: Sequence[str]) -> str:
    """What moved from the baseline `old` to `new`, as plain text for a review.

    The backend's identity (name, version, model digest, each setting, command), then per set:
    added or removed; revision, corpus or judgments changed; query count; p95; each scope
    (overall, category:NAME, split:NAME) whose `metrics` or query count moved (unchanged scopes
    are counted, not listed); the flips, queries whose found relevant documents changed
    (`scoring.flips.find_flips`). A set whose own backend record moved otherwise than the file's (another
    backend re-baselined that set) says how, and so does a set whose calibration (`calibrate`) changed. Every line is shown inert on a terminal (`terminal_line`).
    """
    lines = [f"baselines diff: {old.path} -> {new.path}"]
    identity = _identity_changes(old.backend, new.backend)
    if identity:
        lines += [f"identity: {plural(len(identity), 'field')} changed"]
        lines += [f"  {change}" for change in identity]
    else:
        said = " ".join(text for text in (new.backend.identity.name, new.backend.identity.version) if text)
        lines.append(f"identity: unchanged ({said or 'no banner identity'})")
    old_sets, new_sets = old.sets, new.sets
    moved = 0
    for name in sorted(set(old_sets) | set(new_sets)):
        if name not in new_sets:
            lines.append(f"set {name}: removed (had {plural(old_sets[name].query_count, 'query', 'queries')})")
            moved += 1
        elif name not in old_sets:
            lines.append(f"set {name}: added ({plural(new_sets[name].query_count, 'query', 'queries')})")
            moved += 1
        else:
            own = _identity_changes(old.backends[name], new.backends[name])
            set_lines = _set_diff(name, old_sets[name], new_sets[name], metrics)
            if own != identity:
                set_lines = (set_lines or [f"set {name}: identity and query count unchanged"]) + [
                    f"  backend of this set: {change}" for change in own or ["unchanged"]]
            was, now = old.calibration.get(name), new.calibration.get(name)
            if was != now:  # calibrate's record: what the gates allow for
                said = ("removed" if now is None else f"added: {now.summary()}" if was is None
                        else f"{was.summary()} -> {now.summary()}")
                set_lines = (set_lines or [f"set {name}: numbers unchanged"]) + [f"  calibration {said}"]
            moved += bool(set_lines)
            lines += set_lines or [f"set {name}: unchanged"]
    lines.append(f"{moved} of {len(set(old_sets) | set(new_sets))} sets moved; gated metrics: {', '.join(metrics)}")
    return "\n".join(map(terminal_line, lines)) + "\n"


def _identity_changes(old: BackendRecord, new: BackendRecord) -> list[str]:
    """`field old -> new` for each identity field (as the identity check reads it) and each setting that differs."""
    was, now = ({"label": record.label, **record.identity.to_dict()} for record in (old, new))
    changes = [f"{key} {was[key]!r} -> {now[key]!r}" for key in IDENTITY_FIELDS if was[key] != now[key]]
    old_settings, new_settings = old.identity.settings or {}, new.identity.settings or {}
    changes += [f"settings.{key} {old_settings.get(key, '(none)')!r} -> {new_settings.get(key, '(none)')!r}"
                for key in sorted(set(old_settings) | set(new_settings)) if old_settings.get(key) != new_settings.get(key)]
    return changes


def _set_diff(name: str, old: SetNumbers, new: SetNumbers, metrics: Sequence[str]) -> list[str]:
    """The lines of one set present in both; empty when nothing moved."""
    head = []
    for field in ("revision", "corpus_hash", "judgments_hash", "k", "query_count"):
        before, after = getattr(old, field), getattr(new, field)
        if before != after:
            if field.endswith("_hash"):
                before, after = str(before)[:12], str(after)[:12]
            head.append(f"{field} {before} -> {after}")
    old_p95, new_p95 = old.latency.p95, new.latency.p95
    if _moved(old_p95, new_p95):
        head.append(f"p95 {_number(old_p95, 1)} -> {_number(new_p95, 1)} ms")
    scope_lines, unchanged = [], 0
    old_scopes, new_scopes = dict(old.aggregates.scopes()), dict(new.aggregates.scopes())
    for scope in [*old_scopes, *(s for s in new_scopes if s not in old_scopes)]:
        was, now = old_scopes.get(scope), new_scopes.get(scope)
        before_n, after_n = (was.n if was else "-"), (now.n if now else "-")
        cells = [f"n {before_n} -> {after_n}"] if before_n != after_n else []
        for metric in metrics:
            nullable = parse_metric(metric).nullable
            before = was.mean(metric, nullable=nullable)[0] if was else None
            after = now.mean(metric, nullable=nullable)[0] if now else None
            if _moved(before, after):
                cells.append(f"{metric} {_number(before, 3)} -> {_number(after, 3)}{_points(before, after)}")
        if cells:
            scope_lines.append(f"  {scope}: " + "; ".join(cells))
        else:
            unchanged += 1
    flips = find_flips(name, {qid: row.found for qid, row in old.queries.items()},
                       {qid: row.found for qid, row in new.queries.items()},
                       {qid: row.query for qid, row in new.queries.items()})
    if not (head or scope_lines or flips):
        return []
    lines = [f"set {name}: " + ("; ".join(head) if head else "identity and query count unchanged")]
    lines += scope_lines
    if unchanged:
        lines.append(f"  ({plural(unchanged, 'scope')} unchanged)")
    if flips:
        lines.append(f"  flips: {plural(len(flips), 'query', 'queries')} found other relevant documents")
        lines += [f"    {flip.qid}: {flip.change_text()}  {preview(flip.query, 60)}" for flip in flips[:FLIPS_SHOWN]]
        if len(flips) > FLIPS_SHOWN:
            lines.append(f"    ... and {len(flips) - FLIPS_SHOWN} more")
    return lines


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
