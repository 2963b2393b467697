"""harness.child against real processes: the stop sequence finishes whatever signals the harness gets meanwhile."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.process_helpers import alive, default_signals, wait_for

from harness import child as child_module
from harness.child import ChildProcess, StreamFailure, describe_exit, log_tail
from tests.conftest import FIXTURES as FIXTURES_DIR, REPO_ROOT

FIXTURES = FIXTURES_DIR
STUBBORN = FIXTURES / "adapters" / "stubborn.py"
STOP_DRIVER = FIXTURES / "harness_side" / "stop_driver.py"
REPO = REPO_ROOT








def stubborn(tmp_path: Path) -> tuple[ChildProcess, int, int]:
    """A started stubborn adapter (ignores stdin EOF and SIGTERM) and its pids, once both run."""
    pid_file = tmp_path / "pids"
    process = ChildProcess.spawn([sys.executable, str(STUBBORN), str(pid_file)], log_path=tmp_path / "log",
                                 stderr="thread")
    assert wait_for(pid_file.exists)
    adapter_pid, grandchild_pid = map(int, pid_file.read_text().split())
    return process, adapter_pid, grandchild_pid


class Alarm(Exception):
    pass


@pytest.fixture
def alarm_raises():
    """SIGALRM raises Alarm every time it fires (a real signal, like a second Ctrl-C)."""
    def handler(signum, frame):
        raise Alarm()
    previous = signal.signal(signal.SIGALRM, handler)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def test_a_signal_during_the_grace_still_kills_the_group_then_is_reraised(tmp_path, monkeypatch, alarm_raises):
    monkeypatch.setattr(child_module, "TERM_GRACE_SECONDS", 0.3)
    process, adapter_pid, grandchild_pid = stubborn(tmp_path)
    signal.setitimer(signal.ITIMER_REAL, 0.2)  # fires while stop waits out a 30 s grace
    with pytest.raises(Alarm):
        process.stop(30.0)
    assert wait_for(lambda: not alive(adapter_pid) and not alive(grandchild_pid), 5)
    assert process.stopped
    assert process.stop(30.0) == b""  # a later stop is harmless


def test_signals_raising_over_and_over_never_cut_the_kill(tmp_path, alarm_raises):
    process, adapter_pid, grandchild_pid = stubborn(tmp_path)
    # Every 20 ms, for the whole stop: the grace, the SIGTERM wait, the SIGKILL and the reaping.
    signal.setitimer(signal.ITIMER_REAL, 0.05, 0.02)
    with pytest.raises(Alarm):
        process.stop(30.0, 0.5)
    signal.setitimer(signal.ITIMER_REAL, 0)
    assert wait_for(lambda: not alive(adapter_pid) and not alive(grandchild_pid), 5)
    assert process.stopped


@pytest.mark.parametrize("signals, options", [
    ((signal.SIGINT, signal.SIGINT), []),            # Ctrl-C twice, each raising KeyboardInterrupt
    ((signal.SIGTERM, signal.SIGINT), []),
    ((signal.SIGINT, signal.SIGTERM), ["--interrupts"]),  # through harness.interrupts
], ids=["ctrl-c-twice", "term-then-int", "interrupts-module"])
def test_two_signals_to_the_harness_while_it_stops_a_hung_adapter(tmp_path, signals, options):
    pid_file = tmp_path / "pids"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    harness = subprocess.Popen([sys.executable, str(STOP_DRIVER), str(pid_file), *options], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               preexec_fn=default_signals, text=True)
    try:
        assert harness.stdout.readline() == "stopping\n"  # inside the 5 s stop grace now
        adapter_pid, grandchild_pid = map(int, pid_file.read_text().split())
        harness.send_signal(signals[0])
        time.sleep(0.3)  # the first cut the grace short: the second lands in the SIGTERM wait or later
        if harness.poll() is None:
            harness.send_signal(signals[1])
        harness.wait(timeout=20)
    finally:
        if harness.poll() is None:
            harness.kill()
    assert harness.returncode != 0
    assert wait_for(lambda: not alive(adapter_pid) and not alive(grandchild_pid), 5), "adapter left running"
    if options:
        assert harness.returncode == 128 + signals[0]
        assert harness.stderr.read() == f"interrupted: interrupted by {signal.Signals(signals[0]).name}\n"


def test_pending_and_read_line_report_eof(tmp_path):
    process = ChildProcess.spawn([sys.executable, "-c", "print('one'); print('two')"], log_path=tmp_path / "log",
                                 stderr="file")
    assert process.read_line(time.perf_counter() + 10) == b"one"
    assert process.read_line(time.perf_counter() + 10) == b"two"
    with pytest.raises(StreamFailure) as caught:
        process.read_line(time.perf_counter() + 10)
    assert caught.value.reason == StreamFailure.ENDED
    assert process.how_it_ended() == "adapter exited with status 0"
    process.stop(0.0)


def test_tool_mode_has_no_pipes_and_its_stderr_goes_to_the_log(tmp_path):
    log = tmp_path / "tool.log"
    process = ChildProcess.spawn([sys.executable, "-c", "import sys; sys.stderr.write('a\\rb\\nlast\\n'); sys.exit(3)"],
                                 log_path=log, stderr="file", talk=False)
    assert process.exit_status(10) == 3
    process.stop(0.0, 0.0)
    assert log_tail(log) == "b\nlast"  # the \r redraw collapsed


def test_exit_words():
    assert describe_exit(3) == "adapter exited with status 3"
    assert describe_exit(-signal.SIGKILL) == "adapter was killed by SIGKILL"
    assert describe_exit(-200) == "adapter was killed by signal 200"
