"""A guard that outlives a killed harness: it stops the adapters' process groups and removes the temp folders.

Why: SIGINT, SIGTERM and SIGHUP unwind a run (harness/interrupts.py), which stops every child
and removes every temp folder. SIGKILL, the OOM killer or a crash of the interpreter unwind
nothing, and an adapter that prints nothing for a while (a long index build) would live on,
reparented to init, beside its corpus folder in /tmp.

How: while anything is guarded, one guard process runs beside this one. It is forked twice, so
it is nobody's child, in a session of its own, so no signal to our process group and no
clean-up of our children reaches it. It reads JSON lines from a pipe whose other end only this
process holds: `["+", "group", PGID]`, `["-", "group", PGID]`, and the same with "folder" and a
path. When the pipe closes, because this process ended however it ended or because nothing is
guarded any more, the guard acts on what is still guarded: SIGTERM to every group,
TERM_GRACE_SECONDS for them to go, SIGKILL, then every folder removed. A harness that cleaned
up has released everything, so then it does nothing.

`ChildProcess.spawn` guards every child's group; `guarded_temp_folder` every temp folder.
When the guard cannot be started, guarding is skipped and the run goes on as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

TERM_GRACE_SECONDS = 2.0  # SIGTERM sent to a group -> SIGKILL (the harness's stop sequence and the guard's alike)

GUARD = r"""
import json, os, shutil, signal, sys, time
if os.fork():
    os._exit(0)  # the guard proper is a grandchild: no one's child, so no one's clean-up
groups, folders = set(), set()
for line in sys.stdin.buffer:
    try:
        sign, kind, value = json.loads(line)
    except ValueError:
        continue
    chosen = groups if kind == "group" else folders
    (chosen.add if sign == "+" else chosen.discard)(value)
grace = float(sys.argv[1])
def send(signum):  # a group already gone is forgotten (signal 0: only asks whether it is there)
    for group in list(groups):
        try:
            os.killpg(group, signum)
        except (ProcessLookupError, PermissionError):
            groups.discard(group)
for signum in (signal.SIGTERM, signal.SIGKILL):
    send(signum)
    deadline = time.monotonic() + (grace if signum == signal.SIGTERM else 0.0)
    while groups and time.monotonic() < deadline:
        time.sleep(0.05)
        send(0)
for folder in folders:
    shutil.rmtree(folder, ignore_errors=True)
"""


class Watchdog:
    """The guard process of this one: started with the first thing guarded, closed with the last released."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipe: IO[bytes] | None = None
        self._owner = -1           # the pid that started the guard: a forked child must not write to it
        self._guarded: set[tuple[str, object]] = set()

    def guard(self, kind: str, value: int | str) -> None:
        """Have the guard stop this process group ("group") or remove this folder ("folder") if we die."""
        with self._lock:
            if (kind, value) in self._guarded:
                return
            if not self._guarded or self._owner != os.getpid():
                self._start()
            if self._send("+", kind, value):
                self._guarded.add((kind, value))

    def release(self, kind: str, value: int | str) -> None:
        """The group is gone or the folder removed: the guard forgets it (and ends when nothing is left)."""
        with self._lock:
            if (kind, value) not in self._guarded or self._owner != os.getpid():
                return
            self._guarded.discard((kind, value))
            self._send("-", kind, value)
            if not self._guarded:
                self._close()

    def _start(self) -> None:
        self._close()
        self._guarded.clear()
        try:
            intermediate = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", GUARD, str(TERM_GRACE_SECONDS)], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", start_new_session=True)
            intermediate.wait()  # it exits at once; the guard, its child, holds the pipe's read end
        except OSError:
            return
        self._pipe, self._owner = intermediate.stdin, os.getpid()

    def _send(self, sign: str, kind: str, value: int | str) -> bool:
        if self._pipe is None:
            return False
        try:  # one write of under PIPE_BUF bytes: the guard never reads half a line
            os.write(self._pipe.fileno(), json.dumps([sign, kind, value]).encode() + b"\n")
            return True
        except OSError:  # the guard is gone: nothing to tell it
            self._pipe = None
            return False

    def _close(self) -> None:
        if self._pipe is not None and self._owner == os.getpid():
            with contextlib.suppress(OSError):
                self._pipe.close()
        self._pipe = None


WATCHDOG = Watchdog()


def guard_group(group: int) -> None:
    WATCHDOG.guard("group", int(group))


def release_group(group: int) -> None:
    WATCHDOG.release("group", int(group))


def guard_folder(folder: str | os.PathLike[str]) -> None:
    WATCHDOG.guard("folder", os.path.abspath(folder))


def release_folder(folder: str | os.PathLike[str]) -> None:
    WATCHDOG.release("folder", os.path.abspath(folder))


@contextlib.contextmanager
def guarded_temp_folder(prefix: str, dir: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """A new private temp folder, removed on leaving, and by the guard if this process is killed first."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=dir))
    guard_folder(folder)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        release_folder(folder)
