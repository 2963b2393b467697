"""The last line of defence of every command: an unexpected exception becomes one stderr line, a
traceback file and EXIT_INTERNAL; a reader closing our stdout (`| head -1`) ends the command quietly.

A HarnessError is the harness speaking (one line, exit 0-3 or 128+n); anything else reaching
`harness.commands.cli.main` is a bug of ours, and a user must see neither a traceback nor an
exit code that means "a gate failed" (1) or "your config is wrong" (2) for it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from harness.errors import EXIT_INTERNAL
from harness.fsutil import names_a_stream
from harness.report.escape import terminal_line

TRACEBACK_FOLDER = Path(".retrieval-gate")


def run_traceback_path(out: Path) -> Path:
    """Where the run command's traceback goes: `<--out stem>.traceback.txt` beside `--out`."""
    return beside_out(out, ".traceback.txt")


def beside_out(out: Path, suffix: str) -> Path:
    """A run's companion file (adapter log, traceback): `<--out stem><suffix>` beside `--out`, or
    `.retrieval-gate/report<suffix>` when --out is a stream (/dev/stdout, /dev/null, a FIFO), whose
    folder (/dev, /proc) is no place for files; the same when --out has no file name (`.`, `/`), which the
    output check refuses in its own words."""
    if names_a_stream(out) or not out.name:
        return TRACEBACK_FOLDER / f"report{suffix}"
    return out.with_name(out.stem + suffix)


def internal_error_line(error: BaseException, traceback_path: Path) -> str:
    """The one line a user sees for a bug (without the `harness: ` prefix)."""
    message = " ".join(str(error).split())  # one line, whatever the exception's text holds
    return (f"internal error: {type(error).__name__}: {message} "
            f"(a bug: please report it; traceback in {traceback_path})")


def report_internal_error(error: BaseException, traceback_path: Path) -> int:
    """Write the traceback to `traceback_path` (best effort), print the one line, return EXIT_INTERNAL."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        traceback_path.parent.mkdir(parents=True, exist_ok=True)
        traceback_path.write_text(text, encoding="utf-8", errors="backslashreplace")
        where = traceback_path
    except OSError as exc:  # an unwritable folder must not bring the traceback back to the terminal
        where = Path(f"nowhere: {traceback_path}: {exc.strerror or exc}")
    try:
        print(f"harness: {terminal_line(internal_error_line(error, where))}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # stderr itself is gone: the exit code is all that is left
    return EXIT_INTERNAL


def silence_closed_stdout() -> None:
    """After a BrokenPipeError on stdout: point stdout at devnull, so the interpreter's final flush
    neither raises again nor prints "Exception ignored ... BrokenPipeError" (Python docs, signal module,
    "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (a test's capture): nothing will flush into a closed pipe


# Errors a write to stdout meets when the environment refuses it (a full disk or /dev/full, a quota,
# an I/O error), as opposed to a bug: they carry no file name, as our own file writes always do.
_REFUSED_WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS)


def stdout_refused(error: BaseException) -> str | None:
    """`stdout: cannot write: why` when `error` is our stdout refusing a write (exit 2), else None.

    Stdout opened read-only (`1</dev/null`), closed under us, or on a full device is the user's
    environment, not a bug: one line, and the stream is pointed at devnull so the interpreter's
    last flush does not fail again. A BrokenPipeError (the reader left) is not this.
    """
    if not isinstance(error, OSError) or isinstance(error, BrokenPipeError) or error.filename is not None:
        return None
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return None  # not a real stream (a test's capture): nothing to say about it
    try:
        flags = fcntl.fcntl(descriptor, fcntl.F_GETFL)
    except OSError:
        if error.errno != errno.EBADF:
            return None
        reason = "it is closed"
    else:
        if error.errno == errno.EBADF and flags & os.O_ACCMODE == os.O_RDONLY:
            reason = "it is open for reading only"
        elif error.errno in _REFUSED_WRITE_ERRNOS:
            reason = error.strerror or str(error)
        else:
            return None
    silence_closed_stdout()
    return f"stdout: cannot write: {reason}"


def file_refused(error: BaseException) -> str | None:
    """`PATH: cannot write: why` when `error` is a file the environment refuses a write to (a full disk, a quota,
    a read-only filesystem: exit 2, not a bug), else None."""
    if not isinstance(error, OSError) or error.filename is None or error.errno not in _REFUSED_WRITE_ERRNOS:
        return None
    return f"{error.filename}: cannot write: {error.strerror or error}"


def stdout_is_closed() -> bool:
    """True when stdout is a pipe whose reader has gone (poll reports POLLERR on its write end), so a
    BrokenPipeError came from our own output and not from, say, an adapter's stdin."""
    import select
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), 0)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


@contextlib.contextmanager
def thread_bugs_recorded(traceback_path: Callable[[], Path]) -> Iterator[list[BaseException]]:
    """Within the block, an exception escaping a thread is reported like one in the main thread (one
    line, the traceback in the file) instead of Python's "Exception in thread" traceback; the list
    yielded collects them, so the command can end with EXIT_INTERNAL."""
    crashed: list[BaseException] = []
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit or args.exc_value is None:
            return
        crashed.append(args.exc_value)
        report_internal_error(args.exc_value, traceback_path())

    threading.excepthook = hook
    try:
        yield crashed
    finally:
        threading.excepthook = previous
