"""A gated run and a re-baseline as the history sees them: appended to the store, drift gates added.

`python -m harness ... --history FILE` (or the config's `history`) and `merge --history FILE` go
through `record_run`; `--update-baseline --history FILE` through `record_baseline`. A complete,
unsharded run is appended with the baseline it was gated against (a committed baseline is an
accepted one, whether or not its commit was imported), and gains one drift gate per gated figure
(harness/history/drift.py). Nothing here prints: the caller shows the notes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.gating.policy import FOUNDING_METRIC
from harness.history.drift import Drift, DriftPolicy, drifts, with_drift_gates
from harness.history.entries import entries_from_baseline, entry_from_report, report_problem
from harness.history.store import HistoryStore
from harness.report.document import Report


@dataclass(frozen=True)
class Recorded:
    """What recording did: the report (with its drift gates), the drifts looked at, what to tell the user
    (`notes`), and what to warn of even in a quiet run (`warnings`: a re-baseline that made a drift)."""

    report: Report
    drifts: tuple[Drift, ...]
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()


def record_run(path: Path, report: Report, *, baseline: Path | None) -> Recorded:
    """Append `report` (when it is a whole run) and the baseline file it was gated against to the store
    at `path` (created when missing), then add the drift gates of the report's sets. A run gated
    against no baseline (--no-gate, --update-baseline) is appended and gains no gate."""
    problem = report_problem(report)
    with HistoryStore.for_append(path) as store:
        labels = _append_baseline(store, baseline) if baseline is not None else {}
        if problem is not None:
            return Recorded(report, (), (f"history: {path}: this run is not appended: {problem}",))
        store.append(entry_from_report(report))
        found = _drifts(store, report, labels) if baseline is not None else []
    return Recorded(with_drift_gates(report, found), tuple(found), (f"history: run appended to {path}",))


def record_baseline(path: Path, baseline: Path, set_names: list[str], report: Report) -> Recorded:
    """Append a baseline file just written (accepted now) and say how far its sets drifted with it."""
    with HistoryStore.for_append(path) as store:
        labels = _append_baseline(store, baseline)
        found = [drift for drift in _drifts(store, report, labels) if drift.key.set_name in set_names]
    warnings = tuple(f"drift: {d.message()}" for d in found if d.drifted)
    return Recorded(report, tuple(found), (f"history: baseline {baseline} appended to {path}",), warnings)


def _append_baseline(store: HistoryStore, baseline: Path) -> dict[str, str]:
    """Append the baseline file; set name -> the backend label its entry records (its series' name)."""
    labels = {}
    for entry in entries_from_baseline(baseline.read_bytes(), str(baseline)):
        store.append(entry)
        labels.update({record.name: entry.backend for record in entry.sets})
    return labels


def _drifts(store: HistoryStore, report: Report, labels: Mapping[str, str]) -> list[Drift]:
    """The drifts of the report's sets' gated metrics (the policy it records), over the accepted baselines of
    the backend each set's baseline names (the run's own label for a set no baseline names)."""
    recorded = report.provenance.extra.get("policy")
    recorded = recorded if isinstance(recorded, Mapping) else {}
    metrics = list(recorded.get("metrics") or [FOUNDING_METRIC])
    policy = DriftPolicy.recorded(recorded)
    found = []
    for result in report.sets:
        backend = labels.get(result.name, report.provenance.backend.label)
        found += drifts(store, backend, [result.name], metrics, policy)
    return found
