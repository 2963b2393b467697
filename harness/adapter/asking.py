"""Ask every query of the sets over the run's adapter workers (or read a run file): warm up, ask, time, evaluate."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from harness.errors import AdapterError, HarnessError, Interrupted, ProtocolError, UsageError
from harness.scoring.evaluate import Answer, evaluate_set, ranking_change, with_base_latency
from harness.scoring.metrics import trec_eval_order
from harness.text import plural, shortlist
from harness.adapter.protocol import Request, Response, banner_index_bytes
from harness.measured import Latency, Resources
from harness.records import QuerySet, SetResult
from harness.adapter.driver import AdapterProcess
from harness.adapter.options import RunOptions
from harness.adapter.placement import pinned
from harness.adapter.startup import CORPUS_DIR_ENV
from harness.adapter.windows import check_windows
from harness.sets.trec_input import Run, missing_from_run, read_run, run_scores, unknown_in_run

Progress = Callable[[str, int, int], None]  # (set name, queries answered, queries in the set)


@dataclass
class RunOutcome:
    """What asking produced: each set's results, and the facts of the run a report's provenance records."""

    results: list[SetResult]
    started: str  # UTC, ISO 8601 to the second
    error: HarnessError | None = None  # AdapterError, or Interrupted by a signal
    workers: int = 1
    banner: dict | None = None
    executor: dict[str, object] | None = None  # provenance.executor (Ray's record); None: local processes
    startup_seconds: float | None = None
    warmup_seconds: float | None = None
    asking_seconds: float | None = None
    duration_seconds: float | None = None
    nondeterministic: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tied_order_changed: list[str] = field(default_factory=list)  # `--repeats`: only tied documents moved
    placement: str | None = None  # paired latency: where both adapters ran ("cpu 0", or "unpinned")
    base_banner: dict | None = None  # paired latency: the baseline's adapter's banner

    def note_change(self, set_name: str, qid: str, change: str | None) -> None:
        """Record what a query's repeats changed (`_answer`): its ranking, or only the order of tied documents."""
        if change == "ranking":
            self.nondeterministic.append(f"{set_name}/{qid}")
        elif change == "tied":
            self.tied_order_changed.append(f"{set_name}/{qid}")

    @property
    def complete(self) -> bool:
        return self.error is None and all(r.complete for r in self.results)


@dataclass(frozen=True)
class Started:
    """The run's workers, started, before any query is timed: each one's ready banner (None for an
    adapter that printed none), in worker order; the caller checks who answers from these."""

    banners: tuple[dict[str, object] | None, ...]


