"""The local Ray instance of a run without --ray-address: `ray start --head` as our own child.

Why not `ray.init()` in the harness process: a signal raised inside its start-up is caught by
Ray's code (the run hung, or ended as a backend failure with Ray's agents left running), and
its session logs stayed in the temp folder. Here the instance runs in a session of its own,
with its session files in a guarded temp folder (harness/watchdog.py), so Ctrl-C stops it and
removes the folder as any child's, and so does the guard if the harness is killed outright.
Process mechanics only: this module never imports Ray (harness.adapter.ray_executor does).
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

from harness.child import TERM_GRACE_SECONDS, ChildProcess
from harness.errors import AdapterError
from harness.watchdog import guarded_temp_folder

LOCAL_OBJECT_STORE_BYTES = 512 * 1024 * 1024  # a local instance holds only the corpora; Ray's default is 30% of RAM
LOCAL_START_SECONDS = 120.0        # `ray start` of a local instance, on a busy machine
LOCAL_FOLDER_PREFIX = "rg-ray-"    # short: Ray's socket paths live under it (_short_temp_dir)
RAY_SOCKET_PATH_BYTES = 107        # the longest unix socket path Linux takes
RAY_SESSION_SOCKET_CHARS = 64      # "/session_2026-12-02_07-41-53_509974_2017812/sockets/plasma_store"
WORKER_NICENESS_ENV = "RAY_worker_niceness"  # Ray's niceness for its workers (15 unless set), and their adapters'


def start(stack: contextlib.ExitStack, *, cpus: int) -> str:
    """Start a one-node Ray instance as our own child; its GCS address. Stopped when `stack` unwinds.

    Waited for in plain sleeps a signal can end, until `ray start` writes the address file.
    """
    folder = stack.enter_context(guarded_temp_folder(LOCAL_FOLDER_PREFIX, dir=_short_temp_dir()))
    argv = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", f"--port={_free_port()}",
            f"--temp-dir={folder}", f"--num-cpus={cpus}", f"--object-store-memory={LOCAL_OBJECT_STORE_BYTES}",
            "--include-dashboard=false", "--disable-usage-stats", "--node-ip-address=127.0.0.1"]
    # Workers inherit the instance's environment: the driver's harness first on their path. Ray
    # starts its workers at niceness 15, and each adapter would inherit it: 0, as a local run's.
    head = ChildProcess.spawn(argv, log_path=folder / "ray-start.log",
                              env={"PYTHONPATH": python_path(), **token(), WORKER_NICENESS_ENV: "0"},
                              stderr="file", talk=False)
    stack.callback(_stop_instance, head)
    address_file = folder / "ray_current_cluster"  # written by `ray start` once every Ray process is up
    deadline = time.monotonic() + LOCAL_START_SECONDS
    while not (address_file.exists() and address_file.read_text().strip()):
        ended = head.how_it_ended(timeout=0)
        if ended is not None or time.monotonic() > deadline:
            why = ended.replace("adapter ", "", 1) if ended else f"not ready within {LOCAL_START_SECONDS:g} s"
            tail = head.stderr_tail(max_lines=3).strip().replace("\n", " | ")
            raise AdapterError(f"--executor ray: cannot start a local Ray instance: `ray start` {why}"
                               + (f": {tail}" if tail else ""))
        time.sleep(0.1)
    return address_file.read_text().strip()


@functools.cache
def token() -> dict[str, str]:
    """The token authentication of the instances this process starts: a random token of their own.

    Ray's default shares ~/.ray/auth_token among every instance of the user, so another run
    starting at the same moment could replace it under ours (a driver then refused). One token
    per process, as Ray's driver side caches what it read.
    """
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


def _stop_instance(head: ChildProcess) -> None:
    """Stop the instance's process group, then whatever Ray started in the session (its workers
    take process groups of their own, within our session)."""
    session = head.pid
    head.stop(grace_seconds=0)
    for pid in _session_members(session):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + TERM_GRACE_SECONDS
    while _session_members(session) and time.monotonic() < deadline:
        time.sleep(0.05)


def _session_members(session: int) -> list[int]:
    """Live processes (not zombies) whose session id is `session`, from /proc (empty where there is none)."""
    members = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        if fields[0] != "Z" and int(fields[3]) == session:  # state ppid pgrp session ...
            members.append(int(entry.name))
    return members


def _short_temp_dir() -> str | None:
    """The temp folder, or /tmp when the temp folder's path is too long for Ray's sockets.

    Ray puts unix sockets in its session folder (`session_<date>_<pid>/sockets/plasma_store`,
    about 64 characters), and a socket path may not exceed 107 bytes: a long $TMPDIR (macOS
    gives about 50 characters) would stop `ray start`. None: the default temp folder.
    """
    base = tempfile.gettempdir()
    room = RAY_SOCKET_PATH_BYTES - RAY_SESSION_SOCKET_CHARS - len(LOCAL_FOLDER_PREFIX) - 10  # "/", 8 random, "/"
    return None if len(os.fsencode(base)) <= room or not os.path.isdir("/tmp") else "/tmp"


def _free_port() -> int:
    """A TCP port free on loopback now, for the instance's GCS (the default 6379 may be another's)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def python_path() -> str:
    """The driver's harness and working directory first, so the local instance's workers import this harness."""
    here = str(Path(__file__).resolve().parent.parent.parent)
    parts = [here, os.getcwd(), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return os.pathsep.join(dict.fromkeys(parts))
