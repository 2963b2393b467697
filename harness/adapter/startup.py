"""An adapter's start-up: its time allowances, the corpus variable, and reading past progress lines to its first real line.

Both drivers (the strict `driver.AdapterProcess`, the lenient `probe.LiveAdapter`) start the
adapter with `harness.child.ChildProcess` and read its first line with `read_startup_line`:
before its ready banner (or first answer) an adapter may print any number of progress lines
(protocol.py). Each is logged as `[progress] STAGE DONE/TOTAL`, handed to the caller's
callback, and restarts the silence clock: `startup_timeout` is the longest silence allowed,
`startup_limit` the longest start-up however much progress it shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harness.adapter.protocol import Progress, decode_progress
from harness.errors import UsageError
from harness.child import ChildProcess, StreamFailure

CORPUS_DIR_ENV = "HARNESS_CORPUS_DIR"  # the folder of <kind>.jsonl files given to the adapter
STARTUP_TIMEOUT_SECONDS = 120.0   # longest silence before the banner (or first answer); progress restarts it
STARTUP_LIMIT_SECONDS = 3600.0    # process start -> banner (or first answer), however much progress
QUERY_TIMEOUT_SECONDS = 30.0      # request written -> full response line read
# The longest wait any of the three may be given (about 11.6 days): poll() and the clocks take no
# more than a C time value holds, and --timeout 1e10 is a typo, not a wait.
MAX_WAIT_SECONDS = 1e6


def check_waits(query_timeout: object, startup_timeout: object, startup_limit: object, *, prefix: str = "") -> None:
    """UsageError naming the option when a wait (--timeout, --startup-timeout, --startup-limit) is not a
    number of seconds in (0, MAX_WAIT_SECONDS]: the run and check-adapter check theirs here."""
    for name, value in (("--timeout", query_timeout), ("--startup-timeout", startup_timeout),
                        ("--startup-limit", startup_limit)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"{prefix}{name}: must be a number of seconds, got {value!r}")
        if not 0 < value <= MAX_WAIT_SECONDS:  # NaN fails both comparisons
            raise UsageError(f"{prefix}{name}: must be a positive number of seconds up to {MAX_WAIT_SECONDS:g}, "
                             f"got {value:g}")


ProgressCallback = Callable[[Progress], None]


class StartupTimeout(Exception):
    """The adapter stayed silent too long, or took longer than the limit, before its first real line."""


def describe_progress(progress: Progress) -> str:
    """`embedding memory 1200/6778`, or `embedding memory 1200` when the total is unknown."""
    done = f"{progress.done}/{progress.total}" if progress.total is not None else f"{progress.done}"
    return f"{progress.stage} {done}"


def read_startup_line(child: ChildProcess, *, spawned_at: float, silent_since: float, silence_seconds: float,
                      limit_seconds: float, waiting: str, silent_message: str,
                      on_progress: ProgressCallback | None = None) -> bytes:
    """The first stdout line that is not a progress line.

    `silent_since` (perf_counter) starts the silence clock; every progress line restarts it;
    `spawned_at + limit_seconds` caps the whole start-up. `waiting` ("banner", "answer")
    and `silent_message` (said when nothing at all came) word a timeout. Raises
    StartupTimeout, StreamFailure (TOO_LONG, ENDED) and ProtocolError for a malformed
    progress line.
    """
    heard_at = silent_since
    last: Progress | None = None
    limit_at = spawned_at + limit_seconds
    while True:
        silence_ends = heard_at + silence_seconds
        try:
            line = child.read_line(min(silence_ends, limit_at))
        except StreamFailure as failure:
            if failure.reason != StreamFailure.TIMEOUT:
                raise
            shown = f"last progress: {describe_progress(last)}" if last is not None else "no progress"
            if limit_at <= silence_ends:
                raise StartupTimeout(f"still starting after the --startup-limit of {limit_seconds:g} s "
                                     f"({shown})") from None
            if last is None:
                raise StartupTimeout(silent_message) from None
            raise StartupTimeout(f"no {waiting} and no progress for {silence_seconds:g} s ({shown})") from None
        progress = decode_progress(line)
        if progress is None:
            return line
        last, heard_at = progress, time.perf_counter()
        child.note(f"[progress] {describe_progress(progress)}")
        if on_progress is not None:
            on_progress(progress)
