"""The main job as one call: `gate(...)` asks a backend every query of the sets, gates, returns a `Report`.

This is what `python -m harness` runs (the command only reads argv, writes the outputs and
exits with `report.exit_code`), what `merge` runs on shard reports, and what a backend team's
own Python or pytest code calls:

    import harness
    report = harness.gate(["memory"], backend=["./my-adapter", "--index", "prod"],
                          baseline="baselines/my-adapter.json")
    harness.raise_for_gates(report)  # unless it passed: GatesFailed with the verdict's few lines

Stages (docs/design.md): load the sets, budgets, policy and baseline (all errors before any
process starts) -> materialise the corpora -> ask (harness.adapter) -> evaluate (scoring) ->
decide (gating.gates.decide, the one gating function) -> the typed Report. Nothing here prints
or writes an output file; without `log_path`, `gate` keeps the adapter's log in a temp folder it
removes before returning.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.adapter.asking import RunOutcome, ask_sets, git_commit, machine, run_from_file
from harness.adapter.backends import BACKENDS, DEFAULT_BACKEND, backend_argv
from harness.adapter.options import RunOptions, check_types, option_names
from harness.errors import EXIT_CONFIG, BaselineError, UsageError
from harness.gating.baseline import Baseline, build_baseline, write_baseline
from harness.gating.budgets import load_budgets
from harness.gating.gates import decide
from harness.gating.identity import BackendCheck, BackendIdentity, check_backend
from harness.gating.inputs import GateInputs
from harness.gating.policy import load_policy
from harness.records import SetResult
from harness.rerun import Rerun
from harness.report.document import AdapterStart, Backend, Provenance, Report, SetSource, exit_code_for
from harness.report.merge import plan_merge, rescore
from harness.report.views import baseline_view
from harness.scoring.compare import Comparison, compare
from harness.scoring.evaluate import METRIC_DEFINITIONS, policy_metric_name, pooled_aggregate
from harness.scoring.metrics import parse_metric
from harness.scoring.what_if import what_if_min_score
from harness.sets.fingerprint import changed_files, corpus_fingerprints, fingerprint_files, set_files
from harness.layout import FROM_LAYOUT, FromLayout, Layout, resolve as resolve_layout
from harness.sets.loader import load_set
from harness.sets.materialise import materialise_corpora
from harness.sets.shards import parse_shard, select_shard, shard_positions
from harness.version import __version__
from harness.watchdog import guarded_temp_folder

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class GateOptions:
    """How a run is gated and what its report records as given: everything of a run but how the
    backend is asked (RunOptions). The gating options are run's and `merge`'s alike."""

    known_contract_failures: bool = False  # contracts the baseline records as broken: reported, not failed
    allow_backend_change: bool = False     # gate against a baseline recorded for another backend (recorded)
    condition: str | None = None           # "cold" or "warm", recorded as given (never inferred)
    what_if_min_score: float | None = None  # report only: the metrics with hits scoring below it dropped
    shard: str | None = None               # ask only shard "I/N" of every set, ungated (docs/scale.md)

    def __post_init__(self) -> None:
        check_types(self, {"known_contract_failures": (bool,), "allow_backend_change": (bool,),
                           "condition": (str, type(None)), "what_if_min_score": (int, float, type(None)),
                           "shard": (str, type(None))})
        if self.shard is not None:
            parse_shard(self.shard)
        if self.what_if_min_score is not None and not math.isfinite(self.what_if_min_score):
            # the report would carry it, and strict report JSON has no NaN or Infinity
            raise UsageError(f"--what-if-min-score: must be a finite number, got {self.what_if_min_score}")
        if self.condition not in (None, "cold", "warm"):
            raise UsageError(f"--condition: 'cold' or 'warm', got {self.condition!r}")


def gate(sets: Sequence[str | Path] = ("all",), *, backend: str | Sequence[str] | None = None,
         run_file: str | Path | None = None, sets_dir: str | Path | FromLayout = FROM_LAYOUT,
         baseline: str | Path | None | FromLayout = FROM_LAYOUT, budgets: str | Path | None = None,
         policy: str | Path | None = None, offline: bool = False, progress: Progress | None = None,
         **options: Any) -> Report:
    """Run the sets against a backend and gate the result; return the typed Report.

    Parameters:
      sets: set names (the team's `sets_dir` first, then the shipped sets), set folders, or "all"
        (default: the sets the baseline records, or every set found without a baseline file;
        docs/commands.md, "A team's layout"); one name alone is one set.
      sets_dir, baseline, budgets, policy: default to the team's layout (harness/layout.py: its
        config file, else the working folder's sets/, baselines/current.json, budgets.json,
        gate-policy.json, else the shipped sets and baseline).
      backend: a built-in alias ("bm25", "onnx", "hybrid") or an adapter argv (a list: never run
        through a shell). Exclusive with `run_file`. Default: the config's `adapter` (started in the
        config's folder, with its `expect_banner` unless given) or `backend`, else "bm25".
      run_file: evaluate a precomputed TREC run instead of asking an adapter (no latency gate).
      baseline: the baseline file to gate against; None measures without gating.
      budgets: the p95 budgets file; None: the layout's (300 ms per set without one).
      policy: the gate policy file; None: the layout's (the defaults without one: recall@10 may
        drop at most 2.0 points, overall and per category).
      offline: never fetch corpus archives.
      progress: called as progress(set name, answered, total) while asking.
      options: any field of RunOptions (harness/adapter/options.py) or GateOptions: k (ids per
        query, default each set's k, 1..10,000), expect_banner (fail unless the adapter prints its ready banner;
        built-in backends always do), query_timeout / startup_timeout (seconds per answer /
        until the banner), warmup (untimed queries first), repeats (each query N times, latency
        the median), workers (N adapter processes answer shards of each set at once), condition
        ("cold"/"warm", recorded as given), known_contract_failures (contracts the baseline
        records as broken are reported, not failed), what_if_min_score (also report metrics
        with low-scoring hits dropped), log_path (where the adapter's stderr is kept; without it,
        a temp file removed before gate returns: the report's adapter log is then None and a
        backend failure's error carries the log's tail), allow_backend_change
        (gate against a baseline recorded for another backend or model; the report records it);
        scale-out (docs/scale.md): shard ("I/N": ask only that deterministic part of every set,
        ungated; `merge` combines and gates the N reports), executor ("local" or "ray"),
        ray_address (default: a local Ray instance), worker_cpus / worker_gpus; baseline_adapter (the
        baseline's backend as an argv, or a built-in backend's name: timed beside this one query by query,
        both on one CPU, for a paired latency verdict; docs/gate.md, "Paired latency"; default: the
        config's `baseline_adapter`).

    Raises HarnessError subclasses for what stops a run before it starts (bad options, sets,
    budgets or baseline: exit code 2). A backend failure or an interrupt during the run is not
    raised: the Report comes back with `complete=False`, `error` and its exit code.
    """
    if isinstance(sets, (str, os.PathLike)):
        sets = [sets]  # one set named alone, not its letters
    _check_gate_arguments(sets, backend, run_file, {"sets_dir": sets_dir, "baseline": baseline,
                                                     "budgets": budgets, "policy": policy})
    unknown = sorted(set(options) - option_names(RunOptions) - option_names(GateOptions))
    if unknown:
        raise UsageError(f"{unknown[0]}: not an option of harness.gate (see RunOptions, GateOptions)")
    # each value (Any: a Python caller's) is checked by its record as it is built
    settings = RunOptions(**{name: value for name, value in options.items() if name in option_names(RunOptions)})
    gating = GateOptions(**{name: value for name, value in options.items() if name in option_names(GateOptions)})
    asking = Rerun(backend=backend if isinstance(backend, str) else None, expect_banner=settings.expect_banner,
                   adapter=() if backend is None or isinstance(backend, str) else tuple(str(part) for part in backend),
                   run_file=None if run_file is None else str(run_file))
    team = resolve_layout(sets_dir=_path_or_none(sets_dir), budgets=_path_or_none(budgets),
                          policy=_path_or_none(policy),
                          baseline=FROM_LAYOUT if baseline is FROM_LAYOUT else _path_or_none(baseline), asking=asking)
    if backend is None and run_file is None:  # the config's adapter or built-in backend, as the command's
        backend = list(team.rerun.adapter) or team.rerun.backend
        if team.rerun.adapter:  # started in the config's folder, with its expect_banner unless one was given
            expect = options.get("expect_banner", team.rerun.expect_banner)
            settings = dataclasses.replace(settings, adapter_folder=team.folder, expect_banner=expect)
    if "baseline_adapter" not in options and team.baseline_adapter:  # the config's: paired latency
        settings = dataclasses.replace(settings, baseline_adapter=team.baseline_adapter,
                                       baseline_adapter_folder=team.folder)
    inputs = load_inputs(sets, layout=team, offline=offline, k=settings.k, gated=team.baseline is not None)
    if "log_path" in options:
        return run_gate(inputs, backend=backend, run_file=run_file, options=settings, gating=gating,
                        progress=progress)
    # Files only where the arguments say: without log_path the log lives for this call only.
    with guarded_temp_folder("retrieval-gate-log-") as folder:
        report = run_gate(inputs, backend=backend, run_file=run_file, progress=progress, gating=gating,
                          options=dataclasses.replace(settings, log_path=Path(folder) / "adapter.log"))
    adapter = dataclasses.replace(report.provenance.adapter, log=None)
    return dataclasses.replace(report, provenance=dataclasses.replace(report.provenance, adapter=adapter))


def _check_gate_arguments(sets: object, backend: object, run_file: object, paths: dict[str, object]) -> None:
    """The types `gate` accepts, checked before anything is read: a wrong one is one UsageError line."""
    if not isinstance(sets, Sequence) or not all(isinstance(item, (str, os.PathLike)) for item in sets):
        raise UsageError(f"sets: must be a list of set names or folders, got {sets!r:.60}")
    if backend is not None and not isinstance(backend, str) and not (
            isinstance(backend, Sequence) and backend and all(isinstance(part, str) for part in backend)):
        raise UsageError(f"backend: must be a backend name or an adapter argv (a list of strings), "
                         f"got {backend!r:.60}")
    for name, value in {"run_file": run_file, **paths}.items():
        if value is not FROM_LAYOUT and (value is not None or name == "sets_dir") \
                and not isinstance(value, (str, os.PathLike)):
            raise UsageError(f"{name}: must be a path (str or os.PathLike), got {type(value).__name__} {value!r:.60}")


def _path_or_none(value: object) -> Path | None:
    """An argument (checked: a path, None or the FROM_LAYOUT default) as a Path, or None."""
    return Path(value) if isinstance(value, (str, os.PathLike)) else None


def load_inputs(sets: Sequence[str | Path], *, layout: Layout, offline: bool, k: int | None,
                gated: bool = True, updating: bool = False) -> GateInputs:
    """Load and check everything a run reads, so any error stops it before the adapter starts.

    `gated` False (--no-gate, --update-baseline, a shard): the baseline only says what `all` is.
    `updating` (--update-baseline): the baseline file, when there is one, is read now: the run must be
    the backend it records (or be allowed to change it), checked as a gate checks it.
    """
    folders, notices = layout.select([str(s) for s in sets])
    query_sets = tuple(load_set(folder, offline=offline) for folder in folders)
    replaced = updating and layout.baseline is not None and os.path.lexists(layout.baseline)
    inputs = GateInputs(query_sets, budgets=load_budgets(layout.budgets),
                        policy=load_policy(layout.policy, policy_metric_name),
                        baseline=layout.checked_baseline if gated and layout.baseline is not None else None,
                        fingerprints=fingerprint_files(set_files(query_sets)), notices=tuple(notices),
                        replaced=layout.checked_baseline if replaced else None,
                        named_options=layout.rerun.options)
    inputs.entries(k)  # a set the baseline cannot be compared with is refused now, not after the run
    return inputs


def run_gate(inputs: GateInputs, *, backend: str | Sequence[str] | None = None, run_file: str | Path | None = None,
             options: RunOptions = RunOptions(), gating: GateOptions = GateOptions(),
             progress: Progress | None = None) -> Report:
    """`gate` on inputs already loaded (`load_inputs`): ask, evaluate, decide, and build the Report."""
    options, label = _with_backend(options, backend, run_file, inputs)
    if run_file is None:
        inputs.budgets.check_startup_reach(options.startup_limit)  # before the adapter starts
    inputs, shard_record = _select_shard(inputs, gating.shard)
    outcome, checked, drift = _ask(inputs, options, gating, run_file, progress)
    error, error_code = _run_error(outcome, drift)
    # A shard is never gated alone (its query counts and latencies are a part): `merge` gates the whole.
    gated = inputs if shard_record is None else dataclasses.replace(inputs, baseline=None)
    provenance = _provenance(options, label, gating.condition, inputs, outcome, run_file, shard_record)
    report = decided_report(outcome.results, gated, provenance, _answered_by(checked, outcome, options.argv),
                            k=options.k, known_contract_failures=gating.known_contract_failures,
                            warnings=inputs.notices + tuple(outcome.warnings),
                            complete=outcome.complete and not drift, error=error, error_code=error_code)
    return _with_what_if(report, inputs, gating.what_if_min_score)


def merge_gate(shards: Sequence[tuple[str, Report]], *, layout: Layout, offline: bool = False,
               gated: bool = True, updating: bool = False, gating: GateOptions = GateOptions(),
               check_inputs: Callable[[GateInputs], None] | None = None) -> Report:
    """The N shard reports of one run as the report the unsharded run writes, decided exactly as a run is.

    The sets the shards name are loaded (their revision, corpus and judgments must match the
    shards'), every query is re-scored from the ids, scores and passages the shards recorded
    (a recorded metric that disagrees is refused: ReportError naming the shard and query), and
    the merged results go through the same identity check and `decide` as a run.
    `check_inputs(inputs)` runs once they are loaded, before any re-scoring (the command's outputs
    checked against the sets' files).
    """
    plan = plan_merge(shards)
    inputs = load_inputs(plan.set_paths((layout.sets_dir, layout.shipped_sets)), layout=layout, offline=offline,
                         k=plan.k, gated=gated and layout.baseline is not None, updating=updating)
    if check_inputs is not None:
        check_inputs(inputs)
    results = rescore(plan, inputs.query_sets, _computed_metrics(inputs))
    identity = _identity_check(list(plan.identities), inputs, gating.allow_backend_change, what="shards")
    return decided_report(results, inputs, plan.provenance, identity, k=plan.k,
                          known_contract_failures=gating.known_contract_failures, warnings=plan.warnings)


def decided_report(results: Sequence[SetResult], inputs: GateInputs, provenance: Provenance,
                   identity: BackendCheck | None, *, k: int | None, known_contract_failures: bool = False,
                   warnings: Sequence[str] = (), complete: bool = True, error: str | None = None,
                   error_code: int | None = None) -> Report:
    """The Report of evaluated sets: the gates from `decide` (none when the run failed or has no
    baseline), the verdict, and what provenance records of the inputs and the identity check."""
    decision = decide(results, inputs, k=k, latency_gated=provenance.run_file is None,
                      known_contract_failures=known_contract_failures) if error_code is None else None
    extra = dict(provenance.extra)
    extra["baseline"] = (inputs.baseline.gated_against([r.name for r in results])
                         if inputs.baseline is not None else None)
    extra["rerun"] = _rerun(provenance, inputs.named_options).to_dict()
    extra["policy"] = inputs.policy.to_dict()
    if identity is not None:
        extra["backend_identity"] = identity.identity.to_dict()
        if identity.changed:
            extra["backend_change_allowed"] = True
    gated = decision if decision is not None and decision.gates else None  # no gates: no flips, no latency either
    gates = gated.gates if gated is not None else ()
    return Report(provenance=dataclasses.replace(provenance, extra=extra), sets=tuple(results), gates=gates,
                  complete=complete, error=error, exit_code=exit_code_for(error_code, gates),
                  warnings=(identity.notes if identity is not None else ()) + tuple(warnings),
                  pooled=pooled_aggregate(results), flips=gated.flips if gated is not None else None,
                  baseline_latency=gated.baseline_latency if gated is not None else None,
                  baseline_resources=gated.baseline_resources or None if gated is not None else None)


def _rerun(provenance: Provenance, options: Sequence[str]) -> Rerun:
    """What answered the run, as every command the report prints repeats it (harness/rerun.py), with the file
    options its command line named."""
    if provenance.run_file is not None:
        return Rerun(run_file=provenance.run_file, options=tuple(options))
    if provenance.backend.label in BACKENDS:
        return Rerun(backend=provenance.backend.label, options=tuple(options))
    return Rerun(adapter=tuple(provenance.backend.argv), expect_banner=provenance.adapter.expect_banner,
                 options=tuple(options))


def check_executable(argv: Sequence[str], folder: Path | None = None) -> None:
    """An adapter command that does not exist or cannot run is a configuration error (exit 2), found
    before anything starts: the backend did not fail, it was never there. A relative path is looked up in
    `folder`, where it will start (None: the working folder)."""
    program = argv[0]
    path = os.path.join(folder or "", program)
    found = shutil.which(program) if os.sep not in program else (path if os.path.exists(path) else None)
    if found is None:
        raise UsageError(f"adapter command {program!r} not found" + ("" if os.sep in program else " on PATH"))
    if os.path.isdir(found) or not os.access(found, os.X_OK):
        raise UsageError(f"adapter command {program!r} is not executable (chmod +x it, or run it with its interpreter)")


# -- the run's stages ------------------------------------------------------------------------------

def _with_backend(options: RunOptions, backend: str | Sequence[str] | None, run_file: str | Path | None,
                  inputs: GateInputs) -> tuple[RunOptions, str]:
    """The options with what answers filled in (argv, whether to wait for a banner, the policy's metrics),
    and the backend's label for the report."""
    if backend is not None and run_file is not None:
        raise UsageError("--adapter, --backend and --run-file are exclusive: give one source of rankings")
    expect = options.expect_banner
    if run_file is not None and options.baseline_adapter:
        raise UsageError("--baseline-adapter times an adapter beside the run's; a run file has no latency")
    if run_file is not None:
        argv, label, expect = [], f"run-file {run_file}", False
    elif backend is None or isinstance(backend, str):
        argv, label, expect = backend_argv(backend or DEFAULT_BACKEND), backend or DEFAULT_BACKEND, True
    else:
        argv = [str(arg) for arg in backend]
        if not argv:
            raise UsageError("backend: the adapter command is empty")
        label = " ".join(argv)
        check_executable(argv, options.adapter_folder)
    # The baseline names a backend from its banner: an adapter whose banner is not awaited answers one
    # untimed query first, so its banner (or its lack of one, exit 2 at once) is known before any other.
    recorded = inputs.identity_baseline
    named = recorded is not None and run_file is None and any(
        recorded.identity_for(s.name).name is not None for s in inputs.query_sets)
    base = options.baseline_adapter
    if isinstance(base, str):  # a built-in backend's name
        base = backend_argv(base)
    elif base:
        check_executable(list(base), options.baseline_adapter_folder)
    return dataclasses.replace(options, argv=argv, expect_banner=expect, identify_first=named and not expect,
                               metrics=_computed_metrics(inputs), baseline_adapter=tuple(base)), label


def _computed_metrics(inputs: GateInputs) -> tuple[str, ...]:
    """What the policy gates is computed and kept per query (evidence figures always are)."""
    return tuple(m for m in inputs.policy.metrics if not parse_metric(m).nullable)


def _identity_check(identities: list[BackendIdentity], inputs: GateInputs, allow_change: bool,
                    what: str = "workers") -> BackendCheck:
    """The run's backend against every backend the baseline records for the run's sets (one per set)."""
    baseline = inputs.identity_baseline
    recorded = None if baseline is None else {s.name: baseline.identity_for(s.name) for s in inputs.query_sets}
    return check_backend(identities, recorded, str(baseline.path) if baseline is not None else "",
                         allow_change=allow_change, what=what)


def _run_error(outcome: RunOutcome, drift: Sequence[str]) -> tuple[str | None, int | None]:
    """(error line, exit code) of a run that cannot be gated: the backend failed, or its inputs changed."""
    if outcome.error is not None:
        return str(outcome.error), outcome.error.exit_code
    if drift:
        return "the run's inputs changed while it ran: " + "; ".join(drift) + " (nothing was gated)", EXIT_CONFIG
    return None, None


def _answered_by(check: BackendCheck | None, outcome: RunOutcome, argv: Sequence[str]) -> BackendCheck | None:
    """Who answered: the identity checked at start, named from the banner when the start did not wait for it
    (no --expect-banner and no named baseline)."""
    if outcome.banner is None or (check is not None and check.identity.name is not None):
        return check
    identity = BackendIdentity.of(outcome.banner, argv)
    return BackendCheck(identity) if check is None else dataclasses.replace(check, identity=identity)


def _with_what_if(report: Report, inputs: GateInputs, min_score: float | None) -> Report:
    """--what-if-min-score: the metrics each set would have with the low-scoring hits dropped (report only)."""
    if min_score is None:
        return report
    by_name = {s.name: s for s in inputs.query_sets}
    return dataclasses.replace(report, what_if={
        r.name: what_if_min_score(r, by_name[r.name], min_score) for r in report.sets if r.queries})


def _select_shard(inputs: GateInputs, shard_text: str | None) -> tuple[GateInputs, dict[str, object] | None]:
    """The inputs with only this shard's queries of every set, and the record its report carries.

    The record (provenance.shard) keeps each set's full query count and the positions in the
    set of the queries asked, so `merge` restores set order and proves the shards cover the set.
    """
    if shard_text is None:
        return inputs, None
    shard = parse_shard(shard_text)
    record: dict[str, object] = {**shard.to_dict(), "sets": {
        s.name: {"query_count": len(s.queries), "positions": list(shard_positions(s, shard))}
        for s in inputs.query_sets}}
    sets = tuple(select_shard(s, shard.index, shard.count) for s in inputs.query_sets)
    return dataclasses.replace(inputs, query_sets=sets), record


def _ask(inputs: GateInputs, options: RunOptions, gating: GateOptions, run_file: str | Path | None,
         progress: Progress | None) -> tuple[RunOutcome, BackendCheck | None, list[str]]:
    """Ask every query (or read the run file): the outcome, the backend identity checked once the workers
    started and before any query (a refusal raises, exit 2), and what changed while it ran."""
    Path(options.log_path).parent.mkdir(parents=True, exist_ok=True)
    if not any(s.queries for s in inputs.query_sets):
        options = dataclasses.replace(options, warmup=0)  # a shard may hold no query: nothing to warm up with
    drift: list[str] = []
    checked = None
    if run_file is not None:
        outcome = run_from_file(inputs.query_sets, options, Path(run_file))
    else:
        with guarded_temp_folder("retrieval-gate-corpus-") as corpus_dir:
            materialise_corpora(inputs.query_sets, Path(corpus_dir))
            corpus_files = corpus_fingerprints(Path(corpus_dir))
            with ask_sets(inputs.query_sets, options, Path(corpus_dir)) as run:
                banners = run.start().banners  # every worker started, no query asked yet
                checked = _identity_check([BackendIdentity.of(banner, options.argv) for banner in banners], inputs,
                                          gating.allow_backend_change)  # a wrong backend stops the run here
                run.ask(progress)
            outcome = run.outcome
            drift += changed_files(corpus_files, corpus_fingerprints(Path(corpus_dir)), "materialised corpus file")
    drift += changed_files(inputs.fingerprints, fingerprint_files(inputs.fingerprints), "set file")
    return outcome, checked, drift


def _provenance(options: RunOptions, label: str, condition: str | None, inputs: GateInputs, outcome: RunOutcome,
                run_file: str | Path | None, shard: Mapping[str, object] | None) -> Provenance:
    """Who ran what, where: built once, from the options, the sets and what asking recorded."""
    settings = {**options.settings(), "workers": outcome.workers, "latency_under_concurrency": outcome.workers > 1}
    # paired latency (never with a run file: _with_backend refuses both): what was timed beside the run, and where
    paired = {"baseline_adapter": list(options.baseline_adapter), "baseline_banner": outcome.base_banner,
              "placement": outcome.placement, "order": "ABBA"} if options.baseline_adapter else None
    extra = {key: value for key, value in (("shard", shard), ("executor", outcome.executor),
                                           ("tied_order_changed", list(outcome.tied_order_changed) or None),
                                           ("paired_latency", paired)) if value is not None}
    return Provenance(
        harness_version=__version__, started=outcome.started, git_commit=git_commit(),
        backend=Backend(label, tuple(options.argv)),
        adapter=AdapterStart(expect_banner=options.expect_banner, banner=outcome.banner,
                             startup_seconds=outcome.startup_seconds, warmup_seconds=outcome.warmup_seconds,
                             log=str(options.log_path)),
        condition=condition, metric_definitions=METRIC_DEFINITIONS, settings=settings,
        sets={s.name: SetSource(revision=s.revision, corpus_hash=s.corpus_hash, path=s.path, source=s.corpus_source,
                                documents=len(s.documents), judgments_hash=s.judgments_hash)
              for s in inputs.query_sets},
        machine=machine(), duration_seconds=outcome.duration_seconds, asking_seconds=outcome.asking_seconds,
        nondeterministic_queries=tuple(outcome.nondeterministic),
        run_file=str(run_file) if run_file is not None else None, extra=extra)


# -- re-baselining ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class BaselineUpdate:
    """A baseline about to be written from a report: the new document, what it replaces, the comparison."""

    path: Path
    document: Mapping[str, object]
    previous: Baseline | None
    comparison: Comparison | None

    def report_with_previous(self, report: Report) -> Report:
        """The report (the one this update was prepared from) carrying the replaced values
        (`previous_baseline`), recoverable without git."""
        if self.previous is None:
            return report
        recorded = self.previous.document["sets"]
        replaced = {r.name: recorded[r.name] for r in report.sets if r.name in recorded}
        return dataclasses.replace(report, previous_baseline=replaced)


def prepare_baseline_update(report: Report, path: str | Path) -> BaselineUpdate:
    """The baseline a complete report would write to `path`, compared with the one there now.

    Raises BaselineError for an incomplete report (it can never become a baseline).
    """
    if not report.complete:
        raise BaselineError("refusing to write a baseline from an incomplete run")
    path = Path(path)
    new = build_baseline(list(report.sets), report.provenance.to_dict())
    previous = Baseline.read(path) if path.exists() else None
    comparison = (compare(baseline_view(previous), baseline_view(Baseline.from_document(new, path), "this run"))
                  if previous is not None else None)
    return BaselineUpdate(path, new, previous, comparison)


def write_baseline_update(update: BaselineUpdate) -> None:
    """Write the new baseline atomically; sets not in this run keep their previous entries."""
    write_baseline(update.path, dict(update.document))

