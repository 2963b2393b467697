"""harness/watchdog.py against real processes: a SIGKILLed harness leaves no adapter and no temp folder behind.

SIGINT, SIGTERM and SIGHUP are handled by unwinding (tests/contract/test_interrupts*); these
are the endings nothing can handle: SIGKILL of the harness process itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from harness.watchdog import GUARD
from tests.conftest import FIXTURES, REPO_ROOT, TINY_SET
from tests.process_helpers import alive, default_signals, wait_for

DRIVER = FIXTURES / "harness_side" / "guarded_driver.py"
STUBBORN = FIXTURES / "adapters" / "stubborn.py"
GUARD_MARK = GUARD.splitlines()[3]  # a line of the guard's script: found in its command line


TAG_VARIABLE = "RETRIEVAL_GATE_TEST_GUARD_TAG"  # set only by these tests; inherited by the guards they cause


def _env(tag: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{FIXTURES / 'adapters'}", TAG_VARIABLE: tag}


def _tag(tmp_path: Path) -> str:
    return f"{os.getpid()}-{tmp_path.name}"  # unique to this test in this run


def _driver(tmp_path: Path, mode: str) -> tuple[subprocess.Popen, int, int, Path]:
    report = tmp_path / "report"
    driver = subprocess.Popen([sys.executable, str(DRIVER), str(report), str(STUBBORN), str(tmp_path), mode],
                              env=_env(_tag(tmp_path)), preexec_fn=default_signals)
    assert wait_for(lambda: report.exists() and report.read_text().endswith("\n"), 60)
    adapter, grandchild, folder = report.read_text().split()
    return driver, int(adapter), int(grandchild), Path(folder)


def guards_running(tag: str) -> list[int]:
    """Pids of live guard processes this test caused: the guard's script in the command line and
    this test's tag in the environment (inherited from the harness it started). Guards of any
    other run on the machine (another test session, a user's `python -m harness`) never match."""
    found = []
    marker = f"{TAG_VARIABLE}={tag}".encode() + b"\0"
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
                if GUARD_MARK.encode() not in command:
                    continue
                environment = (entry / "environ").read_bytes() + b"\0"
            except OSError:  # gone, or another user's process: not ours
                continue
            if marker in b"\0" + environment and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def test_a_sigkilled_harness_has_its_adapter_group_stopped_and_its_folder_removed(tmp_path):
    driver, adapter, grandchild, folder = _driver(tmp_path, "killed")
    assert alive(adapter) and alive(grandchild) and folder.is_dir()
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=30)
    # The stubborn adapter ignores SIGTERM: the guard waits its grace, then SIGKILLs the group.
    assert wait_for(lambda: not alive(adapter) and not alive(grandchild) and not folder.exists(), 30)
    assert wait_for(lambda: not guards_running(_tag(tmp_path)), 30)


def test_what_was_released_is_left_alone(tmp_path):
    driver, adapter, grandchild, folder = _driver(tmp_path, "released")
    try:
        assert driver.wait(timeout=30) == 0
        assert wait_for(lambda: not guards_running(_tag(tmp_path)), 30)  # EOF with nothing guarded: it ended
        assert alive(adapter) and alive(grandchild) and folder.is_dir()
    finally:
        os.killpg(adapter, signal.SIGKILL)


def test_the_real_cli_killed_during_a_silent_start_up_leaves_nothing(tmp_path):
    # An adapter that prints nothing for a minute (a long index build) never meets a closed pipe:
    # only the guard can stop it when the harness is SIGKILLed.
    pid_file = tmp_path / "adapter.pid"
    silent = tmp_path / "silent.py"
    silent.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    harness = subprocess.Popen([sys.executable, "-m", "harness", "--set", str(TINY_SET), "--no-gate", "--quiet",
                                "--out", str(tmp_path / "r.json"), "--adapter", "--", sys.executable, str(silent)],
                               cwd=tmp_path, env={**_env(_tag(tmp_path)), "TMPDIR": str(scratch)},
                               preexec_fn=default_signals,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: pid_file.exists() and pid_file.read_text(), 60)
    adapter = int(pid_file.read_text())
    assert [path.name[:22] for path in scratch.iterdir()] == ["retrieval-gate-corpus-"]
    harness.send_signal(signal.SIGKILL)
    harness.wait(timeout=30)
    assert wait_for(lambda: not alive(adapter) and not any(scratch.iterdir()), 30)


def test_an_in_process_run_leaves_no_guard_behind(tmp_path, monkeypatch):
    from tests.builders import make_report
    from tests.reports import GOOD

    monkeypatch.setenv(TAG_VARIABLE, _tag(tmp_path))  # the guard this run starts inherits it
    make_report(tmp_path, monkeypatch, "a", GOOD)  # a whole run through main(), in this process
    assert wait_for(lambda: not guards_running(_tag(tmp_path)), 30)


def test_guards_running_sees_the_guard_of_its_own_run_and_no_other(tmp_path):
    """The helper must be able to fail: while a driver of this test is alive its guard is found,
    under this test's tag only."""
    driver, adapter, _, _ = _driver(tmp_path, "killed")
    try:
        assert wait_for(lambda: len(guards_running(_tag(tmp_path))) == 1, 30)
        assert guards_running(_tag(tmp_path) + "-other") == []
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
    assert wait_for(lambda: not alive(adapter) and not guards_running(_tag(tmp_path)), 30)