@dataclass
class AskingRun:
    """One run's workers between their start and their stop (`ask_sets`): `start()`, then `ask()`."""

    query_sets: Sequence[QuerySet]
    options: RunOptions
    corpus_dir: Path
    start_workers: StartWorkers
    stack: contextlib.ExitStack  # the workers' stop: the run's end
    outcome: RunOutcome
    pending: list[QuerySet]  # the sets not asked yet: a run cut short reports them unanswered
    workers: Sequence[Worker] = ()
    base: AdapterProcess | None = None  # the baseline's backend, timed beside the run's (`baseline_adapter`)

    def start(self) -> Started:
        """Start the workers and return their banners. A banner not awaited (`expect_banner` off) shows
        with the first answer: with `identify_first`, one untimed query each shows it first."""
        options = self.options
        if options.baseline_adapter:  # paired latency: both adapters inherit the one CPU this thread is pinned to
            cpu = self.stack.enter_context(pinned())
            self.outcome.placement = f"cpu {cpu}" if cpu is not None else "unpinned"
        self.workers = self.start_workers(options, self.corpus_dir, self.stack)
        if options.baseline_adapter:
            self.base = self.stack.enter_context(AdapterProcess(
                list(options.baseline_adapter), log_path=options.baseline_log(),
                env={CORPUS_DIR_ENV: str(self.corpus_dir)}, startup_timeout=options.startup_timeout,
                query_timeout=options.query_timeout, startup_limit=options.startup_limit,
                cwd=options.baseline_adapter_folder))
        if options.identify_first and not options.expect_banner and any(s.queries for s in self.query_sets):
            for worker in self.workers:
                _warm_up(worker, self.query_sets, dataclasses.replace(options, warmup=1))
        return Started(tuple(worker.banner for worker in self.workers))

    def ask(self, progress: Progress | None = None) -> None:
        """Warm up, then ask every query of every set, each set evaluated as it ends.

        Paired latency (`base`): the run's one adapter and the baseline's asked each request in turn, in ABBA
        order (`_paired_replies`). Both warm up on at least one query (a first query must not pay either's
        start-up). Metrics are the run's answers'; of the baseline's answers only the latency is kept
        (`QueryResult.base_latency_seconds`, the median over `repeats` as the run's).
        """
        options, adapters, outcome, base = self.options, self.workers, self.outcome, self.base
        base_seconds: dict[str, list[float]] = {}  # paired latency: qid -> the baseline's seconds per repeat
        if base is not None:
            warm = dataclasses.replace(options, warmup=max(1, options.warmup))
            outcome.warmup_seconds = max(_warm_up(adapters[0], self.query_sets, warm),
                                         _warm_up(base, self.query_sets, warm))
            streams = [_paired_replies(adapters[0], base, _requests(self.query_sets, 0, 1, options), base_seconds)]
        else:
            outcome.warmup_seconds = max(_warm_up(adapter, self.query_sets, options) for adapter in adapters)
            # One stream of replies per worker over every set, so a Ray actor goes on answering
            # the next set while this one is evaluated (no round trip where each set starts).
            streams = [_replies(adapter, _requests(self.query_sets, worker, len(adapters), options))
                       for worker, adapter in enumerate(adapters)]
        asking_started = time.monotonic()
        while self.pending:
            query_set = self.pending[0]
            answers: dict[str, Answer] = {}
            try:
                _ask_set(adapters, streams, query_set, options, answers, outcome, progress)
            finally:
                result = evaluate_set(query_set, answers, options.k or query_set.k, options.metrics)
                if base is not None:
                    result = with_base_latency(result, {q.qid: statistics.median(base_seconds[q.qid])
                                                        for q in result.queries})
                    # qids are unique within a set only; the stream has asked nothing of the next set yet
                    base_seconds.clear()
                outcome.results.append(result)
                self.pending.pop(0)
        outcome.asking_seconds = round(time.monotonic() - asking_started, 6)
        outcome.banner = adapters[0].banner
        startups = [a.startup_seconds for a in adapters if a.startup_seconds is not None]
        outcome.startup_seconds = max(startups) if startups else None
        if base is not None:
            outcome.base_banner = base.banner


def _paired_replies(candidate: Worker, base: AdapterProcess, requests: list[Request],
                    base_seconds: dict[str, list[float]]) -> Iterator[tuple[Response, float]]:
    """The run's (response, latency) per request, each request asked of both adapters in ABBA order (request 0:
    run, base; request 1: base, run; ...), so drift and the cost of going first fall on both alike; the
    baseline's latency is appended to `base_seconds[qid]`."""
    for turn, request in enumerate(requests):
        seconds = base_seconds.setdefault(request.qid or "", [])
        if turn % 2 == 0:
            reply = candidate.ask(request)
            seconds.append(base.ask(request)[1])
        else:
            seconds.append(base.ask(request)[1])
            reply = candidate.ask(request)
        yield reply


