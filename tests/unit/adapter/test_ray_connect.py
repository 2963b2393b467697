"""The Ray executor's driver side without Ray: how a signal during Ray's connect is treated.

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
from harness.errors import Interrupted
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
