"""harness.report.document: the typed Report, its JSON in both directions, its exit code."""

import dataclasses
import json
import math

import pytest

from harness.errors import EXIT_GATE_FAILED, EXIT_OK
from harness.records import GateResult
from harness.report.document import REPORT_FORMAT, AdapterStart, Backend, Report, ReportError, exit_code_for
from harness.report.reading import read_document, read_report, report_from_json
from tests.conftest import FIXTURES
from tests.reports import crashed_report, gated_report

OLD_REPORT = FIXTURES / "reports" / "written-by-0.1.0-fcbe801.json"
# Format 1 as the last commit before format 2 wrote it (gates without numbers), same command.
FORMAT_1_REPORT = FIXTURES / "reports" / "written-by-0.1.0-c77b1e2.json"


def test_json_round_trip_is_exact():
    report = gated_report()
    text = report.to_json()
    again = report_from_json(text)
    assert again.to_json() == text
    assert again.exit_code == EXIT_GATE_FAILED and again.gates == report.gates
    assert again.sets[0].queries[0].ids == report.sets[0].queries[0].ids
    # frozen all the way down: no field of the record can be reassigned
    with pytest.raises(dataclasses.FrozenInstanceError):
        again.sets[0].queries[0].ids = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        again.provenance.backend.label = "x"  # type: ignore[misc]


def test_the_json_document_has_the_documented_shape():
    document = json.loads(gated_report().to_json())
    assert document["report_format"] == REPORT_FORMAT == 2
    assert set(document) == {"report_format", "complete", "error", "provenance", "sets", "gates", "exit_code",
                             "flips", "baseline_latency"}
    gates = {(g["gate"], g["category"]): g for g in document["gates"]}
    # By hand: the baseline (BASE_ANSWERS) finds all 5 scored queries' documents, the run loses tiny-01's: 4/5.
    recall = gates[("recall", None)]
    assert (recall["metric"], recall["baseline"], recall["current"], recall["limit"], recall["unit"]) == \
        ("recall@10", 1.0, pytest.approx(0.8), 0.02, "fraction")
    assert len(recall["ci"]) == 2 and recall["ci"][0] < 0 and 0 <= recall["p_value"] <= 1
    # p95 of the 7 latencies: nearest rank ceil(6.65) = 7th; 250 ms now (tiny-04), 7 ms in the baseline; budget 200
    latency = gates[("latency", None)]
    assert (latency["metric"], latency["baseline"], latency["current"], latency["limit"], latency["unit"]) == \
        ("p95", 7.0, 250.0, 200.0, "ms")
    assert document["flips"] == {"tiny": [{"qid": "tiny-01", "lost": ["doc-01"], "gained": []}]}
    # the baseline's latencies 1..7 ms: p50 = rank ceil(3.5) = 4 ms, p95 = rank 7 = 7 ms
    assert document["baseline_latency"] == {"tiny": {"n": 7, "p50": 4.0, "p95": 7.0, "max": 7.0}}
    row = document["sets"][0]["queries"][0]
    # tiny-01 answered in 1.5 ms with doc-09 only: recall 0, nothing found
    assert (row["qid"], row["latency_ms"], row["ids"], row["found"]) == ("tiny-01", 1.5, ["doc-09"], [])
    assert document["sets"][0]["aggregates"]["overall"]["recall@10"] == pytest.approx(4 / 5)


def test_a_report_written_by_the_previous_version_still_loads():
    # Written by `python -m harness --set tests/fixtures/sets/tiny --baseline ...` at commit fcbe801.
    report = read_report(OLD_REPORT)
    assert report.exit_code == 1 and report.complete
    assert [g.gate for g in report.failed_gates] == ["contract"]
    assert report.provenance.backend.label == "bm25"
    assert report.sets[0].query_count == 7
    again = json.loads(report.to_json())
    # nothing lost on the way; gates gained their status (pass / fail: 0.1.0 knew no warnings)
    assert [g.pop("status") for g in again["gates"]] == ["pass" if g["passed"] else "fail" for g in again["gates"]]
    assert again.pop("report_format") == 2
    assert again == {key: value for key, value in json.loads(OLD_REPORT.read_text()).items() if key != "report_format"}


