"""Resource figures measured on real adapter processes (tests/fixtures/adapters/hungry.py): start-up to the
banner, the peak resident memory of the process group, the banner's index size; and what a run records.

Assertions are ranges a loaded machine cannot break: a peak at least what the adapter was told to
write (its pages are resident once written), a start-up at least the sleep it was told to take.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import harness
from harness import process_memory
from harness.adapter.driver import AdapterProcess
from harness.adapter.protocol import Request
from harness.gating.baseline import Baseline, build_baseline
from harness.process_memory import PeakMemory
from tests.conftest import FIXTURES, TINY_SET

HUNGRY = FIXTURES / "adapters" / "hungry.py"
PYTHON_MIB = 200  # far above what an idle interpreter holds: an upper bound no machine state reaches

pytestmark = pytest.mark.skipif(not process_memory.measurable(), reason="needs /proc (Linux)")


def hungry(tmp_path: Path, *args: str) -> AdapterProcess:
    return AdapterProcess([sys.executable, str(HUNGRY), *args], log_path=tmp_path / "adapter.log",
                          expect_banner=True, startup_timeout=60.0, query_timeout=60.0)


def test_the_peak_counts_memory_freed_before_the_banner(tmp_path):
    # 96 MiB written then freed before the banner: resident memory now is small again, but the kernel's
    # high-water mark keeps the peak, so no sample has to land on it.
    with hungry(tmp_path, "--allocate-mib", "96", "--free") as adapter:
        adapter.ask(Request(kind="code", query="q", k=3, qid="q1"))
        resident_now = process_memory.group_rss_kib(adapter.pid) / 1024
    assert 96 <= adapter.peak_rss_mib < 96 + PYTHON_MIB
    assert resident_now < 96  # what a VmRSS sample alone would have seen


def test_the_peak_sums_the_processes_of_the_group(tmp_path):
    with hungry(tmp_path, "--allocate-mib", "40", "--child-mib", "64") as adapter:
        adapter.ask(Request(kind="code", query="q", k=3, qid="q1"))
    assert 40 + 64 <= adapter.peak_rss_mib < 40 + 64 + 2 * PYTHON_MIB


def test_startup_is_at_least_the_sleep_before_the_banner(tmp_path):
    with hungry(tmp_path, "--sleep", "0.4") as adapter:
        pass
    assert adapter.startup_seconds >= 0.4


def test_without_proc_the_peak_is_not_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(process_memory, "_PROC", tmp_path / "no-proc")
    assert not process_memory.measurable()
    with hungry(tmp_path, "--allocate-mib", "8") as adapter:
        pass
    assert adapter.peak_rss_mib is None
    assert process_memory.group_rss_kib(1) is None
    assert PeakMemory(1).start().peak_kib is None


def test_a_run_records_the_resources_in_the_report_and_the_baseline(tmp_path):
    argv = [sys.executable, str(HUNGRY), "--allocate-mib", "48", "--sleep", "0.3", "--index-bytes", "123456"]
    report = harness.gate([str(TINY_SET)], backend=argv, baseline=None, expect_banner=True,
                          log_path=tmp_path / "adapter.log")
    assert report.complete
    (result,) = report.sets
    resources = result.resources
    assert resources.index_bytes == 123456
    assert resources.startup_seconds >= 0.3
    assert 48 <= resources.peak_rss_mib < 48 + PYTHON_MIB
    assert result.to_dict()["resources"] == {"startup_seconds": resources.startup_seconds,
                                             "peak_rss_mib": resources.peak_rss_mib, "index_bytes": 123456}
    baseline = Baseline.from_document(build_baseline(list(report.sets), report.provenance.to_dict()),
                                      tmp_path / "b.json")
    assert baseline.sets[result.name].resources == resources