@contextlib.contextmanager
def ask_sets(query_sets: Sequence[QuerySet], options: RunOptions, corpus_dir: Path,
             start_workers: StartWorkers | None = None) -> Iterator[AskingRun]:
    """The run's workers, asked in two steps so the caller checks who answers before any query:
    `run.start()` returns their banners (raise then: the workers stop, nothing is asked), `run.ask()`.

    A backend failure (AdapterError) or an interrupt in the block is not raised: the workers stop
    and `run.outcome.error` holds it, with what was answered (sets not reached: no answers).
    With `workers` > 1, that many adapters answer disjoint shards of each set at once (query i to
    worker i mod N), put back in set order; latencies are then measured under concurrency. No
    more workers start than the largest set has queries (a warning says so): one never asked
    would leave its banner unread. `start_workers` (default `options.executor`'s: `local_workers`
    or harness.adapter.ray_executor's) starts them inside the run's ExitStack.
    """
    largest = max((len(query_set.queries) for query_set in query_sets), default=0)
    workers = max(1, min(options.workers, largest))
    outcome = RunOutcome([], _now(), workers=workers)
    if workers < options.workers:
        outcome.warnings.append(f"--workers {options.workers}: the largest set has {workers} queries, so {workers} "
                                f"adapter{'s' if workers != 1 else ''} started")
    executor = None  # the Ray executor's starter, which records where its workers ran
    if start_workers is None and options.executor == "ray":
        from harness.adapter import ray_executor  # optional extra [ray]: imported only when asked for
        executor = ray_executor.RayWorkers(address=options.ray_address, worker_cpus=options.worker_cpus,
                                           worker_gpus=options.worker_gpus)
    started = time.monotonic()
    run: AskingRun | None = None
    try:
        with contextlib.ExitStack() as stack:
            run = AskingRun(query_sets, dataclasses.replace(options, workers=workers), corpus_dir,
                            start_workers or executor or local_workers, stack, outcome, list(query_sets))
            yield run
    except KeyboardInterrupt:
        outcome.error = Interrupted(signal.SIGINT)
    except (AdapterError, Interrupted) as error:
        outcome.error = error
    for query_set in run.pending if run is not None else query_sets:  # a run cut short: unanswered
        outcome.results.append(evaluate_set(query_set, {}, options.k or query_set.k, options.metrics))
    outcome.duration_seconds = round(time.monotonic() - started, 3)
    resources = run_resources(outcome, run.workers if run is not None else ())
    if resources.measured:  # every worker stopped: their last look at memory is taken
        outcome.results = [dataclasses.replace(result, resources=resources) for result in outcome.results]
    outcome.warnings += tied_warning(outcome.tied_order_changed)
    if executor is not None:
        outcome.executor = executor.provenance()
        outcome.warnings += executor.warnings()


def run_resources(outcome: RunOutcome, workers: Sequence[Worker]) -> Resources:
    """What the run's adapter cost (docs/gate.md, "Resource budgets"): start-up seconds to the banner and the
    peak RSS of one worker's process group (with several workers, the largest of each), the index bytes the
    first banner reported (a Ray actor measures its adapter on its node and sends the peak back as it stops)."""
    peaks = [peak for peak in (getattr(worker, "peak_rss_mib", None) for worker in workers) if peak is not None]
    return Resources(startup_seconds=None if outcome.startup_seconds is None else round(outcome.startup_seconds, 3),
                     peak_rss_mib=max(peaks) if peaks else None, index_bytes=banner_index_bytes(outcome.banner))


def tied_warning(tied: Sequence[str]) -> list[str]:
    """The warning for queries whose repeats reordered tied documents (empty when there are none)."""
    if not tied:
        return []
    return [f"--repeats: {plural(len(tied), 'query', 'queries')} came back with tied documents in "
            f"another order (their scores do not fix the order; metrics use the first answer): {shortlist(tied)}"]


class Worker(Protocol):
    """What the run needs of a started worker (an AdapterProcess, a Ray actor's handle): `ask` times one
    request; optionally `ask_stream(requests)` yields (Response, latency_seconds) in request order,
    raising at the first failure after the replies before it (Ray: no round trip per query)."""

    argv: list[str]
    banner: dict | None
    startup_seconds: float | None

    def ask(self, request: Request) -> tuple[Response, float]: ...


