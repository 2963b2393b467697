"""Console, Markdown and JUnit renderers, from in-memory reports (no adapter process), against golden files.

Every golden comparison is followed by asserts on the lines a reader relies on, with numbers
worked by hand from tests/reports.py, so refreshing a golden file cannot hide a wrong number.
"""

import re
import xml.etree.ElementTree as ET

from harness.measured import Latency
from harness.report.console import render_text
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown
from harness.report.terminal import Style
from tests.gfm import assert_valid_gfm
from tests.golden import assert_matches_golden
from tests.output_reports import crashed_with_tail, gated_with_baseline
from tests.reports import crashed_report, gated_report

WRITTEN = [("report", "out/report.json"), ("adapter log", "out/report.adapter.log")]
# tiny (tests/reports.py): scored a = tiny-01, 02, 05; b = tiny-03, 04. The current run loses
# tiny-01's only relevant document: overall 5/5 -> 4/5 (-20.0 points), a 3/3 -> 2/3 (-33.3), b 2/2.


def test_console_of_a_failing_run():
    text = render_text(gated_with_baseline(), written=WRITTEN)
    assert_matches_golden("console-failing.txt", text)
    lines = text.splitlines()
    assert lines[0] == "backend: bm25 (bm25 1)  condition: warm"
    assert lines[1] == "baseline: baselines/current.json (recorded 2026-11-30T09:15:00+00:00 for bm25 at 1a2b3c4d5e6f)"
    # tiny-01 lost its document and tiny-04 broke rank_before: 2 fail; tiny-06 is xfail (doc-06 not
    # returned); tiny-02, 03, 05 found theirs and the negative probe tiny-07 returned nothing: 4 pass.
    assert "queries: 2 fail, 4 pass, 1 xfail" in lines
    gates = [line for line in lines if line[:5] in ("FAIL ", "WARN ", "PASS ")]
    # the set's failures first, each a line; then the category that failed, as a row of its set's table
    assert [line.split()[:2] for line in gates] == [["FAIL", "recall"], ["FAIL", "latency"], ["FAIL", "contract"],
                                                    ["FAIL", "a"]]
    assert "categories of tiny beyond the limit (details: -v or the report):" in lines
    assert "FAIL a         recall@10     1.000     0.667  -33.3 pts" in lines
    assert gates[0].startswith("FAIL recall      tiny overall recall@10 dropped 20.00 points: baseline 1.0000, "
                               "now 0.8000")
    assert "FAIL latency     tiny p95 latency 250.0 ms exceeds the budget of 200 ms; baseline 7.0 ms, across runs and machines" in lines
    assert "passed: 3 gates (query-count 1, recall 1, judged 1); -v lists them" in lines
    assert lines[-2] == "report: out/report.json  adapter log: out/report.adapter.log"
    assert lines[-1] == "FAILED: 4 of 7 gates (worst: tiny overall recall@10 -20.0 points)"  # the set's, not a's
    assert "None" not in text and "" not in [line.strip() for line in lines[:2]]


def test_console_verbose_lists_passes_after_failures():
    lines = render_text(gated_report(), verbose=True).splitlines()
    statuses = [line[:4] for line in lines if line[:5] in ("FAIL ", "PASS ")]
    assert statuses == ["FAIL"] * 4 + ["PASS"] * 3
    assert "PASS recall      tiny/b recall@10 1.0000 (baseline 1.0000)" in lines
    # the verdict names the worst set-level figure: 1.0 -> 0.8 overall (a's -33.3 is a category's)
    assert lines[-1] == "FAILED: 4 of 7 gates (worst: tiny overall recall@10 -20.0 points)"


def test_console_of_a_crashed_run():
    text = render_text(crashed_report(), written=[("partial report", "r.json")])
    assert_matches_golden("console-crashed.txt", text)
    lines = text.splitlines()
    assert "set tiny (revision 1, 7 queries, k=10)  INCOMPLETE (3 of 7 answered)" in lines
    assert lines[-1] == "INCOMPLETE: the backend failed after 3 of 7 queries; no gate was checked (exit 3)"
    assert "None" not in text


def test_console_never_prints_none_or_an_empty_queries_line():
    import dataclasses
    report = crashed_report()
    nothing = dataclasses.replace(report.sets[0], queries=(), latency=Latency())
    report = dataclasses.replace(report, sets=(nothing,),
                                 provenance=dataclasses.replace(report.provenance, condition=None))
    text = render_text(report)
    assert text.splitlines()[0] == "backend: bm25 (bm25 1)"  # no `condition: None`
    assert "queries: none answered" in text.splitlines()
    assert "None" not in text and "latency ms" not in text


