"""The main job as one call: `gate(...)` asks a backend every query of the sets, gates, returns a `Report`.

This is what `python -m harness` runs (the command only reads argv, writes the outputs and
exits with `report.exit_code`) and what a backend team's own Python or pytest code calls:

    import harness
    report = harness.gate(["memory"], backend=["./my-adapter", "--index", "prod"],
                          baseline="baselines/my-adapter.json")
    assert report.exit_code == 0, [g.message for g in report.failed_gates]

Stages (docs/design.md): load the sets, budgets and the baseline (all errors before any
process starts) -> materialise the corpora -> ask (harness.adapter) -> evaluate (scoring) ->
gate (gating) -> the typed Report (report). Nothing here prints or writes an output file.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.adapter.asking import RunOptions, run_from_file, run_sets
from harness.adapter.backends import DEFAULT_BACKEND, backend_argv
from harness.adapter.process import QUERY_TIMEOUT_SECONDS, STARTUP_LIMIT_SECONDS, STARTUP_TIMEOUT_SECONDS, wait_problem
from harness.errors import EXIT_CONFIG, BaselineError, UsageError
from harness.adapter.windows import DEFAULT_MAX_WINDOW
from harness.gating.baseline import build_baseline, read_baseline, set_entry_for, write_baseline
from harness.gating.budgets import load_budgets
from harness.gating.gates import check
from harness.gating.identity import BackendIdentity, check_identity, refuse_if_different
from harness.gating.policy import GatePolicy, load_policy
from harness.records import QuerySet
from harness.report.document import AdapterStart, Backend, Provenance, Report, SetSource, verdict
from harness.scoring.compare import Comparison, compare, run_view
from harness.scoring.evaluate import policy_metric_name, pooled_aggregate
from harness.scoring.evidence import evidence_metric_names
from harness.scoring.what_if import what_if_min_score
from harness.sets.loader import find_sets, load_set
from harness.sets.fingerprint import changed_files, corpus_fingerprints, fingerprint_files, set_files
from harness.sets.materialise import materialise_corpora
from harness.sets.shards import parse_shard, select_shard, shard_positions
from harness.watchdog import guarded_temp_folder

DEFAULT_BASELINE = Path("baselines/current.json")
DEFAULT_BUDGETS = Path("budgets.json")
DEFAULT_LOG = Path(".retrieval-gate/report.adapter.log")
MAX_K = 10_000  # a response may hold at most k ids: this bounds every response the harness accepts
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class GateInputs:
    """What a run reads before any process starts: the sets, the budgets and the baseline entries."""

    query_sets: tuple[QuerySet, ...]
    budgets_ms: Mapping[str, float]
    default_budget_ms: float
    baseline_entries: Mapping[str, Mapping] | None  # None: no gating (--no-gate, --update-baseline)
    policy: GatePolicy = GatePolicy()
    baseline_path: Path | None = None
    baseline_document: Mapping[str, object] | None = None  # the whole baseline file, for its identity
    fingerprints: Mapping[str, str | None] = dataclasses.field(default_factory=dict)  # set files at load

    def gated_against(self) -> dict[str, object] | None:
        """What a report says it was gated against: the file, whose backend, when, at which commit."""
        if self.baseline_path is None or self.baseline_document is None:
            return None
        document = self.baseline_document
        backend = BackendIdentity.from_record(document.get("backend") or {})  # type: ignore[arg-type]
        return {"path": str(self.baseline_path), "backend": backend.describe(),
                "created": document.get("created"), "git_commit": document.get("git_commit")}


# -- scale-out hooks (docs/scale.md) -------------------------------------------------------------

EXECUTORS = ("local", "ray")


def _check_scale_options(options: GateOptions) -> None:
    if options.shard is not None:
        parse_shard(options.shard)
    if options.executor not in EXECUTORS:
        raise UsageError(f"--executor: one of {', '.join(EXECUTORS)}, got {options.executor!r}")
    for name, value in (("--worker-cpus", options.worker_cpus), ("--worker-gpus", options.worker_gpus)):
        if not (value >= 0 and value < float("inf")):
            raise UsageError(f"{name}: must be a number >= 0, got {value}")
    if options.executor == "local" and (options.ray_address is not None or options.worker_gpus
                                        or options.worker_cpus != 1.0):
        raise UsageError("--ray-address, --worker-cpus and --worker-gpus need --executor ray")


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


def _start_workers(options: GateOptions):
    """The executor's worker starter for run_sets; None: local adapter processes."""
    if options.executor != "ray":
        return None
    from harness.adapter import ray_executor  # optional extra [ray]: imported only when asked for
    return ray_executor.RayWorkers(address=options.ray_address, worker_cpus=options.worker_cpus,
                                   worker_gpus=options.worker_gpus)


