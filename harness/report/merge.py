"""Merge the N shard reports of one run (`--shard I/N`) into the report the unsharded run writes, and gate it.

The merged report holds every per-query record in set order (restored from the positions each
shard recorded), aggregates recomputed from those records with scoring.evaluate's own functions
(so the same numbers, to the last bit, as one run asking every query), and latency percentiles
computed from all per-query latencies together (a percentile of the union, never an average of
the shards' percentiles). Provenance lists each shard's machine, executor and worker count.

Shards that cannot be one run are refused with one line each (ReportError, exit 2): a missing or
repeated shard, shards of different splits, sets, set revisions, corpora, k, backends (label or
ready-banner identity), harness versions, metric definitions, repeats or conditions, an
incomplete shard, or a shard whose queries do not match its positions (an edited report).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.gating.baseline import read_baseline, set_entry_for
from harness.gating.budgets import load_budgets
from harness.gating.gates import check
from harness.records import QueryResult, SetResult
from harness.report.document import Provenance, Report, ReportError, verdict
from harness.scoring.evaluate import aggregate, latency_summary
from harness.sets.shards import shard_of

# The banner fields that say which backend answered; the rest (cache hit, load seconds) varies by machine.
BANNER_IDENTITY = ("name", "version", "protocol", "model", "settings")


@dataclass(frozen=True, slots=True)
class _Part:
    """One shard report, checked: its label (file), shard number and the report."""

    label: str
    index: int
    count: int
    report: Report
    sets: Mapping[str, Mapping[str, object]]  # set name -> {"query_count": n, "positions": [...]}


def merge_reports(reports: Sequence[tuple[str, Report]]) -> Report:
    """One ungated report from the N shard reports (label, report) of one run; ReportError if they are not."""
    if not reports:
        raise ReportError("merge: no shard reports given")
    parts = [_part(label, report) for label, report in reports]
    parts = _complete_split(parts)
    first = parts[0]
    for part in parts[1:]:
        _check_same_run(first, part)
    sets = tuple(_merge_set(name, parts) for name in [s.name for s in first.report.sets])
    warnings = tuple(dict.fromkeys(w for part in parts for w in part.report.warnings))
    return Report(provenance=_merge_provenance(parts), sets=sets, gates=(), complete=True, error=None,
                  exit_code=verdict(None, ()), warnings=warnings)


@dataclass(frozen=True, slots=True)
class MergedGate:
    """A merged report gated, with what the HTML renderer needs to show the gates' inputs."""

    report: Report
    baseline_entries: Mapping[str, Mapping] | None
    budgets_ms: Mapping[str, float]
    default_budget_ms: float


def gate_merged(report: Report, *, baseline: Path | None, budgets: Path, budgets_required: bool,
                known_contract_failures: bool = False) -> MergedGate:
    """Gate a merged report exactly as a run is gated (same baseline checks, budgets and gates).

    `baseline` None measures without gating. Raises BaselineError / UsageError as a run does.
    """
    budgets_ms, default_budget_ms = load_budgets(budgets, required=budgets_required)
    if baseline is None:
        return MergedGate(report, None, budgets_ms, default_budget_ms)
    document = read_baseline(baseline)
    entries = {s.name: set_entry_for(document, s, str(baseline), k=s.k) for s in report.sets}
    gates = check(report.sets, entries, budgets_ms, default_budget_ms=default_budget_ms,
                  latency_gate=report.provenance.run_file is None, known_contract_failures=known_contract_failures)
    gated = replace(report, gates=tuple(gates), exit_code=verdict(None, gates))
    return MergedGate(gated, entries, budgets_ms, default_budget_ms)


# -- checks ----------------------------------------------------------------------------------------

