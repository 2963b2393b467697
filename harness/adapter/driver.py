"""AdapterProcess: start, feed, time and stop one adapter; every failure becomes an AdapterError.

The process mechanics are `harness.child.ChildProcess`'s, start-up progress lines are read past
by `harness.adapter.startup.read_startup_line`; this module is the strict policy on top: the
first violation is terminal, and worded with the query, argv, log and stderr tail.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from harness.child import MAX_LINE_BYTES, STOP_GRACE_SECONDS, ChildProcess, StreamFailure
from harness.process_memory import PeakMemory
from harness.errors import AdapterError, Interrupted, ProtocolError, UsageError
from harness.adapter.startup import (QUERY_TIMEOUT_SECONDS, STARTUP_LIMIT_SECONDS, STARTUP_TIMEOUT_SECONDS,
                                     ProgressCallback, StartupTimeout, read_startup_line)
from harness.adapter.protocol import (Request, Response, decode_banner, decode_progress, decode_response,
                                      encode_request)
from harness.quoting import preview

__all__ = ["AdapterProcess", "QUERY_TIMEOUT_SECONDS", "STARTUP_LIMIT_SECONDS", "STARTUP_TIMEOUT_SECONDS"]

# What a read is waiting for; decides its time allowance and how a failure is worded.
_BANNER, _FIRST_ANSWER, _ANSWER = "banner", "first answer", "answer"


class AdapterProcess:
    """A running adapter, used as a context manager around the queries of one run.

    `ask` is strictly one request line, then one response line. `env` is merged over
    os.environ (the run passes HARNESS_CORPUS_DIR). Without `expect_banner` nothing is
    awaited at start; a banner found as the first stdout line is still recorded, and until
    the first line arrives the first query may take `startup_timeout` on top of
    `query_timeout` because it pays the adapter's start-up. Progress lines before the banner
    (or first answer) are logged, passed to `on_progress` and restart the start-up clock;
    `startup_limit` caps the whole start-up. From spawn to stop, the peak resident memory of its
    process group is sampled (`peak_rss_mib`, harness/process_memory.py).
    """

    def __init__(self, argv: list[str], *, log_path: Path, env: dict[str, str] | None = None,
                 expect_banner: bool = False, startup_timeout: float = STARTUP_TIMEOUT_SECONDS,
                 query_timeout: float = QUERY_TIMEOUT_SECONDS, startup_limit: float = STARTUP_LIMIT_SECONDS,
                 on_progress: ProgressCallback | None = None, cwd: Path | None = None) -> None:
        if not argv:
            raise UsageError("adapter command is empty")
        self.argv = [str(arg) for arg in argv]
        self.cwd = cwd  # where it starts: the config's folder for the config's adapter; None: the working folder
        self.log_path = Path(log_path)
        self.env = dict(env or {})
        self.expect_banner = expect_banner
        self.startup_timeout = float(startup_timeout)
        self.query_timeout = float(query_timeout)
        self.startup_limit = float(startup_limit)
        self.on_progress = on_progress
        self.banner: dict | None = None
        self.startup_seconds: float | None = None
        self._child: ChildProcess | None = None
        self._memory: PeakMemory | None = None
        self._spawned_at = 0.0
        self._seen_first_line = False
        self._asked = 0
        self._last_label: str | None = None
        self._failure: str | None = None  # set once the stream can no longer be trusted

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> AdapterProcess:
        self._start()
        if self.expect_banner:
            try:
                self._await_banner()
            except BaseException:
                self._stop(0.0)
                raise
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        interrupted = exc_type is not None and issubclass(exc_type, (Interrupted, KeyboardInterrupt))
        if self._failure is not None or interrupted:
            self._stop(0.0)  # it already failed, or the user wants it stopped now
            return
        unread = self._stop(STOP_GRACE_SECONDS)
        lines = self._unasked_lines(unread)
        if exc_type is None and lines:
            # Lines nobody asked for, found once it exited: its answers were one (or more) off,
            # so the run's answers cannot be trusted.
            raise self._error(self._last_label, f"adapter printed {len(lines)} line(s) on stdout after "
                              f"its last answer, answering no request (answers out of step?): "
                              f"{preview(lines[0], 200)}")

    def _unasked_lines(self, unread: bytes) -> list[bytes]:
        """Unread stdout lines that answer nothing; a never-asked adapter's banner and progress are not such lines."""
        lines = unread.strip().split(b"\n") if unread.strip() else []
        if not self._seen_first_line:
            while lines and (decode_banner(lines[0]) is not None or _is_progress(lines[0])):
                lines.pop(0)
        return lines

    def _start(self) -> None:
        self._spawned_at = time.perf_counter()
        try:
            self._child = ChildProcess.spawn(self.argv, log_path=self.log_path, env=self.env, stderr="thread",
                                             cwd=self.cwd)
        except OSError as exc:
            raise AdapterError(f"cannot start the adapter: {exc.strerror or exc}"
                               f" [adapter: {shlex.join(self.argv)}]", argv=self.argv) from None
        try:
            self._memory = PeakMemory(self._child.pid).start()
        except BaseException:  # a signal while the sampler starts: nobody would stop the adapter
            self._child.stop(0.0)
            raise

    def _stop(self, grace_seconds: float) -> bytes:
        """The last look at its memory (while the group still runs), then `ChildProcess.stop`: a signal
        during the look cuts the grace, never the stop."""
        try:
            if self._memory is not None:
                self._memory.stop()
        except BaseException:
            self._running.stop(0.0)
            raise
        return self._running.stop(grace_seconds)

    @property
    def peak_rss_mib(self) -> float | None:
        """The peak resident memory of the adapter's process group so far, in MiB (None: not measured)."""
        return self._memory.peak_mib if self._memory is not None else None

    def _read_startup(self, label: str | None, stage: str, silent_since: float) -> bytes:
        """The first line that is no progress line; every failure an AdapterError."""
        allowed = self._allowed(stage)
        try:
            return read_startup_line(self._running, spawned_at=self._spawned_at, silent_since=silent_since,
                                     silence_seconds=allowed, limit_seconds=self.startup_limit,
                                     waiting="banner" if stage == _BANNER else "answer",
                                     silent_message=self._no_answer(stage), on_progress=self.on_progress)
        except StartupTimeout as timeout:
            raise self._give_up(label, str(timeout)) from None
        except StreamFailure as failure:
            raise self._stream_failed(failure, label, stage) from None
        except ProtocolError as exc:
            raise self._failed(label, f"invalid progress line: {exc}") from None

    def _await_banner(self) -> None:
        line = self._read_startup(None, _BANNER, time.perf_counter())
        self._seen_first_line = True
        if not self._take_banner(line, None):
            raise self._failed(None, f"first line was not a banner: {preview(line, 200)}")

    def _take_banner(self, line: bytes, label: str | None) -> bool:
        """Record `line` as the ready banner when it is one: the start-up ends there."""
        try:
            banner = decode_banner(line, check_fields=True)
        except ProtocolError as exc:
            raise self._failed(label, str(exc)) from None
        if banner is not None:
            self.banner = banner
            self.startup_seconds = time.perf_counter() - self._spawned_at
            if self._memory is not None:
                self._memory.sample()  # the start-up's peak (an index built in memory), seen by the time it is ready
        return banner is not None

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
        child = self._child
        if child is None or child.stopped:
            raise self._error(label, "not asked: the adapter is not running")
        if self._seen_first_line:
            self._check_no_stray(label)
            stage, allowed = _ANSWER, self.query_timeout
        else:
            stage, allowed = _FIRST_ANSWER, self._allowed(_FIRST_ANSWER)
        line = encode_request(request)
        started = time.perf_counter()
        deadline = started + allowed
        try:
            child.write(line, deadline)
        except StreamFailure as failure:
            raise self._stream_failed(failure, label, stage, writing=True) from None
        if stage == _FIRST_ANSWER:
            raw = self._read_startup(label, _FIRST_ANSWER, started)
            self._seen_first_line = True
            if self._take_banner(raw, label):  # a banner nobody waited for: the answer comes next
                stage, deadline = _ANSWER, time.perf_counter() + self.query_timeout
        if stage == _ANSWER:
            try:
                raw = child.read_line(deadline)
            except StreamFailure as failure:
                raise self._stream_failed(failure, label, _ANSWER) from None
        latency = time.perf_counter() - started
        try:
            response = decode_response(raw, qid=label, k=request.k)
        except ProtocolError as exc:
            raise self._failed(label, _violation(raw, str(exc), label)) from None
        if response.error is not None:
            # quoted: the reply's text must not add lines to the message (harness/quoting.py)
            raise self._error(label, f"adapter answered with an error: {preview(response.error, 200)}")
        return response, latency

    def _check_no_stray(self, label: str) -> None:
        """Nothing may wait on stdout before a request: an extra line puts every later answer one off.

        Looks at the buffer and, without waiting, at the pipe (one poll), so a line that arrived
        on its own after the last answer is caught too, not read as the next query's answer.
        """
        try:
            stray = self._running.pending()
        except StreamFailure:
            raise self._ended(label, _ANSWER) from None
        if stray:
            first = stray.split(b"\n", 1)[0]
            raise self._failed(label, "adapter printed a line on stdout that answers no request "
                                      f"(answers out of step?): {preview(first, 200)}")

    def _allowed(self, stage: str) -> float:
        """Seconds allowed for a stage; a first answer may also pay the adapter's start-up."""
        return {_BANNER: self.startup_timeout, _FIRST_ANSWER: self.startup_timeout + self.query_timeout}.get(
            stage, self.query_timeout)

    def _no_answer(self, stage: str) -> str:
        allowed = f"{self._allowed(stage):g} s"
        if stage == _BANNER:
            return f"did not print the ready banner within {allowed}"
        note = " (first query, start-up included)" if stage == _FIRST_ANSWER else ""
        return f"no answer within {allowed}{note}; does the adapter flush stdout after each line?"

    # -- failures ----------------------------------------------------------------------------

    def _stream_failed(self, failure: StreamFailure, label: str | None, stage: str,
                       writing: bool = False) -> AdapterError:
        if failure.reason == StreamFailure.ENDED:
            return self._ended(label, stage)
        if failure.reason == StreamFailure.TOO_LONG:
            return self._give_up(label, f"response line longer than {MAX_LINE_BYTES} bytes "
                                        f"({MAX_LINE_BYTES // (1024 * 1024)} MiB)")
        if writing:
            return self._give_up(label, f"could not write the request within {self._allowed(stage):g} s "
                                        "(not reading stdin?)")
        return self._give_up(label, self._no_answer(stage))

    def _give_up(self, label: str | None, text: str) -> AdapterError:
        """Give up on a stuck adapter: kill its group first, so the tail is complete, then report."""
        self._failure = text
        self._stop(0.0)
        return self._error(label, f"{text}; its process group was killed")

    def _ended(self, label: str | None, stage: str) -> AdapterError:
        """stdout hit EOF or stdin broke: report how the adapter ended, if it did."""
        waiting_for = "printing the ready banner" if stage == _BANNER else "answering"
        status = self._running.how_it_ended()
        return self._failed(label, f"{status} before {waiting_for}" if status is not None
                            else f"closed its stdout before {waiting_for} (still running)")

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

    @property
    def _running(self) -> ChildProcess:
        """The adapter's process, once `_start` spawned it."""
        if self._child is None:
            raise RuntimeError("the adapter was never started")
        return self._child

    @property
    def pid(self) -> int | None:
        """The adapter's process id, which is also its process group id (None before it starts)."""
        return self._child.pid if self._child is not None else None

    def stderr_tail(self, max_lines: int = 20) -> str:
        """The last `max_lines` lines the adapter wrote to stderr in this run, from the log file."""
        return self._child.stderr_tail(max_lines) if self._child is not None else ""


def _is_progress(line: bytes) -> bool:
    try:
        return decode_progress(line) is not None
    except ProtocolError:
        return True


def _violation(raw: bytes, message: str, label: str) -> str:
    """Turn a ProtocolError into what happened, calling out a log line printed on stdout."""
    message = message.removeprefix(f"query {label}: ")
    if message.startswith(("line is not JSON", "line is not a JSON object", "line is not valid")):
        return ("adapter printed a non-protocol line on stdout (adapters must log to stderr): "
                f"{preview(raw, 200)}")
    return f"invalid response: {message}"
