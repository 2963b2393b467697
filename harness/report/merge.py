"""Merge the N shard reports of one run (`--shard I/N`): check they are one run, then re-score them as one.

`plan_merge` checks the shards and puts every per-query record back in set order (from the
positions each shard recorded); `rescore` evaluates those records' ids, scores and passages
against the loaded sets with scoring.evaluate's own functions, so the merged results equal, to
the last bit, one run asking every query, latency percentiles included (computed over the union
of the per-query latencies, never averaged). A recorded metric that disagrees with the re-scored
one is refused: a shard report is evidence, never trusted. Gating is `harness.api.merge_gate`'s,
through the same `decide` as a run. Paired latency (`--baseline-adapter`) survives the merge when every
shard was paired: each query's pair was timed in its own shard, on one machine, in ABBA order.

Shards that cannot be one run are refused with one line each (ReportError, exit 2): a missing or
repeated shard, shards of different splits, sets, set revisions, corpora or judgments, k,
--max-window, repeats, conditions, gate policies, backends (label or identity, model digest
included), harness versions or metric definitions, an incomplete shard, or a shard whose queries
do not match its positions. Shards of different commits are merged with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.gating.identity import BackendIdentity
from harness.measured import Resources
from harness.records import QueryResult, QuerySet, SetResult
from harness.report.document import Provenance, Report, ReportError
from harness.scoring.evaluate import REPORTED_METRICS, UNJUDGED_COUNT, Answer, evaluate_set, with_base_latency
from harness.sets.shards import shard_of
from harness.text import shortlist

# What a shard records that must be the same in every shard: a difference changes a metric or a verdict.
SAME_SETTINGS = ("k", "max_window", "repeats")


@dataclass(frozen=True, slots=True)
class _Part:
    """One shard report, checked: its label (file), shard number and the report."""

    label: str
    index: int
    count: int
    report: Report
    sets: Mapping[str, Mapping[str, object]]  # set name -> {"query_count": n, "positions": [...]}


@dataclass(frozen=True)
class MergePlan:
    """The shards as one run: each set's query records in set order (with the shard each came from),
    the merged provenance, the identity each shard answered as, and what to warn about."""

    parts: tuple[_Part, ...]
    queries: Mapping[str, tuple[tuple[QueryResult, str], ...]]  # set name -> (record, shard label) in set order
    provenance: Provenance
    identities: tuple[BackendIdentity, ...]
    warnings: tuple[str, ...]

    @property
    def k(self) -> int | None:
        """The run's --k (None: each set's own)."""
        value = self.provenance.settings.get("k")
        return value if isinstance(value, int) else None

    def set_paths(self, sets_dirs: Sequence[Path]) -> list[str]:
        """Where to load each set: its name when one of `sets_dirs` (the team's, the shipped) holds it,
        else its folder as the shards recorded it when that exists here, else its name."""
        paths = []
        for name in self.queries:
            source = self.provenance.sets.get(name)
            recorded = Path(source.path) if source is not None and source.path else None
            paths.append(str(recorded) if recorded is not None and (recorded / "set.json").is_file()
                         and not any((folder / name / "set.json").is_file() for folder in sets_dirs) else name)
        return paths


def plan_merge(reports: Sequence[tuple[str, Report]]) -> MergePlan:
    """The merge plan of the N shard reports (label, report) of one run; ReportError if they are not one."""
    if not reports:
        raise ReportError("merge: no shard reports given")
    parts = _complete_split([_part(label, report) for label, report in reports])
    first = parts[0]
    for part in parts[1:]:
        _check_same_run(first, part)
    queries = {s.name: _placed(s.name, parts) for s in first.report.sets}
    warnings = list(dict.fromkeys(w for part in parts for w in part.report.warnings))
    commits = {p.report.provenance.git_commit for p in parts}
    if len(commits) > 1:
        warnings.append("the shards ran at different commits: " + ", ".join(
            f"{p.label} {(p.report.provenance.git_commit or 'unknown')[:12]}" for p in parts)
                        + "; merged, but the shards may not have measured the same code")
    return MergePlan(tuple(parts), queries, _merge_provenance(parts),
                     tuple(p.report.provenance.identity() for p in parts), tuple(warnings))


def rescore(plan: MergePlan, query_sets: Sequence[QuerySet], metrics: Sequence[str]) -> list[SetResult]:
    """Each set evaluated from the shards' answers as one run evaluates it; ReportError when a shard's
    recorded set or per-query values are not what its ids give."""
    results = []
    for query_set in query_sets:
        records = plan.queries[query_set.name]
        _check_set_source(plan, query_set)
        kept = [name for record, _ in records for name in record.metrics
                if name not in REPORTED_METRICS and name != UNJUDGED_COUNT]
        answers = {record.qid: Answer(record.ids, record.scores, record.latency_seconds, record.passages)
                   for record, _ in records}
        k = plan.k or query_set.k
        result = evaluate_set(query_set, answers, k, tuple(dict.fromkeys([*metrics, *kept])))
        if not result.complete:
            missing = [q.qid for q in query_set.queries if q.qid not in answers]
            raise ReportError(f"merge: set {query_set.name}: the shards answer none of {shortlist(missing)}; were "
                              f"they run on another revision of the set?")
        for (recorded, label), now in zip(records, result.queries):
            _check_recorded(label, query_set.name, recorded, now)
        paired = {record.qid: record.base_latency_seconds for record, _ in records
                  if record.base_latency_seconds is not None}
        if len(paired) == len(records):  # every shard timed the baseline's backend beside its own: pairs merge
            result = with_base_latency(result, paired)
        shards = [s.resources for part in plan.parts for s in part.report.sets if s.name == query_set.name]
        results.append(replace(result, resources=Resources.largest(shards)))
    return results


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


def _policy(provenance: Provenance) -> object:
    """The gate policy a shard recorded, without the file it was read from (paths differ between machines)."""
    policy = provenance.extra.get("policy")
    return {key: value for key, value in policy.items() if key != "source"} if isinstance(policy, Mapping) else None


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
        differ(f"set {mine.name}: judgments_hash", getattr(a.sets.get(mine.name), "judgments_hash", None),
               getattr(b.sets.get(mine.name), "judgments_hash", None))
    differ("backend", a.backend.label, b.backend.label)
    differ("backend identity", a.identity().to_dict(), b.identity().to_dict())
    differ("metric definitions", a.metric_definitions, b.metric_definitions)
    for setting in SAME_SETTINGS:
        differ(setting, a.settings.get(setting), b.settings.get(setting))
    differ("condition", a.condition, b.condition)
    differ("gate policy", _policy(a), _policy(b))
    differ("run file", a.run_file is None, b.run_file is None)


def _placed(name: str, parts: Sequence[_Part]) -> tuple[tuple[QueryResult, str], ...]:
    """The set's per-query records back in set order, each with the shard it came from."""
    total = None
    placed: list[tuple[QueryResult, str] | None] = []
    for part in parts:
        result = next(s for s in part.report.sets if s.name == name)  # every shard has the set (_check_same_run)
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
            placed[position] = (query, part.label)
    unplaced = [str(p) for p, q in enumerate(placed) if q is None]
    if unplaced:
        raise ReportError(f"merge: set {name}: {len(unplaced)} of {total} queries in no shard "
                          f"(positions {shortlist(unplaced)})")
    return tuple(place for place in placed if place is not None)  # every position is placed, as checked above


def _check_set_source(plan: MergePlan, query_set: QuerySet) -> None:
    """The set loaded here is the one the shards measured: same revision, corpus and judgments."""
    label = plan.parts[0].label
    source = plan.provenance.sets.get(query_set.name)
    for field, here in (("revision", query_set.revision), ("corpus_hash", query_set.corpus_hash),
                        ("judgments_hash", query_set.judgments_hash or None)):
        recorded = getattr(source, field, None)  # None: the shards did not record the set
        if recorded is not None and here is not None and recorded != here:
            raise ReportError(f"{label}: provenance.sets.{query_set.name}.{field}: the shards measured "
                              f"{str(recorded)[:16]}, the set here ({query_set.path}) has {str(here)[:16]}; "
                              f"merge with the set the shards ran (--sets-dir)")


def _check_recorded(label: str, set_name: str, recorded: QueryResult, now: QueryResult) -> None:
    """A shard's per-query values must be what its ids give: metrics, found, outcome, contracts, evidence."""
    where = f"{label}: set {set_name}: query {recorded.qid}"
    for name, value in recorded.metrics.items():
        if name in now.metrics and now.metrics[name] != value:
            raise ReportError(f"{where}: metrics.{name}: recorded {value!r}, but its ids score {now.metrics[name]!r} "
                              f"(edited report?)")
    for field in ("found", "outcome", "evidence"):
        if getattr(recorded, field) != getattr(now, field):
            raise ReportError(f"{where}: {field}: recorded {getattr(recorded, field)!r}, but its ids give "
                              f"{getattr(now, field)!r} (edited report?)")
    if [c.passed for c in recorded.contracts] != [c.passed for c in now.contracts]:
        raise ReportError(f"{where}: contracts: recorded outcomes differ from what its ids give (edited report?)")


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
    workers = [count for p in provenances if isinstance(count := p.settings.get("workers"), int)]
    if len(workers) == len(provenances):
        settings["workers"] = sum(workers)
    settings["latency_under_concurrency"] = any(p.settings.get("latency_under_concurrency") for p in provenances)
    settings["shards"] = len(parts)
    commits = {p.git_commit for p in provenances}
    nondeterministic = tuple(dict.fromkeys(q for p in provenances for q in p.nondeterministic_queries))
    # paired latency is the merge's only when every shard timed the baseline's backend (rescore pairs the queries)
    unpaired = () if all("paired_latency" in p.extra for p in provenances) else ("paired_latency",)
    extra = {key: value for key, value in base.extra.items() if key not in ("shard", "executor", *unpaired)}
    extra["shards"] = shards
    return replace(
        base, started=min((p.started for p in provenances if p.started), default=None),
        git_commit=base.git_commit if len(commits) == 1 else None,
        adapter=replace(base.adapter, startup_seconds=_max(p.adapter.startup_seconds for p in provenances)),
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
    return max((value for value in values if value is not None), default=None)
