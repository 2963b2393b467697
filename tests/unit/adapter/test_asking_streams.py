"""The asking stage (harness.adapter.asking `ask_sets`) with stand-in workers, no process: each worker gets one
stream of requests over every set, so an executor that batches (Ray) goes on answering across a set's end; the
workers' banners come back from start() before any query is asked."""

import dataclasses
from pathlib import Path

import pytest

from harness.adapter.asking import ask_sets
from harness.adapter.options import RunOptions
from harness.adapter.protocol import Response
from harness.errors import AdapterError, Interrupted, UsageError
from harness.sets.loader import load_set
from tests.conftest import TINY_SET


class _StreamingWorker:
    """Records each `ask_stream` call's requests; answers every request with its own qid."""

    banner, startup_seconds = None, None

    def __init__(self):
        self.streams = []

    def ask(self, request):
        raise AssertionError("the run's queries go through ask_stream")

    def ask_stream(self, requests):
        self.streams.append([(request.kind, request.qid, request.k) for request in requests])
        for request in requests:
            yield Response((request.qid,)), 0.001


def test_each_worker_gets_one_stream_of_its_shard_of_every_set_in_set_order(tmp_path):
    tiny = load_set(TINY_SET)
    other = dataclasses.replace(tiny, name="tiny-again", k=5)
    workers = [_StreamingWorker(), _StreamingWorker()]
    options = RunOptions(argv=["x"], log_path=Path(tmp_path / "log"), workers=2, repeats=2)
    with ask_sets([tiny, other], options, tmp_path, start_workers=lambda options, corpus, stack: workers) as run:
        assert run.start().banners == (None, None) and workers[0].streams == []  # nothing asked yet
        run.ask()
    outcome = run.outcome
    assert outcome.error is None and outcome.complete
    for index, worker in enumerate(workers):
        mine = [query.qid for query in tiny.queries][index::2]
        # one stream per worker: every query of its shard twice in a row, the first set then the second
        assert worker.streams == [[(tiny.kind, qid, tiny.k) for qid in mine for _ in range(2)]
                                  + [(tiny.kind, qid, 5) for qid in mine for _ in range(2)]]
    for result in outcome.results:  # answers land in their own set, in set order
        assert [row.qid for row in result.queries] == [query.qid for query in tiny.queries]
        assert all(row.ids == (row.qid,) for row in result.queries)


class _NamedWorker(_StreamingWorker):
    def __init__(self, name):
        super().__init__()
        self.banner = {"ready": True, "name": name}


def test_start_returns_the_banners_and_a_refusal_after_it_asks_nothing_and_propagates(tmp_path):
    """The API checks who answers between start() and ask(): what it raises (a UsageError here, as the
    identity check raises a HarnessError) stops the run before any query and reaches the caller."""
    tiny = load_set(TINY_SET)
    workers = [_NamedWorker("a"), _NamedWorker("b")]
    options = RunOptions(argv=["x"], log_path=Path(tmp_path / "log"), workers=2)
    with pytest.raises(UsageError, match="not the recorded backend"):
        with ask_sets([tiny], options, tmp_path, start_workers=lambda options, corpus, stack: workers) as run:
            banners = run.start().banners
            assert [banner["name"] for banner in banners] == ["a", "b"]
            raise UsageError("not the recorded backend")
    assert [worker.streams for worker in workers] == [[], []]


@pytest.mark.parametrize("failure", [AdapterError("the adapter crashed at start"), KeyboardInterrupt()],
                         ids=["backend failure", "interrupt"])
def test_a_failed_start_is_the_outcome_not_an_exception_and_nothing_after_it_runs(tmp_path, failure):
    tiny = load_set(TINY_SET)

    def start_workers(options, corpus, stack):
        raise failure

    after_start = []
    with ask_sets([tiny], RunOptions(argv=["x"], log_path=Path(tmp_path / "log")), tmp_path, start_workers) as run:
        run.start()
        after_start.append("reached")
    assert after_start == []
    error = run.outcome.error
    assert (error is failure) if isinstance(failure, AdapterError) else (isinstance(error, Interrupted)
                                                                         and error.exit_code == 130)
    # the set not reached is present, with no answer: 0 of its 7 queries
    assert [(r.name, len(r.queries), r.query_count) for r in run.outcome.results] == [("tiny", 0, 7)]
    assert not run.outcome.complete


class _TimedWorker:
    """Answers every request with its own qid, taking `seconds(request)` by its own clock."""

    banner, startup_seconds = None, None

    def __init__(self, seconds):
        self.seconds = seconds

    def ask(self, request):
        return Response((request.qid,)), self.seconds(request)


def test_paired_latency_keeps_each_sets_own_baseline_latency_where_sets_share_qids(tmp_path):
    # qids are unique within a set only: a second set asking the same qids must not pool the baseline's
    # latencies of the first set's queries into its own medians
    tiny = load_set(TINY_SET)
    other = dataclasses.replace(tiny, name="tiny-again", kind="other-kind")
    candidate = _TimedWorker(lambda request: 0.001)
    base = _TimedWorker(lambda request: 0.010 if request.kind == tiny.kind else 0.030)
    options = RunOptions(argv=["x"], log_path=Path(tmp_path / "log"), repeats=3)
    with ask_sets([tiny, other], options, tmp_path, start_workers=lambda options, corpus, stack: [candidate]) as run:
        run.start()
        run.base = base  # the baseline's backend, timed beside the run's (started by start() when configured)
        run.ask()
    assert run.outcome.error is None
    first, second = run.outcome.results
    assert {row.base_latency_seconds for row in first.queries} == {0.010}
    assert {row.base_latency_seconds for row in second.queries} == {0.030}