@dataclass(frozen=True)
class GateOptions:
    """How to ask and gate (every field has the command line's default; see `gate` for each)."""

    k: int | None = None
    expect_banner: bool = False
    query_timeout: float = QUERY_TIMEOUT_SECONDS
    startup_timeout: float = STARTUP_TIMEOUT_SECONDS
    warmup: int = 0
    repeats: int = 1
    workers: int = 1
    condition: str | None = None
    known_contract_failures: bool = False
    what_if_min_score: float | None = None
    log_path: Path = DEFAULT_LOG
    allow_backend_change: bool = False
    startup_limit: float = STARTUP_LIMIT_SECONDS
    on_startup_progress: Callable[[object], None] | None = None  # each start-up progress line (any thread)
    # Scale-out (docs/scale.md): ask only shard "I/N" of every set; run the workers on an executor.
    shard: str | None = None
    executor: str = "local"
    ray_address: str | None = None
    worker_cpus: float = 1.0
    worker_gpus: float = 0.0
    max_window: int = DEFAULT_MAX_WINDOW  # issue 17: characters a shown passage may span

    def __post_init__(self) -> None:
        _check_option_types(self)
        _check_scale_options(self)
        if self.k is not None and self.k > MAX_K:
            raise UsageError(f"--k: at most {MAX_K} ids per query, got {self.k}")
        for name, value, low in (("--k", self.k, 1), ("--repeats", self.repeats, 1), ("--warmup", self.warmup, 0),
                                 ("--workers", self.workers, 1), ("--max-window", self.max_window, 1)):
            if value is not None and value < low:
                raise UsageError(f"{name}: must be >= {low}, got {value}")
        for name, value in (("--timeout", self.query_timeout), ("--startup-timeout", self.startup_timeout),
                            ("--startup-limit", self.startup_limit)):
            problem = wait_problem(value)
            if problem:
                raise UsageError(f"{name}: {problem}")
        if self.what_if_min_score is not None and not math.isfinite(self.what_if_min_score):
            # the report would carry it, and strict report JSON has no NaN or Infinity
            raise UsageError(f"--what-if-min-score: must be a finite number, got {self.what_if_min_score}")
        if self.condition not in (None, "cold", "warm"):
            raise UsageError(f"--condition: 'cold' or 'warm', got {self.condition!r}")


# The types a Python caller may give each GateOptions field (the command line's parser gives these),
# so `workers="2"` is one UsageError line and not a TypeError deep in the run.
_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "k": (int, type(None)), "expect_banner": (bool,), "query_timeout": (int, float),
    "startup_timeout": (int, float), "warmup": (int,), "repeats": (int,), "workers": (int,),
    "condition": (str, type(None)), "known_contract_failures": (bool,),
    "what_if_min_score": (int, float, type(None)), "log_path": (str, os.PathLike),
    "allow_backend_change": (bool,), "startup_limit": (int, float), "shard": (str, type(None)),
    "executor": (str,), "ray_address": (str, type(None)), "worker_cpus": (int, float),
    "worker_gpus": (int, float), "max_window": (int,)}


