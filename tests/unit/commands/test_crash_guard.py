"""harness/commands/crash_guard.py: which failures are the environment's (exit 2) and where a run's files go."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from harness.commands import crash_guard


def test_a_bug_s_oserror_is_not_blamed_on_stdout(capfd):
    # capfd: stdout is a real, writable descriptor here
    assert crash_guard.stdout_refused(OSError(errno.ENOENT, "No such file or directory")) is None
    assert crash_guard.stdout_refused(OSError(errno.ENOSPC, "No space left on device", "some/file")) is None
    assert crash_guard.stdout_refused(BrokenPipeError(errno.EPIPE, "Broken pipe")) is None
    assert crash_guard.stdout_refused(ValueError("x")) is None


def test_a_full_device_under_stdout_is_the_environment(capfd, monkeypatch):
    # the real silencing dup2s /dev/null onto the descriptor under sys.stdout: in this process that is
    # pytest's capture, which must outlive the test, so only the call is recorded here
    silenced = []
    monkeypatch.setattr(crash_guard, "silence_closed_stdout", lambda: silenced.append(True))
    assert crash_guard.stdout_refused(OSError(errno.ENOSPC, "No space left on device")) == \
        "stdout: cannot write: No space left on device"
    assert silenced == [True]


def test_a_capture_without_a_descriptor_is_never_blamed(capsys):
    assert crash_guard.stdout_refused(OSError(errno.EBADF, "Bad file descriptor")) is None


@pytest.mark.parametrize("out, expected", [
    ("ci/run.json", "ci/run.adapter.log"), ("/dev/stdout", ".retrieval-gate/report.adapter.log"),
    ("/dev/null", ".retrieval-gate/report.adapter.log"), ("/dev/fd/1", ".retrieval-gate/report.adapter.log")])
def test_companion_files_stay_out_of_dev(out, expected):
    assert crash_guard.beside_out(Path(out), ".adapter.log") == Path(expected)
    assert crash_guard.run_traceback_path(Path(out)).name.endswith(".traceback.txt")
