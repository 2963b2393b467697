"""Helpers for tests of real processes: default dispositions for children, liveness, bounded waits, a pseudo-terminal."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO_ROOT


def default_signals() -> None:
    """preexec_fn: the child starts with default dispositions even when the suite runs as a background
    job (where SIGINT is ignored, and the child would inherit that)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def alive(pid: int) -> bool:
    """Running and not a zombie (a zombie nobody reaped runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_for(predicate, seconds: float = 20.0) -> bool:
    """Poll `predicate` until true or `seconds` pass (a test-side bound, never a timing assertion)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def adapter_pid(log: Path) -> int:
    match = re.search(r": pid=(\d+)", log.read_text(errors="replace")[:4096])
    assert match, f"the fixture did not log its pid in {log}"
    return int(match.group(1))


def without_file_privileges() -> list[str]:
    """An argv prefix that runs a command as file permissions bind an ordinary user.

    Empty for a non-root user. For root: `setpriv` keeping uid 0 but dropping every capability
    (CAP_DAC_OVERRIDE above all), so a read-only folder refuses the write as it refuses any user,
    while this interpreter (often under /root, out of nobody's reach) still starts. Skips when
    setpriv (util-linux) is missing.
    """
    import os
    import shutil

    import pytest

    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux) to drop the file capabilities")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--"]


def on_a_terminal(argv: list[str], term: str, **extra_env: str) -> tuple[int, str]:
    """(exit code, everything printed) for `argv` run with stdout and stderr on a pseudo-terminal, as a
    user at a shell sees it (NO_COLOR unset; the terminal turns each `\\n` into `\\r\\n`)."""
    import pty
    leader, follower = pty.openpty()
    env = dict(os.environ, TERM=term, **extra_env)
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def assert_one_error_line(done: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit 2, exactly one `harness: error:` line holding every fragment, no internal error; returns the line."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if " error: " in line]
    assert len(errors) == 1, done.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


def ask_adapter_module(module: str, args: list[str], requests: list[dict],
                       env: dict[str, str]) -> tuple[int, list[dict], str]:
    """Start `python -m module args` from the repository, write `requests` on its stdin, and return its exit
    code, the JSON lines it answered (start-up progress lines left out: tests/unit/adapters/test_startup.py
    checks those) and its stderr."""
    stdin = "".join(json.dumps(request) + "\n" for request in requests)
    done = subprocess.run([sys.executable, "-m", module, *args], input=stdin, capture_output=True, text=True,
                          env=env, cwd=REPO_ROOT, timeout=120, check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return done.returncode, [line for line in lines if "progress" not in line], done.stderr
