"""One child process's lifecycle: spawn in its own session, bounded line I/O, the stop sequence, exit words, stderr tail.

The one home of these mechanisms for every child the harness starts: the strict run driver
(harness.adapter.driver), the lenient check-adapter driver (harness.adapter.probe) and pip
fetching a corpus archive (harness.sets.sdist_source). It sits below the stages because
`sets` and `adapter` both use it and may not import each other. POSIX only (poll, process
groups, waitid).

- The child runs from an argv list (never a shell) in its own session, so stopping it can
  signal its whole process group, grandchildren included.
- stdout is read with `os.read` on the raw fd plus a buffer and `poll` for the deadline: no
  thread per line, so the run driver adds only microseconds per query (benchmarks/overhead.py).
- stderr goes to a log file, either drained by one thread (`stderr="thread"`: the tail can be
  brought up to date at any moment) or given to the child as its stderr (`stderr="file"`:
  no thread; a file never fills up and blocks the child).
- The leader is left unreaped (a zombie) until its group has been signalled, so its pid,
  which is the group id, cannot be reused by an unrelated process meanwhile.
- The group is guarded (harness/watchdog.py) from spawn to SIGKILL: if the harness itself is
  killed (SIGKILL, the OOM killer), the guard stops the group instead.
- `stop` always finishes: a signal handler raising while it waits (Ctrl-C pressed twice)
  cuts the grace short, but the group is still sent SIGTERM then SIGKILL and reaped; the
  first such exception is re-raised once the group is gone.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from harness.fsutil import open_log
from harness.interrupts import stop_signals_blocked
from harness.process_memory import group_rss_kib
from harness.watchdog import TERM_GRACE_SECONDS, guard_group, release_group

STOP_GRACE_SECONDS = 5.0          # stdin closed -> child expected to have exited by itself
# TERM_GRACE_SECONDS (SIGTERM sent to the group -> SIGKILL) is the watchdog's: its guard stops groups the same way.
EXIT_WAIT_SECONDS = 2.0           # stdout hit EOF -> wait this long for an exit status to report
STDERR_JOIN_SECONDS = 2.0         # group gone -> stderr thread expected to have seen EOF
MAX_LINE_BYTES = 16 * 1024 * 1024  # longest stdout line accepted
READ_CHUNK_BYTES = 64 * 1024
TAIL_LINES = 20                   # lines of the log shown in an error
TAIL_READ_BYTES = 64 * 1024       # the tail is taken from at most this much of the log's end
TAIL_LINE_CHARS = 500             # longer log lines are cut in the tail (the file keeps them whole)
STEP_ATTEMPTS = 5                 # a stop step cut by a signal handler is tried again this often

_POLL_IN = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
_POLL_OUT = select.POLLOUT | select.POLLHUP | select.POLLERR


class StreamFailure(Exception):
    """A line could not be read or written; `reason` says why (TIMEOUT, TOO_LONG or ENDED)."""

    TIMEOUT, TOO_LONG, ENDED = "timeout", "too long", "ended"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ChildProcess:
    """A started child: its pipes, its log, and the one way to stop it.

    Build it with `spawn`. With `talk=True` its stdin and stdout are pipes used through
    `write` and `read_line`; otherwise both are /dev/null (a tool such as pip). Not safe for
    two threads reading at once; `stop` may be called from any thread, and more than once.
    """

    def __init__(self, process: subprocess.Popen[bytes], log, log_path: Path, log_start: int,
                 stderr_thread: bool) -> None:
        self._process = process
        self.pid = process.pid
        self.log_path = log_path
        self.log_start = log_start  # the tail never shows an earlier run's lines
        self._log = log
        self._buffer = bytearray()
        self._stop_lock = threading.Lock()
        self.stopped = False         # group killed, leader reaped, fds closed
        self._stderr_lock = threading.Lock()
        self._stderr_eof = True
        self._stderr_thread: threading.Thread | None = None
        self._wake_read = self._wake_write = -1
        self._stdin_fd = self._stdout_fd = -1
        if process.stdin is not None and process.stdout is not None:
            self._stdin_fd = process.stdin.fileno()
            self._stdout_fd = process.stdout.fileno()
            os.set_blocking(self._stdin_fd, False)   # a stuck child must not block our write
            self._read_poll = select.poll()
            self._read_poll.register(self._stdout_fd, _POLL_IN)
            self._write_poll = select.poll()
            self._write_poll.register(self._stdin_fd, _POLL_OUT)
        if stderr_thread and process.stderr is not None:
            self._stderr_fd = process.stderr.fileno()
            os.set_blocking(self._stderr_fd, False)  # drained under a lock, until EAGAIN
            self._stderr_eof = False
            self._wake_read, self._wake_write = os.pipe()
            self._stderr_thread = threading.Thread(target=self._drain_stderr, name="child-stderr", daemon=True)
            # Started with the stop signals blocked, so the kernel never picks this thread for
            # them: it inherits the mask, and the main thread's handlers see every signal.
            with stop_signals_blocked():
                self._stderr_thread.start()

    @classmethod
    def spawn(cls, argv: list[str], *, log_path: Path, env: dict[str, str] | None = None,
              stderr: Literal["thread", "file"] = "thread", talk: bool = True, cwd: Path | None = None) -> ChildProcess:
        """Start `argv` (no shell) in a new session, in `cwd` (None: the working folder), `env` merged over
        os.environ; OSError if it cannot start.

        `stderr` is "thread" (drained by a thread into `log_path`) or "file" (the log file is
        the child's stderr). The log is appended to; `log_start` marks where this child began.
        """
        log_path = Path(log_path)
        log = open_log(log_path)  # refuses a symlinked or FIFO log; writes into /dev/null
        start = log.tell()
        pipe = subprocess.PIPE if talk else subprocess.DEVNULL
        try:
            process = subprocess.Popen(
                [str(arg) for arg in argv], stdin=pipe, stdout=pipe,
                stderr=subprocess.PIPE if stderr == "thread" else log,
                env={**os.environ, **(env or {})}, start_new_session=True, bufsize=0, cwd=cwd)
        except BaseException:
            log.close()
            raise
        child = cls(process, log, log_path, start, stderr_thread=stderr == "thread")
        try:
            guard_group(process.pid)  # its own session: the pid is the group's id (harness/watchdog.py)
        except BaseException:  # a signal while the guard starts: the caller never gets the child, so stop it
            child.stop(grace_seconds=0.0)
            raise
        return child

    # -- lines ---------------------------------------------------------------------------------

    def read_line(self, deadline: float) -> bytes:
        """One stdout line without its newline, by `deadline` (perf_counter); the rest stays buffered.

        Raises StreamFailure: TIMEOUT at the deadline, TOO_LONG past MAX_LINE_BYTES (the buffer
        is dropped: nobody will read the rest), ENDED at EOF.
        """
        buffer = self._buffer
        scanned = 0
        while True:
            end = buffer.find(b"\n", scanned)
            if end > MAX_LINE_BYTES or (end < 0 and len(buffer) > MAX_LINE_BYTES):
                buffer.clear()
                raise StreamFailure(StreamFailure.TOO_LONG)
            if end >= 0:
                line = bytes(buffer[:end])
                del buffer[:end + 1]
                return line
            scanned = len(buffer)
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise StreamFailure(StreamFailure.TIMEOUT)
            if not self._read_poll.poll(math.ceil(remaining * 1000)):
                continue
            chunk = os.read(self._stdout_fd, READ_CHUNK_BYTES)
            if not chunk:
                raise StreamFailure(StreamFailure.ENDED)
            if not buffer and chunk.find(b"\n") == len(chunk) - 1:
                return chunk[:-1]  # the usual case: exactly one whole line arrived
            buffer += chunk

    def pending(self) -> bytes:
        """What stdout holds unread now (buffer plus one look at the pipe), without waiting.

        An empty result means nothing is waiting; raises StreamFailure(ENDED) when the pipe
        is at EOF and nothing is buffered.
        """
        if not self._buffer and self._read_poll.poll(0):
            chunk = os.read(self._stdout_fd, READ_CHUNK_BYTES)
            if not chunk:
                raise StreamFailure(StreamFailure.ENDED)
            self._buffer += chunk
        return bytes(self._buffer)

    def write(self, data: bytes, deadline: float) -> None:
        """Write all of `data` to stdin by `deadline`; StreamFailure TIMEOUT (pipe full) or ENDED (broken)."""
        try:
            written = os.write(self._stdin_fd, data)
        except BlockingIOError:
            written = 0
        except (BrokenPipeError, ConnectionResetError):
            raise StreamFailure(StreamFailure.ENDED) from None
        if written == len(data):
            return
        view = memoryview(data)[written:]
        while view:  # slow path: the pipe is full; wait for room until the deadline
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise StreamFailure(StreamFailure.TIMEOUT)
            self._write_poll.poll(math.ceil(remaining * 1000))
            try:
                view = view[os.write(self._stdin_fd, view):]
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise StreamFailure(StreamFailure.ENDED) from None

    def note(self, text: str) -> None:
        """Append one line of the harness's own (e.g. a progress line) to the log."""
        with self._stderr_lock:
            try:
                self._log.write(text.encode("utf-8", "replace") + b"\n")
            except (OSError, ValueError):
                pass  # a full disk or a closed log must not fail the run

    # -- exit ----------------------------------------------------------------------------------

    def exit_status(self, timeout: float) -> int | None:
        """Wait up to `timeout` s for the leader to end, without reaping it: its status
        (negative: killed by that signal), or None while it runs."""
        process = self._process
        deadline = time.monotonic() + timeout
        pause = 0.001
        while True:
            if process.returncode is not None:
                return process.returncode
            try:
                info = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return process.wait()
            if info is not None:
                return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
            if time.monotonic() >= deadline:
                return None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def how_it_ended(self, timeout: float = EXIT_WAIT_SECONDS) -> str | None:
        """`describe_exit` of the leader's status within `timeout` s, or None while it runs."""
        status = self.exit_status(timeout)
        return None if status is None else describe_exit(status)

    def stop(self, grace_seconds: float = STOP_GRACE_SECONDS, term_grace_seconds: float = TERM_GRACE_SECONDS) -> bytes:
        """Close stdin, let it exit within `grace_seconds`, then SIGTERM, then SIGKILL the group; reap it.

        Returns what stdout held unread at the end (bounded by MAX_LINE_BYTES). Calling it
        again is harmless. An exception raised by a signal handler meanwhile cuts the waiting
        short, never the kill: the group is gone before that exception is re-raised.
        """
        interrupt: BaseException | None = None
        try:
            if self._process.stdin is not None:
                with contextlib.suppress(OSError):
                    self._process.stdin.close()
            if grace_seconds > 0 and not self.stopped:
                self.exit_status(grace_seconds)
        except BaseException as exc:  # a signal: no more grace, straight to the kill
            interrupt = exc
        unread = b""
        for _ in range(STEP_ATTEMPTS):
            try:
                unread, late = self._kill(term_grace_seconds)
            except BaseException as exc:  # raised before the signals were held: try again
                interrupt = interrupt or exc
                continue
            interrupt = interrupt or late
            break
        if interrupt is not None:
            raise interrupt
        return unread

    def _kill(self, term_grace_seconds: float) -> tuple[bytes, BaseException | None]:
        """SIGTERM, wait, SIGKILL, reap, finish stderr, close: every step runs, signals or not."""
        unread = bytearray()
        interrupt: BaseException | None = None

        def waiting() -> None:
            if self.exit_status(0) is None:
                self._signal_group(signal.SIGTERM)
                self.exit_status(term_grace_seconds)

        steps: list[tuple[Callable[[], object], bool]] = [  # (step, must finish)
            (waiting, False), (lambda: self._signal_group(signal.SIGKILL), True), (lambda: release_group(self.pid), True),
            (self._process.wait, True), (self._finish_stderr, True),
            (lambda: unread.extend(self._unread_stdout()), False), (self._close, True)]
        with stop_signals_blocked():
            with self._stop_lock:
                if self.stopped:
                    return b"", None
                for step, must_finish in steps:
                    for _ in range(STEP_ATTEMPTS if must_finish else 1):
                        try:
                            step()
                            break
                        except BaseException as exc:  # noqa: BLE001 - re-raised by stop
                            interrupt = interrupt or exc
                self.stopped = True
        return bytes(unread), interrupt

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def _unread_stdout(self) -> bytes:
        """The buffer plus what the pipe holds now, without waiting (bounded by MAX_LINE_BYTES)."""
        data = bytearray(self._buffer)
        self._buffer.clear()
        if self._stdout_fd < 0:
            return b""
        while len(data) <= MAX_LINE_BYTES and self._read_poll.poll(0):
            try:
                chunk = os.read(self._stdout_fd, READ_CHUNK_BYTES)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        return bytes(data)

    def _close(self) -> None:
        if self._process.stdout is not None:
            with contextlib.suppress(OSError):
                self._process.stdout.close()
        for fd in (self._wake_read, self._wake_write):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._wake_read = self._wake_write = -1
        with contextlib.suppress(OSError):
            self._log.close()

    # -- stderr --------------------------------------------------------------------------------

    def _drain_stderr(self) -> None:
        """Thread body: copy stderr into the log until EOF, or until woken at stop."""
        poller = select.poll()
        poller.register(self._stderr_fd, _POLL_IN)
        poller.register(self._wake_read, select.POLLIN)
        while True:
            events = poller.poll()
            with self._stderr_lock:
                if self._stderr_eof or not self._pump_stderr(limit=16 * READ_CHUNK_BYTES):
                    return
            if any(fd == self._wake_read for fd, _ in events):
                return

    def _pump_stderr(self, limit: int) -> bool:
        """Copy what stderr holds now (up to `limit` bytes) to the log; False at EOF.

        Called with the lock held: a byte is either still in the pipe or already in the
        file, so `stderr_tail` sees everything written before it was called.
        """
        copied = 0
        while copied < limit:
            try:
                chunk = os.read(self._stderr_fd, READ_CHUNK_BYTES)
            except BlockingIOError:
                return True
            except OSError:
                chunk = b""
            if not chunk:
                self._stderr_eof = True
                return False
            copied += len(chunk)
            try:
                self._log.write(chunk)
            except (OSError, ValueError):
                pass  # a full disk must not stall the child: keep draining, drop the text
        return True

    def _sync_stderr(self) -> None:
        """Bring the log up to date with what the child has written to stderr so far."""
        if self._stderr_thread is None:
            return
        stderr = self._process.stderr
        with self._stderr_lock:
            if not self._stderr_eof and stderr is not None and not stderr.closed:
                self._pump_stderr(limit=MAX_LINE_BYTES)

    def _finish_stderr(self) -> None:
        thread = self._stderr_thread
        if thread is None:
            return
        thread.join(STDERR_JOIN_SECONDS)
        if thread.is_alive():  # something outside the group still holds the child's stderr
            os.write(self._wake_write, b"x")
            thread.join()
        self._sync_stderr()
        with self._stderr_lock:
            if self._process.stderr is not None:
                self._process.stderr.close()
            self._stderr_eof = True

    def stderr_tail(self, max_lines: int = TAIL_LINES) -> str:
        """The last `max_lines` lines this child's run wrote to its log (see `log_tail`)."""
        self._sync_stderr()
        return log_tail(self.log_path, self.log_start, max_lines)

    def rss_kib(self) -> int | None:
        """Resident memory of the child's process group in KiB, None where not measurable."""
        return None if self.stopped else group_rss_kib(self.pid)


def log_tail(log_path: Path, log_start: int = 0, max_lines: int = TAIL_LINES) -> str:
    """The last `max_lines` lines of a log from byte `log_start` on, each cut at TAIL_LINE_CHARS.

    Read from at most TAIL_READ_BYTES of the end; a progress bar's `\\r` redraws collapse to
    what it showed last; a first line probably cut by that window is dropped. "" if unreadable.
    """
    try:
        with open(log_path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(log_start, size - TAIL_READ_BYTES)
            handle.seek(start)
            data = handle.read()
    except OSError:
        return ""
    lines = [line.rstrip("\r").rsplit("\r", 1)[-1]
             for line in data.decode("utf-8", errors="replace").split("\n")]
    if lines and not lines[-1]:
        lines.pop()
    if start > log_start and len(lines) > 1:
        lines = lines[1:]
    return "\n".join(line if len(line) <= TAIL_LINE_CHARS else line[:TAIL_LINE_CHARS] + "..."
                     for line in lines[-max_lines:])


def describe_exit(returncode: int) -> str:
    """How a child ended, from its return code (negative: the signal that killed it)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"adapter was killed by {name}"
    return f"adapter exited with status {returncode}"

