"""Console, Markdown and JUnit renderers, from in-memory reports (no adapter process), against golden files."""

import xml.etree.ElementTree as ET

from harness.report.console import render_text
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown
from tests.golden import assert_matches_golden
from tests.reports import crashed_report, gated_report


def test_console_of_a_failing_run():
    text = render_text(gated_report())
    assert_matches_golden("console-failing.txt", text)
    # independent of the golden file: what a reader relies on
    assert "FAIL recall      tiny overall recall@10 dropped 20.00 points: baseline 1.0000, now 0.8000" in text
    assert "FAIL latency     tiny p95 latency 250.0 ms exceeds the budget of 200 ms" in text
    # tiny-01 lost its document and tiny-04 broke rank_before: 2 fail; tiny-06 is xfail (doc-06 not
    # returned); tiny-02, 03, 05 found theirs and the negative probe tiny-07 returned nothing: 4 pass.
    assert "queries: 2 fail, 4 pass, 1 xfail" in text.splitlines()


def test_console_of_a_crashed_run():
    text = render_text(crashed_report())
    assert_matches_golden("console-crashed.txt", text)
    assert "INCOMPLETE" in text


def test_markdown_of_a_failing_run():
    text = render_markdown(gated_report())
    assert_matches_golden("summary-failing.md", text)
    assert text.startswith("**retrieval-gate: FAILED**")
    assert "| tiny | overall | 5 | 0.800 | 0.800 |" in text


def test_markdown_of_a_crashed_run():
    text = render_markdown(crashed_report())
    assert_matches_golden("summary-crashed.md", text)
    assert text.startswith("**retrieval-gate: backend failed, incomplete run**")


def test_junit_counts_gates_and_errors():
    root = ET.fromstring(render_junit(gated_report()))
    # 6 gates on tiny: count, recall overall / a / b, latency, contract; 3 fail (recall overall, a; latency; contract)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("6", "4", "0")
    failed = [case.get("name") for case in root.iter("testcase") if case.find("failure") is not None]
    assert failed == ["recall overall", "recall a", "latency overall", "contract overall"]
    crashed = ET.fromstring(render_junit(crashed_report()))
    assert crashed.get("errors") == "1" and crashed.find(".//error").get("message").startswith("query tiny-04")