def _part(label: str, report: Report) -> _Part:
    shard = report.provenance.extra.get("shard")
    if not isinstance(shard, Mapping) or not isinstance(shard.get("index"), int) \
            or not isinstance(shard.get("count"), int) or not isinstance(shard.get("sets"), Mapping):
        raise ReportError(f"{label}: provenance.shard: not a shard report (write one with --shard I/N)")
    index, count = shard["index"], shard["count"]
    if not 1 <= index <= count:
        raise ReportError(f"{label}: provenance.shard: shard {index}/{count} is not a shard of {count}")
    if not report.complete:
        why = (report.error or "sets not complete").split("\n", 1)[0]  # an adapter error's stderr tail is in the report
        raise ReportError(f"{label}: shard {index}/{count} is incomplete ({why}); re-run that shard")
    return _Part(label, index, count, report, shard["sets"])


def _complete_split(parts: list[_Part]) -> list[_Part]:
    """The parts in shard order, once they are exactly shards 1..N of one N."""
    first = parts[0]
    by_index: dict[int, _Part] = {}
    for part in parts:
        if part.count != first.count:
            raise ReportError(f"{part.label}: shard {part.index}/{part.count}, but {first.label} is shard "
                              f"{first.index}/{first.count}: shards of different splits")
        if part.index in by_index:
            raise ReportError(f"{part.label}: shard {part.index}/{part.count} repeated "
                              f"(also {by_index[part.index].label})")
        by_index[part.index] = part
    missing = [str(i) for i in range(1, first.count + 1) if i not in by_index]
    if missing:
        raise ReportError(f"merge: shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of {first.count} "
                          f"missing (given: {', '.join(str(i) for i in sorted(by_index))})")
    return [by_index[i] for i in sorted(by_index)]


def _banner_identity(provenance: Provenance) -> dict[str, object]:
    banner = provenance.adapter.banner or {}
    return {key: banner[key] for key in BANNER_IDENTITY if key in banner}


def _check_same_run(first: _Part, part: _Part) -> None:
    """One line naming the first field in which `part` is not the same run as `first`."""
    a, b = first.report.provenance, part.report.provenance

    def differ(what: str, mine: object, theirs: object) -> None:
        if mine != theirs:
            raise ReportError(f"{part.label}: {what}: {theirs!r}, but {first.label} has {mine!r}: "
                              f"not shards of one run")

    differ("harness version", a.harness_version, b.harness_version)
    differ("sets", [s.name for s in first.report.sets], [s.name for s in part.report.sets])
    for mine, theirs in zip(first.report.sets, part.report.sets):
        for field in ("kind", "revision", "corpus_hash", "k"):
            differ(f"set {mine.name}: {field}", getattr(mine, field), getattr(theirs, field))
    differ("backend", a.backend.label, b.backend.label)
    differ("backend identity (ready banner)", _banner_identity(a), _banner_identity(b))
    differ("metric definitions", a.metric_definitions, b.metric_definitions)
    differ("repeats", a.settings.get("repeats"), b.settings.get("repeats"))
    differ("condition", a.condition, b.condition)
    differ("run file", a.run_file is None, b.run_file is None)