def _check_option_types(options: GateOptions) -> None:
    for name, kinds in _OPTION_TYPES.items():
        value = getattr(options, name)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            wanted = " or ".join("None" if kind is type(None) else kind.__name__ for kind in kinds)
            raise UsageError(f"{name}: must be {wanted}, got {type(value).__name__} {value!r:.60}")
    if options.on_startup_progress is not None and not callable(options.on_startup_progress):
        raise UsageError("on_startup_progress: must be callable or None")


def _check_gate_arguments(sets: object, backend: object, run_file: object, paths: dict[str, object]) -> None:
    """The types `gate` accepts, checked before anything is read: a wrong one is one UsageError line."""
    if not isinstance(sets, Sequence) or not all(isinstance(item, (str, os.PathLike)) for item in sets):
        raise UsageError(f"sets: must be a list of set names or folders, got {sets!r:.60}")
    if backend is not None and not isinstance(backend, str) and not (
            isinstance(backend, Sequence) and backend and all(isinstance(part, str) for part in backend)):
        raise UsageError(f"backend: must be a backend name or an adapter argv (a list of strings), "
                         f"got {backend!r:.60}")
    for name, value in {"run_file": run_file, **paths}.items():
        if (value is not None or name == "sets_dir") and not isinstance(value, (str, os.PathLike)):
            raise UsageError(f"{name}: must be a path (str or os.PathLike), got {type(value).__name__} {value!r:.60}")


def gate(sets: Sequence[str | Path] = ("all",), *, backend: str | Sequence[str] | None = None,
         run_file: str | Path | None = None, sets_dir: str | Path = "sets",
         baseline: str | Path | None = DEFAULT_BASELINE, budgets: str | Path | None = None,
         policy: str | Path | None = None, offline: bool = False, progress: Progress | None = None,
         **options: object) -> Report:
    """Run the sets against a backend and gate the result; return the typed Report.

    Parameters:
      sets: set names under `sets_dir`, set folders, or "all" (default); one name alone is one set.
      backend: a built-in alias ("bm25", "onnx", "hybrid"; default "bm25") or an adapter argv
        (a list: never run through a shell). Exclusive with `run_file`.
      run_file: evaluate a precomputed TREC run instead of asking an adapter (no latency gate).
      baseline: the baseline file to gate against; None measures without gating.
      budgets: the p95 budgets file; None reads budgets.json when present (300 ms otherwise).
      policy: the gate policy file; None reads gate-policy.json when present (the defaults
        otherwise: recall@10 may drop at most 2.0 points, overall and per category).
      offline: never fetch corpus archives.
      progress: called as progress(set name, answered, total) while asking.
      options: any GateOptions field: k (ids per query, default each set's k, 1..10,000),
        expect_banner (fail unless the adapter prints its ready banner; built-in backends always
        do), query_timeout / startup_timeout (seconds per answer / until the banner), warmup
        (untimed queries first), repeats (each query N times, latency the median), workers (N
        adapter processes answer shards of each set at once), condition ("cold"/"warm", recorded
        as given), known_contract_failures (contracts the baseline records as broken are
        reported, not failed), what_if_min_score (also report metrics with low-scoring hits
        dropped), log_path (the adapter's stderr), allow_backend_change (gate against a baseline
        recorded for another backend or model; the report records it);
        scale-out (docs/scale.md): shard ("I/N": ask
        only that deterministic part of every set, ungated; `merge` combines and gates the N
        reports), executor ("local" or "ray": the workers as Ray actors across a cluster),
        ray_address (default: a local Ray instance), worker_cpus / worker_gpus (Ray resources
        each worker reserves).

    Raises HarnessError subclasses for what stops a run before it starts (bad options, sets,
    budgets or baseline: exit code 2). A backend failure or an interrupt during the run is not
    raised: the Report comes back with `complete=False`, `error` and its exit code.
    """
    if isinstance(sets, (str, os.PathLike)):
        sets = [sets]  # one set named alone, not its letters
    _check_gate_arguments(sets, backend, run_file, {"sets_dir": sets_dir, "baseline": baseline,
                                                     "budgets": budgets, "policy": policy})
    unknown = sorted(set(options) - {field.name for field in dataclasses.fields(GateOptions)})
    if unknown:
        raise UsageError(f"{unknown[0]}: not an option of harness.gate (see GateOptions)")
    settings = GateOptions(**options)  # type: ignore[arg-type]
    inputs = load_inputs(sets, sets_dir=Path(sets_dir), offline=offline, budgets=budgets,
                         baseline=Path(baseline) if baseline is not None else None, k=settings.k,
                         policy=Path(policy) if policy is not None else None)
    return run_gate(inputs, backend=backend, run_file=run_file, options=settings, progress=progress)