def test_a_format_1_report_still_loads_and_renders():
    report = read_report(FORMAT_1_REPORT)
    assert report.exit_code == 1 and [g.gate for g in report.failed_gates] == ["contract"]
    assert report.flips is None and all(g.metric is None and g.baseline is None for g in report.gates)
    again = json.loads(report.to_json())
    assert again.pop("report_format") == 2
    assert again == {key: value for key, value in json.loads(FORMAT_1_REPORT.read_text()).items()
                     if key != "report_format"}
    from harness.report.html import render_run_html
    from harness.report.markdown import render_markdown
    assert "FAILED: 1 of" in render_markdown(report) and "FAILED: 1 of" in render_run_html(report)


def test_a_report_of_an_unknown_format_is_one_versioned_line():
    document = json.loads(gated_report().to_json())
    document["report_format"] = 7
    with pytest.raises(ReportError) as error:
        read_document(document, "r.json")
    message = str(error.value)
    assert message.startswith("r.json: report_format: 7 is not a report format this harness reads (1, 2)")
    assert "\n" not in message


@pytest.mark.parametrize("path, value, expected", [
    (("sets", 0, "queries", 0, "ids"), "doc-01", "r.json: sets[0].queries[0].ids: must be a list, got \"doc-01\""),
    (("sets", 0, "queries", 0, "latency_ms"), None, "r.json: sets[0].queries[0].latency_ms: must be a finite number"),
    (("sets", 0, "k"), "10", "r.json: sets[0].k: must be an integer, got \"10\""),
    (("gates", 0, "passed"), 1, "r.json: gates[0].passed: must be true or false, got 1"),
    (("provenance", "backend"), None, "r.json: provenance.backend: must be an object, got null"),
    (("sets", 0, "queries", 0, "scores"), [1.0, 2.0], "r.json: sets[0].queries[0].scores: has 2 entries for 1 ids"),
])
def test_a_bad_field_is_named_in_one_line(path, value, expected):
    document = json.loads(gated_report().to_json())
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ReportError) as error:
        read_document(document, "r.json")
    assert str(error.value).startswith(expected) and "\n" not in str(error.value)


def test_a_missing_field_is_named():
    document = json.loads(gated_report().to_json())
    del document["sets"][0]["queries"][2]["found"]
    with pytest.raises(ReportError, match=r"^r.json: sets\[0\].queries\[2\].found: missing$"):
        read_document(document, "r.json")


def test_json_that_is_not_json_or_too_deep(tmp_path):
    with pytest.raises(ReportError, match="not valid JSON"):
        report_from_json("{", "x.json")
    with pytest.raises(ReportError, match="nested too deeply"):
        report_from_json("[" * 100_000, "x.json")


def test_report_json_is_strict_json():
    report = gated_report()
    result = report.sets[0]
    broken = dataclasses.replace(result, latency=dataclasses.replace(result.latency, p95=math.nan))
    with pytest.raises(ValueError):
        dataclasses.replace(report, sets=(broken,)).to_json()


def test_exit_code_of_a_run():
    passed, failed = GateResult("s", "recall", True, ""), GateResult("s", "recall", False, "")
    assert exit_code_for(None, []) == EXIT_OK
    assert exit_code_for(None, [passed]) == EXIT_OK
    assert exit_code_for(None, [passed, failed]) == EXIT_GATE_FAILED
    assert exit_code_for(3, [passed]) == 3 and exit_code_for(143, []) == 143
    assert crashed_report().exit_code == 3 and not crashed_report().complete


def test_who_answered_is_the_recorded_identity_else_the_banner_and_command():
    provenance = dataclasses.replace(gated_report().provenance, backend=Backend("x", ("python", "-m", "adapters.x")),
                                     adapter=AdapterStart(banner={"ready": True, "name": "x", "version": "2"}))
    assert (provenance.identity().name, provenance.identity().version) == ("x", "2")  # no record: the banner
    assert provenance.identity().command == ("python", "-m", "adapters.x")
    recorded = dataclasses.replace(provenance, extra={"backend_identity": {"name": "y", "command": ["y"]}})
    assert (recorded.identity().name, recorded.identity().version, recorded.identity().command) == ("y", None, ("y",))
    old = read_report(OLD_REPORT).provenance.identity()  # written before backend_identity was: its banner, its argv
    assert (old.name, old.version, old.command) == ("bm25", "1.0.0", ("python", "-m", "adapters.bm25"))
