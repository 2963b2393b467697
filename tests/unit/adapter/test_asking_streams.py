"""run_sets gives each worker one stream of requests over every set (harness.adapter.asking), so an
executor that batches (Ray) goes on answering across a set's end; workers are stand-ins, no process."""

import dataclasses
from pathlib import Path

from harness.adapter.asking import run_sets
from harness.adapter.options import RunOptions
from harness.adapter.protocol import Response
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
    options = RunOptions(argv=["x"], label="x", log_path=Path(tmp_path / "log"), workers=2, repeats=2)
    outcome = run_sets([tiny, other], options, tmp_path, start_workers=lambda options, corpus, stack: workers)
    assert outcome.error is None and outcome.complete
    for index, worker in enumerate(workers):
        mine = [query.qid for query in tiny.queries][index::2]
        # one stream per worker: every query of its shard twice in a row, the first set then the second
        assert worker.streams == [[(tiny.kind, qid, tiny.k) for qid in mine for _ in range(2)]
                                  + [(tiny.kind, qid, 5) for qid in mine for _ in range(2)]]
    for result in outcome.results:  # answers land in their own set, in set order
        assert [row.qid for row in result.queries] == [query.qid for query in tiny.queries]
        assert all(row.ids == (row.qid,) for row in result.queries)
