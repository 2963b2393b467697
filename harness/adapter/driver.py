"""AdapterProcess: start, feed, time and stop one adapter; every failure becomes an AdapterError.

The adapter runs from an argv list (never a shell) in its own session, so stopping it can
signal its whole process group (grandchildren included). Its stdout is read with `os.read`
on the raw fd plus a buffer and `poll` for the deadline: no thread per line, so the harness
adds only microseconds per query (benchmarks/overhead.py). Its stderr is drained by one
thread into the log file the whole time, so an adapter that floods stderr never blocks.
POSIX only (poll, process groups).
"""

from __future__ import annotations

import math
import os
import select
import shlex
import signal
import subprocess
import threading
import time
from pathlib import Path

from harness.errors import AdapterError, ProtocolError, UsageError
from harness.adapter.protocol import Request, Response, decode_banner, decode_response, encode_request

STARTUP_TIMEOUT_SECONDS = 120.0   # process start -> ready banner (or first answer without a banner)
QUERY_TIMEOUT_SECONDS = 30.0      # request written -> full response line read
STOP_GRACE_SECONDS = 5.0          # stdin closed -> adapter expected to have exited by itself
TERM_GRACE_SECONDS = 2.0          # SIGTERM sent to the group -> SIGKILL
EXIT_WAIT_SECONDS = 2.0           # stdout hit EOF -> wait this long for an exit status to report
STDERR_JOIN_SECONDS = 2.0         # group gone -> stderr thread expected to have seen EOF
MAX_LINE_BYTES = 16 * 1024 * 1024  # longest response line accepted
READ_CHUNK_BYTES = 64 * 1024
TAIL_READ_BYTES = 64 * 1024       # the tail is taken from at most this much of the log's end
TAIL_LINE_CHARS = 500             # longer log lines are cut in the tail (the file keeps them whole)

# What a read is waiting for; decides its time allowance and how a failure is worded.
_BANNER, _FIRST_ANSWER, _ANSWER = "banner", "first answer", "answer"

_POLL_IN = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
_POLL_OUT = select.POLLOUT | select.POLLHUP | select.POLLERR