def run_gate(inputs: GateInputs, *, backend: str | Sequence[str] | None = None, run_file: str | Path | None = None,
             options: GateOptions = GateOptions(), progress: Progress | None = None) -> Report:
    """`gate` on inputs already loaded (`load_inputs`): ask, evaluate, gate, and build the Report."""
    argv, label, expect = _backend(backend, run_file, options.expect_banner)
    if argv:
        check_executable(argv)
    recorded = (BackendIdentity.from_record(inputs.baseline_document.get("backend") or {})  # type: ignore[arg-type]
                if inputs.baseline_document is not None else None)
    if recorded is not None and recorded.name is not None:
        expect = True  # the baseline names a backend from its banner: wait for this one's before any query
    notes: list[str] = []
    identity: dict[str, object] = {}

    def on_started(banners: list[dict | None]) -> None:
        """Before any query: every worker is the same backend, and the one the baseline was recorded for."""
        identities = [BackendIdentity.of(banner, argv) for banner in banners]
        if any(other != identities[0] for other in identities[1:]):
            raise BaselineError(f"the {len(identities)} workers started different backends: "
                                + "; ".join(i.describe() for i in dict.fromkeys(identities)))
        identity["run"] = identities[0]
        if recorded is not None:
            check = check_identity(recorded, identities[0], str(inputs.baseline_path),  # type: ignore[arg-type]
                                   allow_change=options.allow_backend_change)
            notes.extend(refuse_if_different(check))
            identity["changed"] = any("--allow-backend-change" in note for note in check.notes)

    inputs, shard_record = _select_shard(inputs, options.shard)
    run_options = RunOptions(argv=argv, label=label, log_path=Path(options.log_path), expect_banner=expect,
                             k=options.k, query_timeout=options.query_timeout,
                             startup_timeout=options.startup_timeout,
                             # a shard may hold no query at all: nothing to warm up with
                             warmup=options.warmup if any(s.queries for s in inputs.query_sets) else 0,
                             repeats=options.repeats, condition=options.condition, workers=options.workers,
                             startup_limit=options.startup_limit, on_startup_progress=options.on_startup_progress,
                             on_started=on_started, max_window=options.max_window,
                             # what the policy gates is computed and kept (evidence figures always are)
                             metrics=tuple(m for m in inputs.policy.metrics if m not in evidence_metric_names()))
    Path(options.log_path).parent.mkdir(parents=True, exist_ok=True)
    drift: list[str] = []
    if run_file is not None:
        outcome = run_from_file(inputs.query_sets, run_options, Path(run_file))
    else:
        with guarded_temp_folder("retrieval-gate-corpus-") as corpus_dir:
            materialise_corpora(inputs.query_sets, Path(corpus_dir))
            corpus_files = corpus_fingerprints(Path(corpus_dir))
            start_workers = _start_workers(options)
            outcome = run_sets(inputs.query_sets, run_options, Path(corpus_dir), progress, start_workers)
            if start_workers is not None:
                outcome.provenance["executor"] = start_workers.provenance()
            drift += changed_files(corpus_files, corpus_fingerprints(Path(corpus_dir)), "materialised corpus file")
    if shard_record is not None:
        outcome.provenance["shard"] = shard_record
    drift += changed_files(inputs.fingerprints, fingerprint_files(inputs.fingerprints), "set file")
    error_text = str(outcome.error) if outcome.error else None
    error_code = outcome.error.exit_code if outcome.error else None
    if drift and outcome.error is None:
        error_text = "the run's inputs changed while it ran: " + "; ".join(drift) + " (nothing was gated)"
        error_code = EXIT_CONFIG
    gates = []
    # A shard is never gated alone (its query counts and latencies are a part): `merge` gates the whole.
    if error_code is None and inputs.baseline_entries is not None and shard_record is None:
        gates = check(outcome.results, inputs.baseline_entries, inputs.budgets_ms,
                      default_budget_ms=inputs.default_budget_ms, latency_gate=run_file is None,
                      known_contract_failures=options.known_contract_failures, policy=inputs.policy)
    what_if = None
    if options.what_if_min_score is not None:
        by_name = {s.name: s for s in inputs.query_sets}
        what_if = {r.name: what_if_min_score(r, by_name[r.name], options.what_if_min_score)
                   for r in outcome.results if r.queries}
    provenance = provenance_record(outcome.provenance)
    extra = dict(provenance.extra)
    extra["baseline"] = inputs.gated_against()
    extra["policy"] = inputs.policy.to_dict()
    if "run" in identity:
        extra["backend_identity"] = identity["run"].to_dict()  # type: ignore[attr-defined]
    if identity.get("changed"):
        extra["backend_change_allowed"] = True
    return Report(
        provenance=dataclasses.replace(provenance, extra=extra), sets=tuple(outcome.results), gates=tuple(gates),
        complete=outcome.complete and not drift, error=error_text,
        exit_code=verdict(error_code, gates), warnings=tuple(notes) + tuple(outcome.warnings), what_if=what_if,
        pooled=pooled_aggregate(outcome.results))


