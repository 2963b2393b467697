"""Signals: harness.interrupts against real signals to this process; SIGINT / SIGTERM / SIGHUP during a
real run (adapter group stopped, temp corpus folder removed, partial report, 130 / 143 / 129, nothing
half-written)."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from harness.errors import Interrupted
from harness.interrupts import HANDLED_SIGNALS, signals_raise_interrupted
from harness.sets.loader import load_set
from tests.process_helpers import alive, default_signals, wait_for
from tests.conftest import SCRIPTED_ADAPTER, TINY_SET

TINY = load_set(TINY_SET)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_signal_mid_run(tmp_path, signum, code):
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({q.query: list(q.relevant) for q in TINY.queries}))
    baseline = tmp_path / "baseline.json"
    out = tmp_path / "report.json"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, SCRIPTED_ANSWERS=str(answers), TMPDIR=str(scratch))
    argv = [sys.executable, "-m", "harness", "--set", str(TINY_SET), "--update-baseline", "--yes",
            "--baseline", str(baseline), "--out", str(out), "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)]
    subprocess.run(argv, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=300, check=True)
    precious = baseline.read_bytes()  # the baseline the interrupted re-baseline would replace: must survive untouched
    out.unlink()
    (tmp_path / "report.adapter.log").unlink()  # the interrupted run's log alone says when its adapter is up
    harness = subprocess.Popen(argv, env={**env, "SCRIPTED_SLEEP_MS": "400"}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, preexec_fn=default_signals)
    log = tmp_path / "report.adapter.log"
    assert wait_for(lambda: log.exists() and "pid=" in log.read_text())
    adapter_pid = int(re.search(r"pid=(\d+)", log.read_text()).group(1))
    time.sleep(0.6)  # let a query or two complete
    harness.send_signal(signum)
    stdout, stderr = harness.communicate(timeout=30)
    assert harness.returncode == code, stderr
    assert f"interrupted by {signal.Signals(signum).name}" in stderr
    report = json.loads(out.read_text())
    assert report["complete"] is False and report["exit_code"] == code
    assert wait_for(lambda: not alive(adapter_pid), 10), "adapter left running"
    assert baseline.read_bytes() == precious
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp files left
    assert list(scratch.iterdir()) == []  # the materialised corpus folder is gone


# -- harness.interrupts ---------------------------------------------------------------------------


@pytest.fixture
def default_dispositions():
    """Python's own start-up dispositions for this process, even when the suite runs as a
    background job (SIGINT and SIGHUP then arrive ignored); the previous ones restored after."""
    previous = {signum: signal.getsignal(signum) for signum in HANDLED_SIGNALS}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def deliver(signum: int) -> None:
    """Send `signum` to ourselves and give the interpreter a moment to run the handler."""
    os.kill(os.getpid(), signum)
    for _ in range(100):
        time.sleep(0.001)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_each_signal_raises_interrupted_with_its_exit_code(default_dispositions, signum, code):
    with pytest.raises(Interrupted) as caught:
        with signals_raise_interrupted():
            deliver(signum)
    assert caught.value.exit_code == code
    assert str(caught.value) == f"interrupted by {signal.Signals(signum).name}"


def test_previous_handlers_are_restored(default_dispositions):
    before = {signum: signal.getsignal(signum) for signum in HANDLED_SIGNALS}
    with signals_raise_interrupted():
        assert all(signal.getsignal(signum) is not before[signum] for signum in HANDLED_SIGNALS)
    assert {signum: signal.getsignal(signum) for signum in HANDLED_SIGNALS} == before


def test_a_second_signal_does_not_cut_the_cleanup(default_dispositions):
    cleaned = []
    with pytest.raises(Interrupted) as caught:
        with signals_raise_interrupted():
            try:
                deliver(signal.SIGTERM)
            finally:
                deliver(signal.SIGINT)  # would raise in the middle of the cleanup
                cleaned.append(True)
    assert cleaned == [True]
    assert caught.value.exit_code == 143  # the first signal decides


def test_an_ignored_signal_stays_ignored(default_dispositions):
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals_raise_interrupted():
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            deliver(signal.SIGHUP)  # nohup's promise is kept
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