def test_console_colour_is_only_where_asked():
    plain = render_text(gated_report())
    assert "\033[" not in plain
    coloured = render_text(gated_report(), style=Style(True))
    assert "\033[1;31mFAIL\033[0m recall" in coloured
    assert coloured.splitlines()[-1].startswith("\033[1;31mFAILED: 4 of 7 gates")
    assert re.sub(r"\033\[[0-9;]*m", "", coloured) == plain  # colour adds codes, never text


def test_markdown_of_a_failing_run():
    text = render_markdown(gated_with_baseline())
    assert_matches_golden("summary-failing.md", text)
    lines = text.splitlines()
    assert lines[0] == "### retrieval-gate: FAILED"
    assert lines[2] == "**FAILED: 4 of 7 gates (worst: tiny overall recall@10 -20.0 points)**"
    assert "Gates: 4 failed, 0 warned, 3 passed." in lines
    assert "- Backend: `bm25 (bm25 1)`" in lines
    assert "- Baseline: `baselines/current.json (recorded 2026-11-30T09:15:00+00:00 for bm25 at 1a2b3c4d5e6f)`" in lines
    # failures (with their queries) come before the tables
    assert text.index("#### Failures") < text.index("#### Gated values")
    # each flipped query once, folded under its set (not under every gate naming it)
    assert text.count("`tiny-01` lost `doc-01`") == 1
    assert "- `tiny-01` lost `doc-01` — “how is the config file parsed”" in lines
    assert "| a | recall@10 | 1.000 | 0.667 | -33.3 pts | ❌ FAIL |" in lines  # the category table
    # baseline, current, change and what the scope can detect for each gated value; p95 baseline 7 ms
    # (tiny-07), now 250 ms (tiny-04); recall over 5 units: the sign-flip test's smallest p, 2/2^5, is above 0.05,
    # so no change is detectable ("none"; "-" where detectability does not apply)
    assert "| tiny | recall@10 overall | 1.000 | 0.800 | -20.0 pts | none | ❌ FAIL |" in lines
    assert "| tiny | p95 latency ms | 7.0 | 250.0 | +243.0 ms | - | ❌ FAIL |" in lines
    assert "| tiny | queries | 7 | 7 | 0 | - | ✅ pass |" in lines
    assert "| a | recall@10 | 1.000 | 0.667 | -33.3 pts | ❌ FAIL |" in lines
    # contracts: none broken in the baseline, one (tiny-04) now; judged@10 shown beside the gated metrics
    assert "| tiny | broken contracts | 0 | 1 | +1 | - | ❌ FAIL |" in lines
    assert_valid_gfm(text)


def test_markdown_of_a_crashed_run_fences_the_stderr_tail():
    text = render_markdown(crashed_with_tail())
    assert_matches_golden("summary-crashed.md", text)
    lines = text.splitlines()
    assert lines[0] == "### retrieval-gate: INCOMPLETE"
    first = lines.index("```text")
    assert lines[first + 1] == "adapter stderr (last lines):"
    assert lines[first + 2] == "  | Traceback (most recent call last):"
    assert "KeyError" in lines[first + 5] and lines[first + 6] == "```"
    assert_valid_gfm(text)


def test_markdown_without_gates_or_baseline():
    text = render_markdown(crashed_report())
    assert "Gated values" not in text and "Baseline" not in text
    assert_valid_gfm(text)


def test_junit_counts_gates_and_errors():
    root = ET.fromstring(render_junit(gated_report()))
    # 7 gates on tiny: count, recall overall / a / b, latency, contract, judged; 3 fail (recall overall, a; latency; contract)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("7", "4", "0")
    failed = [case.get("name") for case in root.iter("testcase") if case.find("failure") is not None]
    assert failed == ["recall overall", "recall a", "latency overall", "contract overall"]
    crashed = ET.fromstring(render_junit(crashed_report()))
    assert crashed.get("errors") == "1" and crashed.find(".//error").get("message").startswith("query tiny-04")


def test_junit_names_the_backend_and_the_baseline_it_was_gated_against():
    import dataclasses
    report = gated_report()
    baseline = {"path": "baselines/current.json", "backend": "'bm25' 1", "created": "2026-11-30T09:15:00+00:00",
                "git_commit": "1a2b3c4d"}
    report = dataclasses.replace(report, provenance=dataclasses.replace(report.provenance, extra={"baseline": baseline}))
    suite = ET.fromstring(render_junit(report)).find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties["baseline.path"] == "baselines/current.json"
    assert properties["baseline.created"] == "2026-11-30T09:15:00+00:00" and properties["baseline.git_commit"] == "1a2b3c4d"
    assert properties["backend"].startswith("bm25")