# The executor seam: (options, corpus_dir, stack) -> `options.workers` started workers, each
# entered into `stack` (stopped when the run ends).
StartWorkers = Callable[[RunOptions, Path, contextlib.ExitStack], Sequence[Worker]]


def local_workers(options: RunOptions, corpus_dir: Path, stack: contextlib.ExitStack) -> list[AdapterProcess]:
    """`options.workers` adapter processes on this machine, reading the corpora in `corpus_dir`."""
    env = {CORPUS_DIR_ENV: str(corpus_dir)}
    return [stack.enter_context(AdapterProcess(
        list(options.argv), log_path=options.worker_log(index), env=env,
        expect_banner=options.expect_banner, startup_timeout=options.startup_timeout,
        query_timeout=options.query_timeout, startup_limit=options.startup_limit,
        on_progress=options.on_startup_progress, cwd=options.adapter_folder)) for index in range(options.workers)]


def run_from_file(query_sets: Sequence[QuerySet], options: RunOptions, run_path: Path) -> RunOutcome:
    """Evaluate a precomputed TREC run: no adapter, so no latency (the latency gate is skipped).

    A run none of whose query ids is a query of the sets raises UsageError (exit 2); a partial
    match warns with counts.
    """
    run = read_run(run_path)
    missing_by_set = {query_set.name: missing_from_run(run, query_set) for query_set in query_sets}
    if run and all(len(missing_by_set[s.name]) == len(s.queries) for s in query_sets):
        # A run of another set would score every query as empty: a configuration error, not a result.
        names = ", ".join(s.name for s in query_sets)
        raise UsageError(f"{run_path}: none of its {len(run)} query ids is a query of {names} "
                         f"(first: {sorted(run)[0]!r}); is it the run of another set?")
    results = []
    warnings = ["latency gates skipped: the rankings come from a run file, not a timed adapter"]
    for query_set in query_sets:
        k = options.k or query_set.k
        missing = missing_by_set[query_set.name]
        if missing:
            warnings.append(f"{run_path}: {len(missing)} queries of set {query_set.name} have no ranking "
                            f"(scored as empty): {shortlist(missing)}")
        result = evaluate_set(query_set, answers_from_run(run, query_set, k), k, options.metrics)
        results.append(dataclasses.replace(result, latency=Latency()))
    unknown = unknown_in_run(run, query_sets)
    if unknown:
        warnings.append(f"{run_path}: {len(unknown)} query ids match no query of the sets: "
                        f"{shortlist(unknown)}")
    return RunOutcome(results, _now(), warnings=warnings)


def answers_from_run(run: Run, query_set: QuerySet, k: int) -> dict[str, Answer]:
    """An Answer per query of `query_set` from a run read by `read_run`, for `--run-file`.

    A query is found under `SET:QID` first, then under its bare qid. Ids are in trec_eval's
    order of the run's scores (`trec_eval_order`), cut at k, with those scores. A query missing
    from the run gets an empty answer (`missing_from_run` warns about them). Latency is 0.0:
    nothing was timed, so latency gates do not apply.
    """
    answers: dict[str, Answer] = {}
    for query in query_set.queries:
        scores = run_scores(run, query_set.name, query.qid) or {}
        top = trec_eval_order(scores)[:k]
        answers[query.qid] = Answer(ids=tuple(top), scores=tuple(scores[doc_id] for doc_id in top), latency_seconds=0.0)
    return answers


def _requests(query_sets: Sequence[QuerySet], worker: int, workers: int, options: RunOptions) -> list[Request]:
    """Worker `worker`'s requests over every set, in set order: its shard (query i goes to worker
    i mod N) of each set, each query `repeats` times in a row."""
    return [Request(query_set.kind, query.query, options.k or query_set.k, query.qid)
            for query_set in query_sets for query in query_set.queries[worker::workers]
            for _ in range(options.repeats)]