def load_inputs(sets: Sequence[str | Path], *, sets_dir: Path, offline: bool, budgets: str | Path | None,
                baseline: Path | None, k: int | None, policy: Path | None = None) -> GateInputs:
    """Load and check everything a run reads, so any error stops it before the adapter starts."""
    folders = find_sets([str(s) for s in sets], sets_dir)
    query_sets = tuple(load_set(folder, offline=offline) for folder in folders)
    fingerprints = fingerprint_files(set_files(query_sets))
    budgets_ms, default_budget_ms = load_budgets(Path(budgets) if budgets is not None else DEFAULT_BUDGETS,
                                                 required=budgets is not None)
    gate_policy = load_policy(policy, gated_metric_name)
    entries = document = None
    if baseline is not None:
        document = read_baseline(baseline)
        entries = {s.name: set_entry_for(document, s, str(baseline), k=k or s.k) for s in query_sets}
    return GateInputs(query_sets, budgets_ms, default_budget_ms, entries, gate_policy,
                      baseline if baseline is not None else None, document, fingerprints)


def gated_metric_name(name: str) -> str:
    """A gated metric's key: an exposed-evidence metric by its own name, any other through the measure registry."""
    return name if name in evidence_metric_names() else policy_metric_name(name)


def check_executable(argv: Sequence[str]) -> None:
    """An adapter command that does not exist or cannot run is a configuration error (exit 2), found
    before anything starts: the backend did not fail, it was never there."""
    program = argv[0]
    found = shutil.which(program) if os.sep not in program else (program if os.path.exists(program) else None)
    if found is None:
        raise UsageError(f"adapter command {program!r} not found" + ("" if os.sep in program else " on PATH"))
    if os.path.isdir(found) or not os.access(found, os.X_OK):
        raise UsageError(f"adapter command {program!r} is not executable (chmod +x it, or run it with its interpreter)")


