"""A raw-line driver for a live adapter, for the conformance suite (`check-adapter`).

Unlike `harness.adapter.driver.AdapterProcess`, which rightly turns the first violation into a
terminal error, this driver hands back each raw line so every violation can be attributed
to the right check, and restarts an adapter whose stream can no longer be trusted. The
process mechanics are `harness.child.ChildProcess`'s (stderr straight to the log file, no
thread); start-up progress lines are read past by `harness.adapter.startup.read_startup_line`.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from harness.child import MAX_LINE_BYTES, STOP_GRACE_SECONDS, ChildProcess, StreamFailure
from harness.errors import ProtocolError, UsageError
from harness.fsutil import open_log
from harness.adapter.startup import STARTUP_LIMIT_SECONDS, ProgressCallback, StartupTimeout, read_startup_line
from harness.adapter.protocol import Request, banner_problem, decode_banner, encode_request, json_object
from harness.quoting import preview
from harness.watchdog import TERM_GRACE_SECONDS

MAX_STARTS = 12                 # an adapter that keeps dying is not restarted forever
MAX_SILENT_STARTS = 3           # ... nor one that dies before its first line this many times in a row


# -- talking to the adapter -------------------------------------------------------------------

@dataclass
class Exchange:
    """One request and what came back: a raw JSON-object line, or why no usable line came."""

    request: Request
    line: bytes | None = None
    failure: str | None = None
    seconds: float = 0.0
    timed: bool = True        # False for a first answer without a banner: it pays the start-up
    timed_out: bool = False

    @property
    def label(self) -> str:
        return self.request.qid or "?"

    def reply(self) -> dict:
        """The answer as a JSON object (the line was checked to be one); {} when there was no usable line."""
        return {} if self.line is None else json.loads(self.line)

    def outcome(self) -> str | None:
        """Why this exchange did not give a usable answer (failure, error reply, no id list), or None."""
        if self.failure is not None:
            return self.failure
        reply = self.reply()
        if reply.get("error") is not None:
            return f"answered with an error: {shorten(str(reply['error']))}"
        if not isinstance(reply.get("ids"), list):
            return f"answer has no 'ids' list: {preview(self.line, 120)}"
        return None

    def ranking(self) -> tuple | None:
        """What two answers must share to be the same: the id list, or the error text."""
        if self.line is None:
            return None
        reply = self.reply()
        if reply.get("error") is not None:
            return ("error", str(reply["error"]))
        ids = reply.get("ids")
        return ("ids", json.dumps(ids, sort_keys=True)) if isinstance(ids, list) else None


@dataclass
class BannerOutcome:
    """What the first line of the first start said about the banner."""

    problem: str | None        # None when absent or well-formed
    banner: dict | None
    startup_seconds: float


class _Lost(Exception):
    """No usable line: the adapter timed out, ended or broke the stream. Carries what happened."""

    def __init__(self, what: str, timed_out: bool = False) -> None:
        super().__init__(what)
        self.timed_out = timed_out


class LiveAdapter:
    """The adapter under test: started on demand, killed when its stream can no longer be trusted.

    A start that prints no first line within its start-up allowance is not restarted:
    `start_failure` then says why, and every later ask fails at once.
    """

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path,
                 startup_timeout: float, query_timeout: float, startup_limit: float = STARTUP_LIMIT_SECONDS,
                 on_progress: ProgressCallback | None = None, cwd: Path | None = None) -> None:
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.query_timeout = query_timeout
        self.startup_limit = startup_limit
        self.on_progress = on_progress
        self.starts = 0
        self.banner_outcome: BannerOutcome | None = None
        self.start_failure: str | None = None
        self._malformed_progress: str | None = None
        self.exchanges: list[Exchange] = []   # every exchange, for the ids and timeout checks
        self._child: ChildProcess | None = None
        self._first_line_pending = False
        self._spawned_at = 0.0
        self._last_loss = ""
        self._silent_starts = 0     # consecutive starts that ended before printing a line
        self._given_up = ""

    def ask(self, requests: list[Request]) -> list[Exchange]:
        """Write all requests at once (pipelined when several), then read one answer for each."""
        exchanges = [Exchange(request) for request in requests]
        self.exchanges.extend(exchanges)
        try:
            self._ensure_started()
            written_at = time.perf_counter()
            self._write(b"".join(encode_request(r) for r in requests), written_at + self.query_timeout)
        except _Lost as lost:  # not started (no process to stop), or the write failed
            for exchange in exchanges:
                exchange.failure, exchange.timed_out = str(lost), lost.timed_out
            self.stop(0.0, 0.0)
            return exchanges
        ready_at = written_at
        for number, exchange in enumerate(exchanges):
            try:
                exchange.line, ready_at, exchange.timed = self._read_answer(ready_at)
                exchange.seconds = time.perf_counter() - ready_at
                ready_at = time.perf_counter()
            except _Lost as lost:
                exchange.failure, exchange.timed_out = str(lost), lost.timed_out
                exchange.seconds = time.perf_counter() - ready_at
                self.stop(0.0, 0.0)
                for rest in exchanges[number + 1:]:
                    rest.failure = "not answered: the adapter failed on an earlier request of the batch"
                break
        return exchanges

    def ask_one(self, request: Request) -> Exchange:
        return self.ask([request])[0]

    def rss_kib(self) -> int | None:
        """Resident memory of the adapter's process group in KiB (Linux /proc), None if not measurable."""
        return self._child.rss_kib() if self._child is not None else None

    def stop(self, grace_seconds: float = STOP_GRACE_SECONDS, term_grace_seconds: float = TERM_GRACE_SECONDS) -> None:
        """Close stdin, let it exit by itself within `grace_seconds`, then SIGTERM, then SIGKILL the group.

        `stop(0.0, 0.0)` stops it now: its stream is out of step. The next ask starts a fresh process.
        """
        child = self._child
        if child is None:
            return
        try:
            child.stop(grace_seconds, term_grace_seconds)
        finally:
            self._forget()

    # -- internals -------------------------------------------------------------------------

    def _ensure_started(self) -> None:
        if self._child is not None:
            return
        if not self._given_up and self.starts >= MAX_STARTS:
            self._given_up = f"started {MAX_STARTS} times, it kept failing (last: {self._last_loss})"
        if not self._given_up and self._silent_starts >= MAX_SILENT_STARTS:
            self._given_up = (f"it ended before printing a line {MAX_SILENT_STARTS} times in a row "
                              f"({self._last_loss}); see its stderr")
        if self._given_up:
            raise _Lost(f"not asked: the adapter is not restarted any more: {self._given_up}")
        self.starts += 1
        if self.starts > 1:
            with open_log(self.log_path) as log:  # as the first start opened it: never through a symlink
                log.write(f"--- check-adapter: start #{self.starts} ---\n".encode())
        self._spawned_at = time.perf_counter()
        try:
            self._child = ChildProcess.spawn(self.argv, log_path=self.log_path, env=self.env, stderr="file",
                                             cwd=self.cwd)
        except OSError as exc:
            raise UsageError(f"check-adapter: cannot start the adapter {shlex.join(self.argv)}: "
                             f"{exc.strerror or exc}") from None
        self._first_line_pending = True

    def _read_answer(self, ready_at: float) -> tuple[bytes, float, bool]:
        """The next answer line, the time it could start being timed, and whether it is timed."""
        if not self._first_line_pending:
            return self._read_object(ready_at + self.query_timeout), ready_at, True
        first = self._read_first_line(ready_at)
        self._first_line_pending = False
        startup = time.perf_counter() - self._spawned_at
        try:
            banner = decode_banner(first)
        except ProtocolError as exc:  # garbage that passes JSON (a lone surrogate, NaN): a failed banner check
            outcome = BannerOutcome(str(exc), None, startup)
        else:
            answer = json_object(first) or {}
            if banner is None and ("ids" in answer or "error" in answer):
                self._note_banner(BannerOutcome(self._malformed_progress, None, startup))
                return first, ready_at, False
            problem = banner_problem(banner) if banner is not None else _not_a_banner(first)
            outcome = BannerOutcome(self._malformed_progress or problem, banner, startup)
        self._note_banner(outcome)
        now = time.perf_counter()
        return self._read_object(now + self.query_timeout), now, True

    def _read_first_line(self, ready_at: float) -> bytes:
        """The first line after the start-up's progress lines; a malformed progress line is noted, then skipped."""
        self._malformed_progress = None
        allowed = self.startup_timeout + self.query_timeout
        silent_since = ready_at
        while True:
            try:
                return read_startup_line(
                    self._running, spawned_at=self._spawned_at, silent_since=silent_since, silence_seconds=allowed,
                    limit_seconds=self.startup_limit, waiting="banner or answer", on_progress=self.on_progress,
                    silent_message=f"no banner, progress or answer within {allowed:g} s (start-up included)")
            except ProtocolError as exc:
                self._malformed_progress = self._malformed_progress or f"malformed progress line: {exc}"
                silent_since = time.perf_counter()
            except StartupTimeout as timeout:
                # Another start would pay the same start-up again, for every check: stop here.
                self.start_failure = self._given_up = f"{timeout}; the adapter did not start"
                raise _Lost(str(timeout), timed_out=True) from None
            except StreamFailure as failure:
                raise self._lost(failure, "") from None

    def _note_banner(self, outcome: BannerOutcome) -> None:
        if self.banner_outcome is None:  # the first start speaks for the adapter
            self.banner_outcome = outcome

    def _read_object(self, deadline: float) -> bytes:
        try:
            line = self._running.read_line(deadline)
        except StreamFailure as failure:
            raise self._lost(failure, f"no answer within {self.query_timeout:g} s") from None
        if json_object(line) is None:
            raise _Lost("printed a non-protocol line on stdout (adapters must log to stderr): "
                        f"{preview(line, 120)}")
        return line

    def _lost(self, failure: StreamFailure, late: str) -> _Lost:
        if failure.reason == StreamFailure.TIMEOUT:
            return _Lost(late, timed_out=True)
        if failure.reason == StreamFailure.TOO_LONG:
            return _Lost(f"answer line longer than {MAX_LINE_BYTES} bytes")
        return _Lost(self._running.how_it_ended() or "closed its stdout (still running)")

    def _write(self, data: bytes, deadline: float) -> None:
        try:
            self._running.write(data, deadline)
        except StreamFailure as failure:
            raise self._lost(failure, f"could not write the request within {self.query_timeout:g} s "
                                      "(adapter not reading stdin)") from None

    @property
    def _running(self) -> ChildProcess:
        """The adapter's process, started by `_ensure_started` and not stopped since."""
        if self._child is None:
            raise _Lost("not asked: the adapter is not running")
        return self._child

    def _forget(self) -> None:
        self._child = None
        self._last_loss = next((e.failure for e in reversed(self.exchanges) if e.failure), "stopped")
        self._silent_starts = self._silent_starts + 1 if self._first_line_pending else 0


def _not_a_banner(line: bytes) -> str:
    """Why a first line that is no answer is no banner either."""
    obj = json_object(line)
    if obj is not None and "ready" in obj:
        return f"banner 'ready' must be true, got {json.dumps(obj['ready'])}"
    return f"first line is neither a ready banner nor an answer: {preview(line, 120)}"


def shorten(text: str, limit: int = 160) -> str:
    """`text`, cut to `limit` characters for a one-line detail."""
    return text if len(text) <= limit else text[:limit] + "..."