def _ask_set(adapters: Sequence[Worker], streams: list[Iterator[tuple[Response, float]]], query_set: QuerySet,
             options: RunOptions, answers: dict[str, Answer], outcome: RunOutcome, progress: Progress | None) -> None:
    """Fill `answers` (qid -> Answer) from each worker's stream (`_requests`' order), and `outcome`'s
    queries whose repeats changed; raise the first AdapterError after every shard has stopped."""
    total = len(query_set.queries)
    lock = threading.Lock()
    lengths = {doc.id: len(doc.text) for doc in query_set.documents}  # for the passages' bounds

    errors: list[BaseException] = []

    def shard(worker: int) -> None:
        adapter, replies = adapters[worker], streams[worker]
        try:
            for query in query_set.queries[worker::len(adapters)]:
                answer, change = _checked_answer(adapter, [next(replies) for _ in range(options.repeats)], query.qid,
                                                 lengths, options)
                with lock:
                    answers[query.qid] = answer
                    outcome.note_change(query_set.name, query.qid, change)
                    if progress:
                        progress(query_set.name, len(answers), total)
        except BaseException as error:  # raised again below, by the calling thread
            errors.append(error)

    if len(adapters) == 1:
        shard(0)
    else:
        threads = [threading.Thread(target=shard, args=(worker,), daemon=True) for worker in range(len(adapters))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]


def _warm_up(adapter: Worker, query_sets: Sequence[QuerySet], options: RunOptions) -> float:
    """Ask the first `warmup` queries (cycling through all sets) untimed; return seconds spent."""
    if options.warmup <= 0:
        return 0.0
    pool = _requests(query_sets, 0, 1, dataclasses.replace(options, repeats=1))
    start = time.perf_counter()
    for index in range(options.warmup):
        adapter.ask(pool[index % len(pool)])
    return round(time.perf_counter() - start, 6)


def _replies(adapter: Worker, requests: list[Request]) -> Iterator[tuple[Response, float]]:
    """(response, latency) per request, in order: through the worker's `ask_stream` when it has one (a
    Ray actor takes them in one call and streams its replies, harness.adapter.ray_executor), else one `ask` at a time."""
    stream = getattr(adapter, "ask_stream", None)
    return stream(requests) if stream is not None else (adapter.ask(request) for request in requests)


def _checked_answer(adapter: Worker, replies: Sequence[tuple[Response, float]], qid: str, lengths: Mapping[str, int],
                    options: RunOptions) -> tuple[Answer, str | None]:
    """`_answer` of one query's replies, its passages checked against the documents' lengths: a window out of
    bounds is the adapter's protocol error, named with its command."""
    answer, change = _answer(replies)
    try:
        check_windows(answer.ids, answer.passages, lengths, options.max_window, qid)
    except ProtocolError as exc:
        raise AdapterError(f"{exc} [adapter: {' '.join(adapter.argv)}]", argv=adapter.argv, qid=qid) from None
    return answer, change


def _answer(replies: Sequence[tuple[Response, float]]) -> tuple[Answer, str | None]:
    """One query's `repeats` replies: latency is the median; ids from the first answer.

    The change seen across the repeats: None, "tied" (only documents the first answer scored
    equally moved: the scores allow either order) or "ranking" (nondeterministic).
    """
    (first, _), *again = replies
    latencies = [latency for _, latency in replies]
    change: str | None = None
    for response, _ in again:
        if change != "ranking":
            change = ranking_change(first.ids, first.scores, response.ids) or change
    return Answer(ids=first.ids, scores=first.scores, latency_seconds=statistics.median(latencies),
                  passages=first.passages), change


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def machine() -> dict[str, object]:
    """Where a run asked: enough to tell two machines' latencies apart."""
    return {"platform": platform.platform(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "python": sys.version.split()[0]}


def git_commit() -> str | None:
    try:
        completed = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout.strip() or None if completed.returncode == 0 else None