@dataclass(frozen=True)
class BaselineUpdate:
    """A baseline about to be written from a report: the new document, what it replaces, the comparison."""

    path: Path
    document: Mapping[str, object]
    previous: Mapping[str, object] | None
    comparison: Comparison | None

    def report_with_previous(self, report: Report) -> Report:
        """The report carrying the replaced values (`previous_baseline`), recoverable without git."""
        if self.previous is None:
            return report
        replaced = {name: self.previous["sets"][name] for name in self.document["sets"]  # type: ignore[index,union-attr]
                    if name in self.previous["sets"]}  # type: ignore[operator]
        return dataclasses.replace(report, previous_baseline=replaced)


def prepare_baseline_update(report: Report, path: str | Path) -> BaselineUpdate:
    """The baseline a complete report would write to `path`, compared with the one there now.

    Raises BaselineError for an incomplete report (it can never become a baseline).
    """
    if not report.complete:
        raise BaselineError("refusing to write a baseline from an incomplete run")
    path = Path(path)
    new = build_baseline(list(report.sets), report.provenance.to_dict())
    previous = read_baseline(path) if path.exists() else None
    comparison = None
    if previous is not None:
        comparison = compare(run_view(previous, str(path)), run_view(new, "this run"))
    return BaselineUpdate(path, new, previous, comparison)


def write_baseline_update(update: BaselineUpdate) -> None:
    """Write the new baseline atomically; sets not in this run keep their previous entries."""
    write_baseline(update.path, dict(update.document))


def provenance_record(provenance: Mapping[str, object]) -> Provenance:
    """The typed provenance of a run from what the asking stage recorded."""
    backend = provenance.get("backend") or {}
    adapter = provenance.get("adapter") or {}
    known = {"harness_version", "started", "git_commit", "backend", "adapter", "condition", "metric_definitions",
             "settings", "sets", "machine", "duration_seconds", "asking_seconds", "nondeterministic_queries",
             "run_file"}
    return Provenance(
        harness_version=str(provenance.get("harness_version")), started=provenance.get("started"),  # type: ignore[arg-type]
        backend=Backend(str(backend.get("label")), tuple(str(a) for a in backend.get("argv") or ())),  # type: ignore[union-attr]
        adapter=AdapterStart(expect_banner=bool(adapter.get("expect_banner")), banner=adapter.get("banner"),  # type: ignore[union-attr]
                             startup_seconds=adapter.get("startup_seconds"),  # type: ignore[union-attr]
                             warmup_seconds=adapter.get("warmup_seconds"), log=adapter.get("log")),  # type: ignore[union-attr]
        git_commit=provenance.get("git_commit"), condition=provenance.get("condition"),  # type: ignore[arg-type]
        metric_definitions=provenance.get("metric_definitions"),  # type: ignore[arg-type]
        settings=provenance.get("settings") or {},  # type: ignore[arg-type]
        sets={name: SetSource(**entry) for name, entry in (provenance.get("sets") or {}).items()},  # type: ignore[union-attr]
        machine=provenance.get("machine") or {},  # type: ignore[arg-type]
        duration_seconds=provenance.get("duration_seconds"),  # type: ignore[arg-type]
        asking_seconds=provenance.get("asking_seconds"),  # type: ignore[arg-type]
        nondeterministic_queries=tuple(provenance.get("nondeterministic_queries") or ()),  # type: ignore[arg-type]
        run_file=provenance.get("run_file"),  # type: ignore[arg-type]
        extra={key: value for key, value in provenance.items() if key not in known})


def _backend(backend: str | Sequence[str] | None, run_file: str | Path | None,
             expect_banner: bool) -> tuple[list[str], str, bool]:
    """(argv, label, expect a banner): built-in aliases always print one."""
    if backend is not None and run_file is not None:
        raise UsageError("--adapter, --backend and --run-file are exclusive: give one source of rankings")
    if run_file is not None:
        return [], f"run-file {run_file}", False
    if backend is None or isinstance(backend, str):
        name = backend or DEFAULT_BACKEND
        return backend_argv(name), name, True
    argv = [str(arg) for arg in backend]
    if not argv:
        raise UsageError("backend: the adapter command is empty")
    return argv, " ".join(argv), expect_banner
