"""The Ray executor's driver side without Ray: how a signal during Ray's connect is treated, and how
a worker's replies come back as a stream of chunks.

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
from harness.adapter.protocol import Request, Response
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
    options = RunOptions(argv=["x"], log_path=Path(tmp_path / "log"))
    with contextlib.ExitStack() as stack:
        with pytest.raises(Interrupted):
            workers._connect(_FakeRay(Interrupted(signal.SIGINT)), options, stack)
        with pytest.raises(ray_executor.AdapterError, match="cannot join the Ray cluster at 127.0.0.1:1"):
            workers._connect(_FakeRay(ConnectionError("refused")), options, stack)


class _Clock:
    """time.perf_counter for the actor: moved on only by the fake adapter's answers."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _TimedAdapter:
    """An AdapterProcess stand-in: each query's id back after `latency` seconds of the clock; `fail_qid` fails."""

    def __init__(self, clock, latency, fail_qid=None, passages=None):
        self.clock, self.latency, self.fail_qid, self.passages = clock, latency, fail_qid, passages

    def ask(self, request):
        if request.qid == self.fail_qid:
            raise AdapterError(f"query {request.qid}: adapter exited", qid=request.qid, stderr_tail="tail")
        self.clock.now += self.latency
        return Response((request.qid,), passages=self.passages), self.latency


def _requests(count):
    return [Request("code", f"query {n}", 10, f"q{n}") for n in range(count)]


def _actor(monkeypatch, latency, fail_qid=None, passages=None):
    clock = _Clock()
    monkeypatch.setattr(ray_executor.time, "perf_counter", clock)
    actor = ray_executor._AdapterActor()
    actor.adapter = _TimedAdapter(clock, latency, fail_qid, passages)
    return actor


@pytest.mark.parametrize("latency, sizes", [(0.03, [4, 4, 2]), (0.5, [1] * 10), (0.0, [10])])
def test_the_actor_sends_its_replies_in_chunks_of_about_chunk_seconds(monkeypatch, latency, sizes):
    # 0.1 s of answering a chunk: 4 queries at 30 ms (the fourth passes it), 1 at 500 ms; instant answers, one chunk.
    chunks = list(_actor(monkeypatch, latency).ask(_requests(10), 0.1))
    assert [len(chunk) for chunk in chunks] == sizes
    assert [reply for chunk in chunks for reply in chunk] == [
        ("ok", Response((f"q{n}",)), latency) for n in range(10)]


def test_a_failure_ends_the_actors_stream_with_its_reply(monkeypatch):
    chunks = list(_actor(monkeypatch, 0.03, fail_qid="q5").ask(_requests(10), 0.1))
    replies = [reply for chunk in chunks for reply in chunk]
    assert [reply[0] for reply in replies] == ["ok"] * 5 + ["error"]
    assert replies[-1] == ("error", "query q5: adapter exited", "q5", "tail")


class _StreamingRay:
    """Ray's wait/get/kill over an actor whose `ask.remote` returns its chunks as a plain iterator
    (a ref is its value); `stalled` streams never have a next chunk ready."""

    class exceptions:
        GetTimeoutError = TimeoutError
        RayError = RuntimeError

    def __init__(self, stalled=False):
        self.stalled, self.killed, self.waits = stalled, [], []

    def wait(self, streams, timeout):
        self.waits.append(timeout)
        return ([], streams) if self.stalled else (streams, [])

    def get(self, ref, timeout):
        return ref

    def kill(self, actor, no_restart):
        self.killed.append(actor)


class _StreamingActor:
    def __init__(self, actor):
        self.actor, self.calls = actor, []
        self.ask = self  # actor.ask.remote(...)

    def remote(self, requests, seconds):
        self.calls.append(len(requests))
        return iter(self.actor.ask(requests, seconds))


def _worker(ray, actor, tmp_path):
    return ray_executor.RayWorker(ray, actor, 0, RunOptions(argv=["x"], log_path=Path(tmp_path / "log")),
                                  resources="cpus=1")


def test_the_driver_asks_every_request_in_one_call_and_yields_the_whole_replies_in_order(monkeypatch, tmp_path):
    actor = _StreamingActor(_actor(monkeypatch, 0.03, passages=((0, 27),)))
    replies = list(_worker(_StreamingRay(), actor, tmp_path).ask_stream(_requests(10)))
    assert actor.calls == [10]
    assert replies == [(Response((f"q{n}",), passages=((0, 27),)), 0.03) for n in range(10)]


def test_a_failure_in_the_stream_is_raised_after_the_replies_before_it(monkeypatch, tmp_path):
    stream = _worker(_StreamingRay(), _StreamingActor(_actor(monkeypatch, 0.03, fail_qid="q5")),
                     tmp_path).ask_stream(_requests(10))
    assert [next(stream)[0].ids[0] for _ in range(5)] == [f"q{n}" for n in range(5)]
    with pytest.raises(AdapterError, match="q5: adapter exited") as raised:
        next(stream)
    assert raised.value.qid == "q5" and raised.value.stderr_tail == "tail"


def test_a_stream_that_sends_nothing_in_time_names_the_worker_and_query_and_kills_the_actor(monkeypatch, tmp_path):
    ray = _StreamingRay(stalled=True)
    actor = _StreamingActor(_actor(monkeypatch, 0.03))
    worker = _worker(ray, actor, tmp_path)
    with pytest.raises(AdapterError, match=r"query q0: worker 1 \(ray actor\) sent no reply within") as raised:
        next(worker.ask_stream(_requests(10)))
    assert raised.value.qid == "q0" and ray.killed == [actor]
    # the wait allows one query's time-outs and Ray's grace past a chunk's seconds
    options = worker.options
    assert ray.waits == [pytest.approx(options.startup_timeout + options.query_timeout
                                       + ray_executor.RAY_GRACE_SECONDS + ray_executor.CHUNK_SECONDS)]
