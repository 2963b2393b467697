"""Paired latency against real child processes: both adapters asked each query in ABBA order, on one CPU."""

import os
import sys

import pytest

import harness
from harness.errors import UsageError
from tests.conftest import FIXTURES, TINY_SET

TRACED = FIXTURES / "adapters" / "traced.py"


def traced(trace, name):
    return [sys.executable, str(TRACED), "--trace", str(trace), "--name", name]


def test_both_backends_answer_each_query_in_abba_order_on_one_cpu(tmp_path):
    trace = tmp_path / "trace.txt"
    report = harness.gate([str(TINY_SET)], backend=traced(trace, "run"), baseline=None,
                          baseline_adapter=traced(trace, "base"))
    lines = trace.read_text().splitlines()
    cpus = {line.split()[0]: line.split()[2] for line in lines if line.split()[1] == "cpus"}
    asked = [line.split() for line in lines if line.split()[1] != "cpus"]
    qids = [q.qid for q in report.sets[0].queries]
    assert len(qids) == 7
    # one untimed warm-up query each (the first query), then per query: run, base / base, run / run, base ...
    expected = [["run", qids[0]], ["base", qids[0]]]
    for index, qid in enumerate(qids):
        pair = [["run", qid], ["base", qid]]
        expected += pair if index % 2 == 0 else pair[::-1]
    assert asked == expected
    if hasattr(os, "sched_getaffinity"):
        assert cpus["run"] == cpus["base"] and "," not in cpus["run"]  # the same one CPU
    result = report.sets[0]
    assert result.latency_paired and result.base_latency.n == 7
    assert all(q.base_latency_seconds is not None and q.base_latency_seconds > 0 for q in result.queries)
    paired = report.provenance.extra["paired_latency"]
    assert paired["order"] == "ABBA" and paired["baseline_banner"]["version"] == "base"
    document = report.to_dict()["sets"][0]
    assert document["base_latency_ms"]["n"] == 7 and "base_latency_ms" in document["queries"][0]


def test_paired_latency_needs_one_local_worker(tmp_path):
    with pytest.raises(UsageError, match="--baseline-adapter"):
        harness.gate([str(TINY_SET)], backend=traced(tmp_path / "t", "run"), baseline=None, workers=2,
                     baseline_adapter=traced(tmp_path / "t", "base"))
