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


def test_every_output_says_the_baseline_latency_was_paired(tmp_path, capsys):
    import json
    import shlex

    from harness.commands.cli import main
    trace = tmp_path / "trace.txt"
    adapter = ["--adapter", "--", *traced(trace, "run")]
    baseline, policy = tmp_path / "baseline.json", tmp_path / "policy.json"
    policy.write_text(json.dumps({"format": 1, "latency": {"min_samples": 5}}))
    assert main(["--set", str(TINY_SET), "--update-baseline", "--yes", "--baseline", str(baseline), "--quiet",
                 "--out", str(tmp_path / "first.json"), *adapter]) == 0
    capsys.readouterr()
    outputs = {"--summary": tmp_path / "s.md", "--junit": tmp_path / "j.xml", "--html": tmp_path / "r.html"}
    code = main(["--set", str(TINY_SET), "--baseline", str(baseline), "--policy", str(policy), "-v",
                 "--out", str(tmp_path / "r.json"), *[str(part) for pair in outputs.items() for part in pair],
                 "--baseline-adapter", shlex.join(traced(trace, "base")), *adapter])
    captured = capsys.readouterr()
    out = captured.out
    assert code in (0, 1), captured.err  # the verdict is the machine's; how it was measured is what is checked
    assert "baseline paired in this run" in out and "latency-paired" in out
    for path in outputs.values():
        assert "paired in this run" in path.read_text(), path
    document = json.loads((tmp_path / "r.json").read_text())
    assert "paired in this run" in next(g["message"] for g in document["gates"] if g["gate"] == "latency-paired")
    assert document["baseline_latency"]["tiny"] == document["sets"][0]["base_latency_ms"]
    # without the baseline's backend, every output says the comparison is across runs
    assert main(["--set", str(TINY_SET), "--baseline", str(baseline), "--out", str(tmp_path / "r2.json"),
                 "--summary", str(tmp_path / "s2.md"), *adapter]) in (0, 1)
    assert "baseline across runs and machines" in capsys.readouterr().out
    assert "across runs and machines" in (tmp_path / "s2.md").read_text()


def test_the_baseline_backend_failing_is_a_backend_failure_naming_it(tmp_path):
    crashing = [sys.executable, str(FIXTURES / "adapters" / "crash_after.py"), "2"]
    report = harness.gate([str(TINY_SET)], backend=traced(tmp_path / "t", "run"), baseline=None,
                          baseline_adapter=crashing)
    assert not report.complete and report.exit_code == 3
    assert "crash_after.py" in report.error and "index corrupted" in report.error


def test_a_built_in_backend_can_be_the_baseline_by_name(tmp_path):
    report = harness.gate([str(TINY_SET)], backend=traced(tmp_path / "t", "run"), baseline=None,
                          baseline_adapter="bm25")
    assert report.complete and report.sets[0].latency_paired
    assert report.provenance.extra["paired_latency"]["baseline_adapter"][-2:] == ["-m", "adapters.bm25"]