def _merge_set(name: str, parts: Sequence[_Part]) -> SetResult:
    """The set's per-query records back in set order; aggregates and latency recomputed from them."""
    total = None
    placed: list[QueryResult | None] = []
    results = []
    for part in parts:
        result = part.report.set_named(name)
        results.append(result)
        record = part.sets.get(name)
        positions = record.get("positions") if isinstance(record, Mapping) else None
        count = record.get("query_count") if isinstance(record, Mapping) else None
        if not isinstance(positions, list) or not isinstance(count, int):
            raise ReportError(f"{part.label}: provenance.shard.sets.{name}: needs query_count and positions")
        if total is None:
            total = count
            placed = [None] * total
        elif count != total:
            raise ReportError(f"{part.label}: set {name}: {count} queries in the set, but {parts[0].label} "
                              f"has {total}: not shards of one run")
        if len(positions) != len(result.queries) or result.query_count != len(result.queries):
            raise ReportError(f"{part.label}: set {name}: {len(result.queries)} query records for "
                              f"{len(positions)} positions (edited report?)")
        for position, query in zip(positions, result.queries):
            if not isinstance(position, int) or not 0 <= position < total or placed[position] is not None:
                raise ReportError(f"{part.label}: set {name}: query {query.qid}: position {position!r} out of "
                                  f"range or taken by another shard (edited report?)")
            if shard_of(query.resampling_unit, part.count) != part.index:
                raise ReportError(f"{part.label}: set {name}: query {query.qid} belongs to shard "
                                  f"{shard_of(query.resampling_unit, part.count)}/{part.count}, not "
                                  f"{part.index}/{part.count} (edited report?)")
            placed[position] = query
    unplaced = [str(p) for p, q in enumerate(placed) if q is None]
    if unplaced:
        raise ReportError(f"merge: set {name}: {len(unplaced)} of {total} queries in no shard "
                          f"(positions {', '.join(unplaced[:5])}{' ...' if len(unplaced) > 5 else ''})")
    queries = tuple(placed)  # type: ignore[arg-type]
    first = results[0]
    return SetResult(name=name, kind=first.kind, revision=first.revision, corpus_hash=first.corpus_hash,
                     k=first.k, query_count=len(queries), complete=True, aggregates=aggregate(queries),
                     latency_ms=latency_summary([q.latency_seconds for q in queries]), queries=queries)


def _merge_provenance(parts: Sequence[_Part]) -> Provenance:
    """The first shard's provenance with the run-wide fields combined and every shard listed."""
    provenances = [part.report.provenance for part in parts]
    base = provenances[0]
    shards = []
    for part, provenance in zip(parts, provenances):
        executor = provenance.extra.get("executor")
        shards.append({"index": part.index, "count": part.count, "report": part.label,
                       "machine": dict(provenance.machine), "workers": provenance.settings.get("workers"),
                       "executor": executor.get("name") if isinstance(executor, Mapping) else "local",
                       "started": provenance.started, "git_commit": provenance.git_commit,
                       "duration_seconds": provenance.duration_seconds,
                       "asking_seconds": provenance.asking_seconds})
    settings = dict(base.settings)
    workers = [p.settings.get("workers") for p in provenances]
    if all(isinstance(w, int) for w in workers):
        settings["workers"] = sum(workers)  # type: ignore[arg-type]
    settings["latency_under_concurrency"] = any(p.settings.get("latency_under_concurrency") for p in provenances)
    settings["shards"] = len(parts)
    startups = [p.adapter.startup_seconds for p in provenances if p.adapter.startup_seconds is not None]
    commits = {p.git_commit for p in provenances}
    nondeterministic = tuple(dict.fromkeys(q for p in provenances for q in p.nondeterministic_queries))
    extra = {key: value for key, value in base.extra.items() if key not in ("shard", "executor")}
    extra["shards"] = shards
    return replace(
        base, started=min((p.started for p in provenances if p.started), default=None),
        git_commit=base.git_commit if len(commits) == 1 else None,
        adapter=replace(base.adapter, startup_seconds=max(startups) if startups else None),
        settings=settings, machine=_common(p.machine for p in provenances),
        # Shards run side by side: the run took as long as its slowest shard.
        duration_seconds=_max(p.duration_seconds for p in provenances),
        asking_seconds=_max(p.asking_seconds for p in provenances),
        nondeterministic_queries=nondeterministic, extra=extra)


def _common(machines) -> dict[str, object]:
    """Each machine field as the shards share it, or "varies (see shards)"."""
    machines = [dict(m) for m in machines]
    keys = dict.fromkeys(key for m in machines for key in m)
    return {key: machines[0].get(key) if all(m.get(key) == machines[0].get(key) for m in machines)
            else "varies (see shards)" for key in keys}


def _max(values) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None
