"""Helpers for tests that signal real processes: default dispositions for children, liveness, bounded waits."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path


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
