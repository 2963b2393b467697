"""raise_for_gates / failure_text: the few lines a failed verdict shows in a test, on in-memory reports."""

import pytest

from harness.errors import GatesFailed
from harness.report.failure import GATES_SHOWN, failure_text, raise_for_gates
from harness.report.verdict import verdict_of
from tests.reports import BASE_ANSWERS, crashed_report, gated_report


def test_a_passing_report_is_returned():
    report = gated_report(BASE_ANSWERS)
    assert report.exit_code == 0 and raise_for_gates(report) is report


def test_failed_gates_are_the_verdict_line_one_line_each_and_the_report_path():
    report = gated_report()  # CURRENT_ANSWERS: recall, latency and contract gates fail
    with pytest.raises(GatesFailed) as raised:
        raise_for_gates(report, "out/report.json")
    lines = str(raised.value).splitlines()
    failed = report.failed_gates
    assert raised.value.exit_code == 1 and len(failed) >= 2
    assert lines[0] == verdict_of(report).line
    assert sorted(lines[1:-1]) == sorted(f"  FAIL {g.gate} {g.message}" for g in failed)
    assert lines[-1] == "report: out/report.json"


def test_a_failed_backend_shows_its_error_and_exit_code():
    with pytest.raises(GatesFailed) as raised:
        raise_for_gates(crashed_report())
    assert raised.value.exit_code == 3
    assert str(raised.value).splitlines() == [verdict_of(crashed_report()).line,
                                              "  error: query tiny-04: adapter exited with status 7 before answering"]


def test_many_failed_gates_are_counted_past_the_first_few():
    import dataclasses
    report = gated_report()
    gate = report.failed_gates[0]
    many = dataclasses.replace(report, gates=(gate,) * (GATES_SHOWN + 3))
    lines = failure_text(many).splitlines()
    assert len(lines) == 1 + GATES_SHOWN + 1 and lines[-1] == "  ... and 3 more failed gates"
