"""Fault injection: real misbehaving adapters run through the real CLI, one subprocess each.

Every fault must end with the documented exit code (3: the backend failed), one
`harness: error:` line naming the query and what happened, within a bounded time, with no
adapter process left behind and a partial report marked `"complete": false`. The stderr
flood is the exception that proves draining: it must complete with exit 0.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, TINY_SET, REPO_ROOT
from tests.process_helpers import adapter_pid, alive

FAULTS = FIXTURES / "faults"
REPO = REPO_ROOT
HARD_LIMIT_SECONDS = 60  # test-side: a harness that has not ended by then is hung
EXIT_BACKEND = 3


def run_harness(tmp_path: Path, fixture: str, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    """`python -m harness` on the tiny set with short timeouts, against `python FIXTURE`."""
    out = tmp_path / "report.json"
    argv = [sys.executable, "-m", "harness", "--set", str(TINY_SET), "--no-gate", "--timeout", "2",
            "--startup-timeout", "3", "--out", str(out), "--adapter", *extra, "--",
            sys.executable, str(FAULTS / fixture)]
    completed = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                               timeout=HARD_LIMIT_SECONDS)
    return completed, out


# fixture, extra CLI args, the query named in the error, what the error says
FAULT_CASES = [
    ("sigkill_mid_response.py", (), "tiny-02", "adapter was killed by SIGKILL before answering"),
    ("half_line_hang.py", (), "tiny-02", "no answer within 2 s"),
    # caught before a later request (the line is waiting in the pipe) or, if every such check
    # raced the adapter, as an unread line once it exits: both messages end like this
    ("double_answer.py", (), None, "no request (answers out of step?)"),
    ("trailing_line.py", (), "tiny-07", "1 line(s) on stdout after its last answer, answering no request"),
    ("lags_by_one.py", (), "tiny-02", "invalid response: answer is for query 'tiny-01' (answers out of step"),
    ("close_stdout.py", (), "tiny-02", "closed its stdout before answering (still running)"),
    ("slow_start.py", ("--expect-banner",), None, "did not print the ready banner within 3 s"),
    ("slow_start.py", (), "tiny-01", "no answer within 5 s (first query, start-up included)"),
    ("huge_line.py", (), "tiny-01", "response line longer than 16777216 bytes (16 MiB)"),
    ("too_many_ids.py", (), "tiny-01", "invalid response: 'ids' has 10001 entries, more than k=10"),
    ("deep_json.py", (), "tiny-01", "invalid response: JSON nested too deeply for the parser"),
]


@pytest.mark.parametrize("fixture, extra, qid, reason", FAULT_CASES,
                         ids=[f"{case[0][:-3]}{'+banner' if case[1] else ''}" for case in FAULT_CASES])
def test_fault_ends_with_exit_3_one_reason_no_orphan_and_a_partial_report(tmp_path, fixture, extra, qid, reason):
    completed, out = run_harness(tmp_path, fixture, *extra)
    assert completed.returncode == EXIT_BACKEND, completed.stderr
    errors = [line for line in completed.stderr.splitlines() if line.startswith("harness: error:")]
    assert len(errors) == 1, completed.stderr
    if qid is None and fixture == "double_answer.py":
        # The extra line is caught before the next request is written, or after the adapter
        # exits: which query is named depends on when it reached the pipe; a query always is.
        assert re.match(r"harness: error: query tiny-0\d: ", errors[0]), errors[0]
    elif qid is None:
        assert errors[0].startswith("harness: error: "), errors[0]  # start-up: no query was asked
    else:
        assert errors[0].startswith(f"harness: error: query {qid}: "), errors[0]
    assert reason in errors[0]
    assert "harness: partial report written to" in completed.stderr
    report = json.loads(out.read_text())
    assert report["complete"] is False and report["exit_code"] == EXIT_BACKEND
    assert report["error"].startswith(errors[0][len("harness: error: "):])
    pid = adapter_pid(tmp_path / "report.adapter.log")
    assert not alive(pid), f"adapter {pid} left running after {fixture}"


def test_answers_already_read_stay_in_the_partial_report(tmp_path):
    completed, out = run_harness(tmp_path, "sigkill_mid_response.py")
    assert completed.returncode == EXIT_BACKEND
    rows = json.loads(out.read_text())["sets"][0]["queries"]
    # tiny-01 was answered before the kill; tiny-02 died mid-line and is not scored as anything
    assert [row["qid"] for row in rows] == ["tiny-01"]
    assert rows[0]["ids"] == [f"how is the config file parsed-{rank}" for rank in (1, 2, 3)]


def test_stderr_flood_of_100_mb_is_drained_and_the_run_completes(tmp_path):
    completed, out = run_harness(tmp_path, "flood_stderr.py")
    assert completed.returncode == 0, completed.stderr
    assert "harness: error" not in completed.stderr
    report = json.loads(out.read_text())
    assert report["complete"] is True and len(report["sets"][0]["queries"]) == 7
    log = tmp_path / "report.adapter.log"
    # 100 MB in whole 1 KiB lines (97,656 of them) plus the pid line and one progress line per query
    flood_bytes = 100 * 1000 * 1000 // 1024 * 1024
    assert log.stat().st_size > flood_bytes
    with open(log, "rb") as handle:
        handle.seek(-4096, os.SEEK_END)
        assert handle.read().rstrip().endswith(b"flood_stderr: end of flood")
    assert not alive(adapter_pid(log))