class AdapterProcess:
    """A running adapter, used as a context manager around the queries of one run.

    `ask` is strictly one request line, then one response line. `env` is merged over
    os.environ (the CLI passes HARNESS_CORPUS_DIR). Without `expect_banner` nothing is
    awaited at start; a banner found as the first stdout line is still recorded, and until
    the first line arrives the first query may take `startup_timeout` on top of
    `query_timeout` because it pays the adapter's start-up.
    """

    def __init__(self, argv: list[str], *, log_path: Path, env: dict[str, str] | None = None,
                 expect_banner: bool = False, startup_timeout: float = STARTUP_TIMEOUT_SECONDS,
                 query_timeout: float = QUERY_TIMEOUT_SECONDS) -> None:
        if not argv:
            raise UsageError("adapter command is empty")
        self.argv = [str(arg) for arg in argv]
        self.log_path = Path(log_path)
        self.env = dict(env or {})
        self.expect_banner = expect_banner
        self.startup_timeout = float(startup_timeout)
        self.query_timeout = float(query_timeout)
        self.banner: dict | None = None
        self.startup_seconds: float | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._spawned_at = 0.0
        self._buffer = bytearray()
        self._seen_first_line = False
        self._asked = 0
        self._last_label: str | None = None
        self._failure: str | None = None  # set once the stream can no longer be trusted
        self._stopped = False
        self._log = None
        self._log_start = 0
        self._stderr_lock = threading.Lock()
        self._stderr_eof = False
        self._stderr_thread: threading.Thread | None = None
        self._wake_read = self._wake_write = -1

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> AdapterProcess:
        self._start()
        if self.expect_banner:
            try:
                self._await_banner()
            except BaseException:
                self._stop(grace=0.0)
                raise
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if self._failure is not None:
            self._stop(grace=0.0)  # it already failed: no point waiting for a clean exit
            return
        unread = self._stop(grace=STOP_GRACE_SECONDS)
        if exc_type is None and unread.strip():
            # Lines nobody asked for, found once it exited: its answers were one (or more) off,
            # so the run's answers cannot be trusted.
            lines = unread.strip().split(b"\n")
            raise self._error(self._last_label, f"adapter printed {len(lines)} line(s) on stdout after "
                              f"its last answer, answering no request (answers out of step?): "
                              f"{_preview(lines[0])}")

    def _start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab", buffering=0)
        self._log_start = self._log.tell()  # the tail never shows an earlier run's lines
        self._spawned_at = time.perf_counter()
        try:
            self._process = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env={**os.environ, **self.env}, start_new_session=True, bufsize=0)
        except OSError as exc:
            self._log.close()
            raise AdapterError(f"cannot start the adapter: {exc.strerror or exc}"
                               f" [adapter: {shlex.join(self.argv)}]", argv=self.argv) from None
        self._stdin_fd = self._process.stdin.fileno()
        self._stdout_fd = self._process.stdout.fileno()
        self._stderr_fd = self._process.stderr.fileno()
        os.set_blocking(self._stdin_fd, False)   # a stuck adapter must not block our write
        os.set_blocking(self._stderr_fd, False)  # drained under a lock, until EAGAIN
        self._read_poll = select.poll()
        self._read_poll.register(self._stdout_fd, _POLL_IN)
        self._write_poll = select.poll()
        self._write_poll.register(self._stdin_fd, _POLL_OUT)
        self._wake_read, self._wake_write = os.pipe()
        self._stderr_thread = threading.Thread(target=self._drain_stderr, name="adapter-stderr",
                                               daemon=True)
        self._stderr_thread.start()

    def _await_banner(self) -> None:
        deadline = time.perf_counter() + self.startup_timeout
        line = self._read_line(deadline, None, _BANNER)
        self._seen_first_line = True
        banner = decode_banner(line)
        if banner is None:
            raise self._failed(None, f"first line was not a banner: {_preview(line)}")
        self.banner = banner
        self.startup_seconds = time.perf_counter() - self._spawned_at

    # -- queries -----------------------------------------------------------------------------

    def ask(self, request: Request) -> tuple[Response, float]:
        """Send one request, read one response; return it with its latency in seconds.

        Latency is perf_counter from before the write to after the full line is read (for
        a first query that meets an unexpected banner, the wait for the banner included).
        An `error` reply, a protocol violation, EOF/exit or no answer within the timeout
        raises AdapterError naming the query, what happened and the stderr tail.
        """
        self._asked += 1
        label = request.qid if request.qid is not None else f"#{self._asked}"
        self._last_label = label
        if self._failure is not None:
            raise self._error(label, f"not asked: the adapter already failed ({self._failure})")
        if self._process is None or self._stopped:
            raise self._error(label, "not asked: the adapter is not running")
        if self._seen_first_line:
            self._check_no_stray(label)
        line = encode_request(request)
        if self._seen_first_line:
            stage, allowed = _ANSWER, self.query_timeout
        else:
            stage, allowed = _FIRST_ANSWER, self._allowed(_FIRST_ANSWER)
        started = time.perf_counter()
        deadline = started + allowed
        try:
            written = os.write(self._stdin_fd, line)
        except BlockingIOError:
            written = 0
        except (BrokenPipeError, ConnectionResetError):
            raise self._ended(label, stage) from None
        if written < len(line):
            self._write_rest(memoryview(line)[written:], deadline, label, stage)
        raw = self._read_line(deadline, label, stage)
        if stage == _FIRST_ANSWER:
            self._seen_first_line = True
            banner = decode_banner(raw)
            if banner is not None:
                # It printed a banner nobody waited for: record it, the answer comes next.
                self.banner = banner
                now = time.perf_counter()
                self.startup_seconds = now - self._spawned_at
                raw = self._read_line(now + self.query_timeout, label, _ANSWER)
        latency = time.perf_counter() - started
        try:
            response = decode_response(raw, qid=label, k=request.k)
        except ProtocolError as exc:
            raise self._failed(label, _violation(raw, str(exc), label)) from None
        if response.error is not None:
            raise self._error(label, f"adapter answered with an error: {response.error}")
        return response, latency

    def _check_no_stray(self, label: str) -> None:
        """Nothing may wait on stdout before a request: an extra line puts every later answer one off.

        Looks at the buffer and, without waiting, at the pipe (one poll), so a line that arrived
        on its own after the last answer is caught too, not read as the next query's answer.
        """
        if not self._buffer and self._read_poll.poll(0):
            chunk = os.read(self._stdout_fd, READ_CHUNK_BYTES)
            if not chunk:
                raise self._ended(label, _ANSWER)
            self._buffer += chunk
        if self._buffer:
            stray = bytes(self._buffer).split(b"\n", 1)[0]
            raise self._failed(label, "adapter printed a line on stdout that answers no request "
                                      f"(answers out of step?): {_preview(stray)}")

    def _allowed(self, stage: str) -> float:
        """Seconds allowed for a stage; a first answer may also pay the adapter's start-up."""
        if stage == _BANNER:
            return self.startup_timeout
        if stage == _FIRST_ANSWER:
            return self.startup_timeout + self.query_timeout
        return self.query_timeout

    def _no_answer(self, stage: str) -> str:
        allowed = f"{self._allowed(stage):g} s"
        if stage == _BANNER:
            return f"did not print the ready banner within {allowed}"
        note = " (first query, start-up included)" if stage == _FIRST_ANSWER else ""
        return f"no answer within {allowed}{note}; does the adapter flush stdout after each line?"

    def _write_rest(self, view: memoryview, deadline: float, label: str, stage: str) -> None:
        """Slow path: the pipe to the adapter is full; wait for room until the deadline."""
        while view:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise self._give_up(label, f"could not write the request within "
                                             f"{self._allowed(stage):g} s (not reading stdin?)")
            self._write_poll.poll(math.ceil(remaining * 1000))
            try:
                view = view[os.write(self._stdin_fd, view):]
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise self._ended(label, stage) from None

    def _read_line(self, deadline: float, label: str | None, stage: str) -> bytes:
        """One stdout line without its newline; the bytes after it stay in the buffer."""
        buffer = self._buffer
        scanned = 0
        while True:
            if buffer:
                end = buffer.find(b"\n", scanned)
                if end >= 0:
                    if end > MAX_LINE_BYTES:
                        raise self._too_long(label)
                    line = bytes(buffer[:end])
                    del buffer[:end + 1]
                    return line
                if len(buffer) > MAX_LINE_BYTES:
                    raise self._too_long(label)
                scanned = len(buffer)
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise self._give_up(label, self._no_answer(stage))
            if not self._read_poll.poll(math.ceil(remaining * 1000)):
                continue
            chunk = os.read(self._stdout_fd, READ_CHUNK_BYTES)
            if not chunk:
                raise self._ended(label, stage)
            if not buffer and chunk.find(b"\n") == len(chunk) - 1:
                return chunk[:-1]  # the usual case: exactly one whole line arrived
            buffer += chunk

    # -- failures ----------------------------------------------------------------------------

    def _too_long(self, label: str | None) -> AdapterError:
        # The adapter is likely blocked writing the rest of it: nobody will read it, so stop it now.
        self._buffer.clear()
        return self._give_up(label, f"response line longer than {MAX_LINE_BYTES} bytes "
                                      f"({MAX_LINE_BYTES // (1024 * 1024)} MiB)")

    def _give_up(self, label: str | None, text: str) -> AdapterError:
        """Give up on a stuck adapter: kill its group first, so the tail is complete, then report."""
        self._failure = text
        self._stop(grace=0.0)
        return self._error(label, f"{text}; its process group was killed")

    def _ended(self, label: str | None, stage: str) -> AdapterError:
        """stdout hit EOF or stdin broke: report how the adapter ended, if it did."""
        waiting_for = "printing the ready banner" if stage == _BANNER else "answering"
        status = self._wait_leader(EXIT_WAIT_SECONDS)
        if status is None:
            what = f"closed its stdout before {waiting_for} (still running)"
        else:
            what = f"{status} before {waiting_for}"
        return self._failed(label, what)

    def _failed(self, label: str | None, what: str) -> AdapterError:
        """The stream can no longer be trusted: remember it, so later asks fail fast."""
        self._failure = what
        return self._error(label, what)

    def _error(self, label: str | None, what: str) -> AdapterError:
        """The AdapterError: query, what happened, argv and log path, then the stderr tail."""
        tail = self.stderr_tail()
        where = f"query {label}: " if label is not None else ""
        lines = [f"{where}{what} [adapter: {shlex.join(self.argv)}; log: {self.log_path}]"]
        if tail:
            lines.append("adapter stderr (last lines):")
            lines.extend(f"  | {line}" for line in tail.splitlines())
        else:
            lines.append("adapter stderr: (empty)")
        return AdapterError("\n".join(lines), argv=self.argv, qid=label, stderr_tail=tail)

    # -- stopping ----------------------------------------------------------------------------

    def _stop(self, *, grace: float) -> bytes:
        """Close stdin, let it exit within `grace`, then SIGTERM, then SIGKILL the group.

        Returns what stdout held unread at the end (nothing, for an adapter in step).

        The leader is left unreaped (a zombie) until the group has been signalled, so its
        pid, which is the group id, cannot be reused by an unrelated process meanwhile.
        A SIGKILL to the group always ends it: processes the adapter left behind are orphans.
        """
        if self._stopped or self._process is None:
            return b""
        self._stopped = True
        process = self._process
        try:
            process.stdin.close()
        except OSError:
            pass
        if self._wait_leader(grace) is None:
            self._signal_group(signal.SIGTERM)
            self._wait_leader(TERM_GRACE_SECONDS)
        self._signal_group(signal.SIGKILL)
        process.wait()
        self._finish_stderr()
        unread = self._unread_stdout()
        process.stdout.close()
        os.close(self._wake_read)
        os.close(self._wake_write)
        if self._log is not None:
            self._log.close()
        return unread

    def _unread_stdout(self) -> bytes:
        """The buffer plus what the pipe holds now, without waiting (bounded by MAX_LINE_BYTES)."""
        data = bytearray(self._buffer)
        self._buffer.clear()
        while len(data) <= MAX_LINE_BYTES and self._read_poll.poll(0):
            try:
                chunk = os.read(self._stdout_fd, READ_CHUNK_BYTES)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        return bytes(data)

    def _signal_group(self, signum: int) -> None:
        try:
            os.killpg(self._process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def _wait_leader(self, timeout: float) -> str | None:
        """Wait up to `timeout` s for the adapter to end, without reaping it; describe how."""
        process = self._process
        deadline = time.monotonic() + timeout
        pause = 0.001
        while True:
            if process.returncode is not None:
                return _describe_status(process.returncode)
            try:
                info = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return _describe_status(process.wait())
            if info is not None:
                if info.si_code == os.CLD_EXITED:
                    return _describe_status(info.si_status)
                return _describe_status(-info.si_status)
            if time.monotonic() >= deadline:
                return None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    # -- stderr ------------------------------------------------------------------------------

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
        file, so `_sync_stderr` sees everything written before it was called.
        """
        copied = 0
        while copied < limit:
            try:
                chunk = os.read(self._stderr_fd, READ_CHUNK_BYTES)
            except BlockingIOError:
                return True
            if not chunk:
                self._stderr_eof = True
                return False
            copied += len(chunk)
            try:
                self._log.write(chunk)
            except (OSError, ValueError):
                pass  # a full disk must not stall the adapter: keep draining, drop the text
        return True

    def _sync_stderr(self) -> None:
        """Bring the log up to date with what the adapter has written to stderr so far."""
        if self._stderr_thread is None:
            return
        with self._stderr_lock:
            if not self._stderr_eof and not self._process.stderr.closed:
                self._pump_stderr(limit=MAX_LINE_BYTES)

    def _finish_stderr(self) -> None:
        thread = self._stderr_thread
        thread.join(STDERR_JOIN_SECONDS)
        if thread.is_alive():  # something outside the group still holds the adapter's stderr
            os.write(self._wake_write, b"x")
            thread.join()
        with self._stderr_lock:
            if not self._stderr_eof:
                self._pump_stderr(limit=MAX_LINE_BYTES)
            self._process.stderr.close()

    def stderr_tail(self, max_lines: int = 20) -> str:
        """The last `max_lines` lines the adapter wrote to stderr in this run, from the log file."""
        self._sync_stderr()
        try:
            with open(self.log_path, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                start = max(self._log_start, size - TAIL_READ_BYTES)
                handle.seek(start)
                data = handle.read()
        except OSError:
            return ""
        # A progress bar redraws one line with \r: keep only what it showed last.
        lines = [line.rstrip("\r").rsplit("\r", 1)[-1]
                 for line in data.decode("utf-8", errors="replace").split("\n")]
        if lines and not lines[-1]:
            lines.pop()
        if start > self._log_start and len(lines) > 1:
            lines = lines[1:]  # the first line read is probably cut
        return "\n".join(_cut(line) for line in lines[-max_lines:])


def _describe_status(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"adapter was killed by {name}"
    return f"adapter exited with status {returncode}"


def _violation(raw: bytes, message: str, label: str) -> str:
    """Turn a ProtocolError into what happened, calling out a log line printed on stdout."""
    prefix = f"query {label}: "
    if message.startswith(prefix):
        message = message[len(prefix):]
    if message.startswith(("line is not JSON", "line is not a JSON object", "line is not valid")):
        return ("adapter printed a non-protocol line on stdout (adapters must log to stderr): "
                f"{_preview(raw)}")
    return f"invalid response: {message}"


def _preview(line: bytes, limit: int = 200) -> str:
    text = line.decode("utf-8", errors="replace").rstrip("\r")
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _cut(line: str) -> str:
    return line if len(line) <= TAIL_LINE_CHARS else line[:TAIL_LINE_CHARS] + "..."
