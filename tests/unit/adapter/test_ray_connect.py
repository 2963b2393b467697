"""The Ray executor's driver side without Ray: how a signal during Ray's connect is treated, and how
a worker's requests are cut into batches.

With a real Ray: tests/contract/test_ray_executor.py and tests/contract/test_ray_cluster.py.
"""

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from harness.adapter import ray_executor
from harness.adapter.options import RunOptions
from harness.adapter.protocol import Request
from harness.errors import AdapterError, Interrupted
from harness.interrupts import signals_raise_interrupted


@pytest.fixture
def sigint_handled():
    """SIGINT handled as in a terminal, even when pytest runs as a shell's background job (which
    starts with SIGINT ignored, and the run's handlers leave an ignored signal ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_sigint_during_the_connect_to_our_own_instance_is_held_then_raised(sigint_handled):
    with signals_raise_interrupted():
        with pytest.raises(Interrupted) as raised:
            with ray_executor.signals_deferred(hold=True):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler runs here: held, not raised inside Ray's code
                reached_the_end = True
        assert reached_the_end and raised.value.exit_code == 130


def test_without_holding_the_runs_handler_raises_at_once_and_stays_installed():
    with signals_raise_interrupted():
        handler = signal.getsignal(signal.SIGINT)
        with pytest.raises(Interrupted):
            with ray_executor.signals_deferred(hold=False):
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # as ray.init may install its own
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
        assert signal.getsignal(signal.SIGINT) is handler  # restored: the run's, not Ray's


class _FakeRay:
    """ray.init raising what a signal handler raised inside it."""

    def __init__(self, error):
        self.error = error

    def is_initialized(self):
        return False

    def init(self, **settings):
        raise self.error


def test_an_interrupt_out_of_rays_connect_stays_an_interrupt_not_a_backend_failure(tmp_path):
    workers = ray_executor.RayWorkers.__new__(ray_executor.RayWorkers)
    workers.address, workers.worker_cpus = "127.0.0.1:1", 1.0
    options = RunOptions(argv=["x"], label="x", log_path=Path(tmp_path / "log"))
    with contextlib.ExitStack() as stack:
        with pytest.raises(Interrupted):
            workers._connect(_FakeRay(Interrupted(signal.SIGINT)), options, stack)
        with pytest.raises(ray_executor.AdapterError, match="cannot join the Ray cluster at 127.0.0.1:1"):
            workers._connect(_FakeRay(ConnectionError("refused")), options, stack)


class _ReplyingActor:
    """An actor's `ask.remote(batch)` answered at once: each query's id back, at a fixed latency (no clock)."""

    def __init__(self, latency: float, fail_qid: str | None = None):
        self.latency, self.fail_qid, self.batches = latency, fail_qid, []
        self.ask = self  # actor.ask.remote(...)

    def remote(self, batch):
        self.batches.append([request[3] for request in batch])
        replies = []
        for _, _, _, qid in batch:
            if qid == self.fail_qid:
                replies.append(("error", f"query {qid}: adapter exited", qid, ""))
                break
            replies.append(("ok", ([qid], None, None), self.latency))
        return replies


class _RefIsValue:
    """ray.get(ref) where the ref is the value itself."""

    class exceptions:
        GetTimeoutError = TimeoutError
        RayError = RuntimeError

    def get(self, ref, timeout):
        return ref


def _stream(actor, count, tmp_path):
    worker = ray_executor.RayWorker(_RefIsValue(), actor, 0, RunOptions(argv=["x"], label="x",
                                    log_path=Path(tmp_path / "log")), resources="cpus=1")
    return worker.ask_stream([Request("code", f"query {n}", 10, f"q{n}") for n in range(count)])


@pytest.mark.parametrize("latency, later", [(0.01, 10), (0.5, 1), (0.0, ray_executor.MAX_BATCH_QUERIES)])
def test_batches_hold_about_batch_seconds_of_the_latencies_before_them(tmp_path, latency, later):
    # 0.1 s of answering: 10 queries at 10 ms, 1 at 500 ms; instant answers get the largest batch.
    # The first BATCHES_IN_FLIGHT + 1 batches are sent before any reply is read.
    actor = _ReplyingActor(latency)
    first = ray_executor.FIRST_BATCH_QUERIES
    replies = list(_stream(actor, 3 * first + 25, tmp_path))
    assert [response.ids[0] for response, _ in replies] == [f"q{n}" for n in range(3 * first + 25)]
    assert {seconds for _, seconds in replies} == {latency}
    sizes = [len(batch) for batch in actor.batches]
    assert sizes[:3] == [first] * 3
    assert sizes[3:] == ([later] * (25 // later) + ([25 % later] if 25 % later else []) if later < 25 else [25])


def test_a_failure_in_a_batch_is_raised_after_the_replies_before_it(tmp_path):
    actor = _ReplyingActor(0.01, fail_qid="q40")
    stream = _stream(actor, 100, tmp_path)
    answered = [next(stream)[0].ids[0] for _ in range(40)]
    assert answered == [f"q{n}" for n in range(40)]
    with pytest.raises(AdapterError, match="q40: adapter exited"):
        next(stream)
