"""Placement: the calling thread pinned to one CPU inside the block, children inheriting it, restored after."""

import os
import subprocess
import sys

import pytest

from harness.adapter.placement import one_cpu, pinned

needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity here")


@needs_affinity
def test_pinned_to_one_cpu_inside_and_restored_after():
    before = os.sched_getaffinity(0)
    with pinned() as cpu:
        assert cpu == min(before) == one_cpu()
        assert os.sched_getaffinity(0) == {cpu}
        child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                               capture_output=True, text=True, check=True)
        assert child.stdout.strip() == f"[{cpu}]"  # a process started inside inherits the placement
    assert os.sched_getaffinity(0) == before


@needs_affinity
def test_a_cpu_this_process_may_not_use_is_left_to_the_scheduler():
    before = os.sched_getaffinity(0)
    with pinned(max(before) + 4096) as cpu:
        assert cpu is None and os.sched_getaffinity(0) == before
