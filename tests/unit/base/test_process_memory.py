"""PeakMemory's arithmetic on scripted looks at a group (harness/process_memory.py): each process's last
high-water mark, summed; a process gone keeps its last mark; a lower mark is a new program (exec)."""

from __future__ import annotations

from harness import process_memory
from harness.process_memory import PeakMemory


def test_the_peak_sums_the_last_marks_and_an_exec_starts_a_new_one(monkeypatch):
    looks = iter([
        {10: (100, 300)},                       # the leader, having peaked at 300 KiB
        {10: (100, 300), 11: (290, 300)},      # its child between fork and exec: the leader's pages again
        {10: (100, 300), 11: (40, 50)},        # the child exec'd: a new program, a new mark
        {10: (120, 400)},                       # the child ended (its last mark stays); the leader grew
    ])
    monkeypatch.setattr(process_memory, "group_memory", lambda group_id: next(looks))
    peak = PeakMemory(10)
    expected = [300, 600, 350, 450]  # by hand: the sum of each pid's latest VmHWM
    for total in expected:
        peak.sample()
        assert peak.peak_kib == total
    assert peak.peak_mib == round(450 / 1024, 1)


def test_no_look_found_anything_is_not_measured(monkeypatch):
    monkeypatch.setattr(process_memory, "group_memory", lambda group_id: {})
    peak = PeakMemory(10)
    peak.sample()
    assert peak.peak_kib is None and peak.peak_mib is None
