"""SIGINT, SIGTERM and SIGHUP turned into `harness.errors.Interrupted` for the length of a command.

One policy for every command that starts children or writes temporary files: the first of
these signals raises `Interrupted(signum)` (exit 128 + signum: 130, 143, 129, as shells
report it) in the main thread, so `with` blocks and `finally` clauses unwind: the adapter's
or pip's process group is killed, temp folders are removed, a partial report is written.
Signals that arrive while that unwinding runs are held back (noted, not raised), so a second
Ctrl-C cannot cut the cleanup half-way; every wait in it is bounded (harness.child).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from harness.errors import Interrupted

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_received: list[list[int]] = []  # per active block (innermost last): the signal its handler raised


def raise_if_interrupted() -> None:
    """Raise the innermost block's Interrupted again when its handler already ran: third-party code
    that catches Exception (Ray's, when the handler runs inside its Python code) may have swallowed
    it. Called where such code returns to ours, never in cleanup (which must finish)."""
    if _received and _received[-1]:
        raise Interrupted(_received[-1][0])


@contextlib.contextmanager
def signals_raise_interrupted() -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM/SIGHUP raise Interrupted(signum); previous handlers restored on exit.

    A signal ignored when the block starts (SIG_IGN: `nohup`, a background job's SIGINT)
    stays ignored. Outside the main thread (where Python cannot set handlers) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if raised:
            return  # already unwinding: let the cleanup finish
        raised.append(signum)
        raise Interrupted(signum)

    previous = {}
    _received.append(raised)
    try:
        for signum in HANDLED_SIGNALS:
            if signal.getsignal(signum) != signal.SIG_IGN:
                previous[signum] = signal.signal(signum, handler)
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)
        _received.pop()  # blocks nest (main thread only): the innermost ends first


@contextlib.contextmanager
def stop_signals_blocked() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP (the signals a command turns into Interrupted) for the calling
    thread, so a process group's kill is never cut half-way; they are delivered on exit."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
