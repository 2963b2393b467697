"""The one start-up path of every reference adapter: dependency and memory checks, one-line error, exit 2.

An adapter's `prepare()` loads what it needs and returns `(search, banner)`; any problem it
finds raises `AdapterStartupError` (or a subclass) with a one-line message. `run_adapter`
turns that into `NAME: error: MESSAGE` on stderr and exit status 2 (or the error's own
`exit_code`: 3 for a service that never came up, adapters/wait.py), and otherwise hands the
search function to `serve()`. `require` checks optional packages up front, so a missing
one is an install hint, not a traceback from deep inside a loader.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

EXIT_STARTUP_ERROR = 2


class AdapterStartupError(Exception):
    """The adapter cannot start (bad option, missing package, corpus, model or cache); one line."""


class MissingDependency(AdapterStartupError):
    """An optional package the adapter needs is not installed."""


def require(modules: Sequence[str], hint: str) -> None:
    """Import each module, or raise MissingDependency naming the first one missing and `hint`."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing = exc.name or module
            raise MissingDependency(f"missing {missing}; install with: {hint}") from None


def available_memory_bytes() -> int | None:
    """What this process may still allocate: MemAvailable, capped by a cgroup v2 limit; None if unknown."""
    found: list[int] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
            found.append(int(limit) - used)
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def one_line(exc: BaseException) -> str:
    """The message's first line (so a multi-line message from a library cannot break the format)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def fail(name: str, exc: BaseException) -> int:
    """Print `NAME: error: MESSAGE` and return the start-up exit status (the error's own `exit_code` if it has one)."""
    print(f"{name}: error: {one_line(exc)}", file=sys.stderr, flush=True)
    return getattr(exc, "exit_code", EXIT_STARTUP_ERROR)


def run_adapter(name: str, prepare: Callable[[], tuple[Callable[[str, str, int], Any], dict[str, object]]]) -> int:
    """Start an adapter: `prepare()` -> (search, banner), then serve until EOF.

    Only start-up errors become exit 2; an error while answering a query is that query's
    error reply (serve's rule), and anything else is a bug and keeps its traceback.
    """
    try:
        search, banner = prepare()
    except AdapterStartupError as exc:
        return fail(name, exc)
    from harness.adapter import serve

    return serve(search, banner)


class Progress:
    """Start-up progress of one stage, every `fraction` of the total or `every` items, whichever is fewer.

    Each report is a progress line on stdout (`harness.adapter.report_progress`: the harness
    shows it and restarts its start-up silence clock) and a line in the adapter's log
    (stderr). Call it with (done, total) as often as convenient; it reports only at those
    steps (and at the end), never per document.
    """

    def __init__(self, name: str, stage: str, *, fraction: float = 0.02, every: int = 500) -> None:
        self.name, self.stage, self.fraction, self.every = name, stage, fraction, every
        self.total: int | None = None
        self.step = 1
        self.next = 0
        self.started = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        if total != self.total:
            self.total = total
            self.step = max(1, min(self.every, int(total * self.fraction)))
            self.next = self.step
        if done < self.next and done != total:
            return
        self.next = (done // self.step + 1) * self.step
        seconds = time.monotonic() - self.started
        rate = f", {done / seconds:.0f}/s" if seconds > 0 else ""
        from harness.adapter import report_progress

        report_progress(self.stage, done, total)
        print(f"{self.name}: {self.stage}: {done}/{total}{rate}", file=sys.stderr, flush=True)
