"""The run command translates argv onto the API and the API's Report onto outputs and an exit code.

Tested against a stand-in for `harness.api` (as coverage.py tests its command line against a
stand-in `Coverage`): no set is loaded and no adapter started; the stand-in records what the
command asked for and hands back a fixed report from tests/reports.py.
"""

import json
import xml.etree.ElementTree as ET

import pytest

from harness.commands import cli
from harness.errors import SetError
from harness.report.console import render_text
from harness.report.markdown import render_markdown
from tests.reports import crashed_report, gated_report


def test_options_reach_the_api_as_given(stand_in, tmp_path):
    fake = stand_in(gated_report())
    out = tmp_path / "r.json"
    code = cli.main(["--set", "code", "--set", "memory", "--k", "20", "--timeout", "4", "--workers", "2",
                     "--warmup", "3", "--repeats", "2", "--condition", "cold", "--baseline", str(tmp_path / "b.json"),
                     "--known-contract-failures", "--out", str(out), "--adapter", "--", "./mine", "--x"])
    assert code == 1  # the report's exit code
    (_, sets, load), (_, run) = fake.calls
    assert sets == ["code", "memory"] and load["layout"].baseline == tmp_path / "b.json" and load["gated"] and load["k"] == 20
    assert run["backend"] == ["./mine", "--x"] and run["run_file"] is None
    options, gating = run["options"], run["gating"]
    assert (options.k, options.query_timeout, options.workers, options.warmup, options.repeats) == (20, 4.0, 2, 3, 2)
    assert gating.condition == "cold" and gating.known_contract_failures and not gating.allow_backend_change
    assert options.log_path == tmp_path / "r.adapter.log"


def test_defaults_are_all_sets_bm25_and_the_committed_baseline(stand_in, tmp_path):
    fake = stand_in(gated_report())
    cli.main(["--out", str(tmp_path / "r.json"), "--quiet"])
    (_, sets, load), (_, run) = fake.calls
    assert sets == ["all"] and str(load["layout"].baseline) == "baselines/current.json" and load["gated"]
    assert run["backend"] is None  # the API's default: bm25


def test_no_gate_and_update_baseline_load_no_baseline(stand_in, tmp_path):
    fake = stand_in(gated_report())
    cli.main(["--no-gate", "--out", str(tmp_path / "r.json"), "--quiet"])
    assert fake.calls[0][2]["gated"] is False  # the baseline only says what `all` is


def test_outputs_are_the_reports_renderings(stand_in, tmp_path, capsys):
    report = gated_report()
    stand_in(report)
    paths = {name: tmp_path / f"o.{name}" for name in ("json", "md", "xml", "html")}
    code = cli.main(["--out", str(paths["json"]), "--summary", str(paths["md"]), "--junit", str(paths["xml"]),
                     "--html", str(paths["html"])])
    assert code == 1
    assert paths["json"].read_text() == report.to_json()
    assert paths["md"].read_text() == render_markdown(report)
    assert ET.parse(paths["xml"]).getroot().get("failures") == "4"
    assert "<!DOCTYPE html>" in paths["html"].read_text()
    out = capsys.readouterr().out
    written = [("report", str(paths["json"])), ("adapter log", str(tmp_path / "o.adapter.log"))]
    assert out == render_text(report, written=written)
    lines = out.splitlines()
    assert lines[-2] == f"report: {paths['json']}  adapter log: {tmp_path / 'o.adapter.log'}"
    # the verdict closes the output and names the set-level drop: tiny lost 1 of its 5 scored queries, -20.0 points
    assert lines[-1] == "FAILED: 4 of 7 gates (worst: tiny overall recall@10 -20.0 points)"


def test_quiet_prints_only_failed_gates(stand_in, tmp_path, capsys):
    stand_in(gated_report())
    cli.main(["--quiet", "--out", str(tmp_path / "r.json")])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(line.startswith("FAIL ") for line in lines)


def test_a_crashed_run_exits_with_its_code_and_says_a_partial_report_was_written(stand_in, tmp_path, capsys):
    stand_in(crashed_report())
    out = tmp_path / "r.json"
    assert cli.main(["--quiet", "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert "harness: error: query tiny-04: adapter exited with status 7" in err
    assert f"partial report written to {out} (complete: false)" in err
    assert json.loads(out.read_text())["complete"] is False


def test_an_error_before_the_run_is_one_line_and_exit_2(stand_in, tmp_path, capsys):
    stand_in(gated_report(), load_error=SetError("sets/x/queries.jsonl:3: relevant: id 'd9' is not in the corpus"))
    assert cli.main(["--set", "x", "--out", str(tmp_path / "r.json")]) == 2
    assert capsys.readouterr().err == "harness: error: sets/x/queries.jsonl:3: relevant: id 'd9' is not in the corpus\n"
    assert not (tmp_path / "r.json").exists()


def test_update_baseline_writes_through_the_api(stand_in, tmp_path, capsys, monkeypatch):
    fake = stand_in(gated_report())
    baseline = tmp_path / "b.json"
    assert cli.main(["--update-baseline", "--yes", "--baseline", str(baseline), "--out", str(tmp_path / "r.json")]) == 0
    assert fake.written == [baseline]
    assert f"baseline written: {baseline}" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--adapter"], "--adapter: write the adapter command after '--'"),
    (["--", "./x"], "a command after '--' needs --adapter"),
    (["--backend", "bm25", "--run-file", "r.txt"], "exclusive"),
    (["--update-baseline", "--no-gate"], "--update-baseline and --no-gate are exclusive"),
    (["--k", "0"], "--k: must be >= 1, got 0"),
    (["--timeout", "0"], "--timeout: must be a positive number of seconds"),
])
def test_usage_errors_are_exit_2_before_the_api_runs(stand_in, capsys, argv, message):
    fake = stand_in(gated_report())
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not any(call[0] == "run_gate" for call in fake.calls)


def test_the_baseline_backend_reaches_the_api_as_an_argv(stand_in, tmp_path, capsys):
    import sys
    fake = stand_in(gated_report())
    cli.main(["--out", str(tmp_path / "r.json"), "--quiet", "--baseline-adapter", "python '../base/my adapter.py' -x"])
    assert fake.calls[-1][1]["options"].baseline_adapter == ("python", "../base/my adapter.py", "-x")
    cli.main(["--out", str(tmp_path / "r.json"), "--quiet", "--baseline-backend", "bm25"])
    assert fake.calls[-1][1]["options"].baseline_adapter == (sys.executable, "-m", "adapters.bm25")
    cli.main(["--out", str(tmp_path / "r.json"), "--quiet"])
    assert fake.calls[-1][1]["options"].baseline_adapter == ()  # none: latency compared across runs
    assert cli.main(["--out", str(tmp_path / "r.json"), "--baseline-adapter", "a", "--baseline-backend", "bm25"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
