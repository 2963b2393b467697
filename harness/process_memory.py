"""Resident memory of a process group from /proc: its sum now, and its peak over a run (`PeakMemory`).

The one home of reading a process group's memory (Linux /proc; elsewhere "not measured", None).
A process group is what the harness starts an adapter in and kills (harness/child.py): the
adapter and every process it starts, unless one leaves the group on purpose (setsid), which
then escapes both the kill and this measurement.

How the peak is measured, and why this way:
- Each process's own peak is the kernel's high-water mark, `VmHWM` in /proc/PID/status: a
  short allocation burst between two looks is not missed, so a one-process adapter's peak is
  exact whenever it is looked at before it ends.
- A daemon thread looks every `SAMPLE_SECONDS`, and the owner looks once more at the moments
  that matter (after the banner, before the stop): a helper process that lives between two
  looks of the thread is seen with the high-water mark it had at the last look.
- The group's peak is the sum of each process's last high-water mark seen: an upper bound of
  the group's resident memory at any one moment (processes that peak at different times are
  each counted at their peak; pages two processes share, such as a forked worker's, are
  counted in each), and exact for one process. The last mark, not the largest: a process that
  exec'd another program starts a new mark, and what a look saw between its fork and its exec
  was its parent's pages.
- Not `resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`: it is the largest single descendant,
  not a tree's sum, covers only children already reaped, and keeps every earlier child of
  this process (a second run in one harness process, pip) in the same figure.
- The thread looks seldom (SAMPLE_SECONDS) and spends its time in file reads, which release
  the GIL: the run's timed loop is not held back (benchmarks/overhead.py measures it).
"""

from __future__ import annotations

import threading
from pathlib import Path

from harness.interrupts import stop_signals_blocked

SAMPLE_SECONDS = 1.0     # between two looks of the sampling thread (a look: ~10 ms with 124 processes here)
KIB_PER_MIB = 1024
_PROC = Path("/proc")


def measurable() -> bool:
    """Whether this system has /proc with per-process status (Linux)."""
    return (_PROC / "self" / "status").exists()


def group_memory(group_id: int) -> dict[int, tuple[int, int]] | None:
    """Each process of the process group `group_id`: pid -> (VmRSS, VmHWM) in KiB; None without /proc.

    A process that ends while it is read is left out; one without memory figures (a zombie) too.
    """
    if not measurable():
        return None
    found: dict[int, tuple[int, int]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            # Fields after the command name (which may hold spaces and parentheses): state ppid pgrp ...
            if int(stat[stat.rindex(")") + 2:].split()[2]) != group_id:
                continue
            figures = {}
            for line in (entry / "status").read_text().splitlines():
                if line.startswith(("VmRSS:", "VmHWM:")):
                    figures[line[:5]] = int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue  # the process ended meanwhile
        if "VmRSS" in figures:
            found[int(entry.name)] = (figures["VmRSS"], figures.get("VmHWM", figures["VmRSS"]))
    return found


def group_rss_kib(group_id: int) -> int | None:
    """Sum of VmRSS over the processes of a process group now, in KiB; None where /proc is missing."""
    memory = group_memory(group_id)
    return None if memory is None else sum(rss for rss, _ in memory.values())


class PeakMemory:
    """The peak resident memory of one process group over its life, sampled by a daemon thread.

    `start()` after the spawn, `sample()` at moments that matter, `stop()` before the group is
    killed (a last look); `peak_kib` is then the sum of each process's last high-water mark seen
    (None where /proc is missing, or when no look found a process).
    """

    def __init__(self, group_id: int) -> None:
        self.group_id = group_id
        self._high_water: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> PeakMemory:
        """Look once now, then every SAMPLE_SECONDS from a daemon thread (nothing on a system without /proc)."""
        if not measurable():
            return self
        self.sample()
        self._thread = threading.Thread(target=self._run, name="peak-memory", daemon=True)
        # Started with the stop signals blocked, as the stderr thread is (harness/child.py): the kernel never
        # picks this thread for them, so the main thread's handlers see every one.
        with stop_signals_blocked():
            self._thread.start()
        return self

    def sample(self) -> None:
        """One look at the group: each process's high-water mark so far."""
        memory = group_memory(self.group_id)
        if not memory:
            return
        with self._lock:  # each process's last mark, not its largest (the module docstring says why)
            self._high_water.update((pid, high_water) for pid, (_, high_water) in memory.items())

    def stop(self) -> None:
        """A last look, then the thread ends (it is a daemon: a stuck read never holds the harness)."""
        if self._stopped.is_set():
            return
        self.sample()
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(SAMPLE_SECONDS + 1.0)

    @property
    def peak_kib(self) -> int | None:
        with self._lock:
            return sum(self._high_water.values()) if self._high_water else None

    @property
    def peak_mib(self) -> float | None:
        """The peak in MiB, to 0.1 MiB (None when not measured)."""
        peak = self.peak_kib
        return None if peak is None else round(peak / KIB_PER_MIB, 1)

    def _run(self) -> None:
        while not self._stopped.wait(SAMPLE_SECONDS):
            self.sample()
