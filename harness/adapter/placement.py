"""Where timed processes run: the harness's timing thread and every adapter it starts, pinned to one CPU.

On a 2-CPU machine a round trip between processes on different CPUs costs about 55 us more than on
one CPU, so a sub-millisecond backend's latency moves 20-30 % with where the scheduler puts it.
Paired latency (`--baseline-adapter`) and `benchmarks/overhead.py` pin the calling thread to one
CPU before they start their adapters, which inherit that placement: both sides of a comparison
then run where the other runs. Where `os.sched_setaffinity` is missing (macOS, Windows) nothing is
pinned and both sides are left to the scheduler alike.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


def one_cpu() -> int | None:
    """The lowest-numbered CPU this thread may run on, or None where affinity cannot be read."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is None:
        return None
    try:
        return min(getaffinity(0))
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def pinned(cpu: int | None = None) -> Iterator[int | None]:
    """Pin the calling thread to `cpu` (default `one_cpu()`) inside the block; yield the CPU, or None when
    nothing was pinned. Processes started inside inherit the placement; the thread's own is restored after."""
    setaffinity, getaffinity = getattr(os, "sched_setaffinity", None), getattr(os, "sched_getaffinity", None)
    cpu = one_cpu() if cpu is None else cpu
    if setaffinity is None or getaffinity is None or cpu is None:
        yield None
        return
    before = getaffinity(0)
    try:
        setaffinity(0, {cpu})
    except OSError:  # a CPU this process may not use: leave it to the scheduler, as for both sides
        yield None
        return
    try:
        yield cpu
    finally:
        setaffinity(0, before)
