"""The pytest plugin: the README's worked example runs in a pytest of its own, passes, and fails with the
verdict's few lines (never the Report's repr) when its gates fail; the API writes no file of its own."""

from __future__ import annotations

import json
import re
import shutil
from importlib.metadata import entry_points

import pytest

import harness
from harness.errors import GatesFailed
from harness.gating.baseline import build_baseline, write_baseline
from harness.sets.loader import load_set
from tests.conftest import REPO_ROOT, TINY_SET

pytest_plugins = ["pytester"]


def readme_example() -> str:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### In pytest"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def plugin_arguments() -> list[str]:
    """`-p` only where the entry point is not installed (an environment installed before the plugin existed)."""
    installed = any(e.value == "harness.pytest_plugin" for e in entry_points(group="pytest11"))
    return [] if installed else ["-p", "harness.pytest_plugin"]


def test_pyproject_registers_the_plugin():
    text = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '[project.entry-points.pytest11]\nretrieval_gate = "harness.pytest_plugin"' in text


@pytest.fixture
def team_folder(pytester):
    """What the example says it runs in: sets/memory, baselines/current.json and the budgets."""
    shutil.copytree(REPO_ROOT / "sets" / "memory", pytester.path / "sets" / "memory")
    (pytester.path / "baselines").mkdir()
    shutil.copy(REPO_ROOT / "baselines" / "current.json", pytester.path / "baselines" / "current.json")
    shutil.copy(REPO_ROOT / "budgets.json", pytester.path / "budgets.json")
    pytester.makepyfile(test_retrieval=readme_example())
    return pytester


def test_readme_example_passes(team_folder):
    result = team_folder.runpytest_subprocess(*plugin_arguments(), "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=1)


def test_a_failed_verdict_fails_the_test_with_its_few_lines(team_folder):
    path = team_folder.path / "baselines" / "current.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    drop = perfect_recall_at_10(document["sets"]["memory"])  # the run is this many points worse
    path.write_text(json.dumps(document), encoding="utf-8")
    result = team_folder.runpytest_subprocess(*plugin_arguments(), "-p", "no:cacheprovider", "-rf", timeout=300)
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    result.stdout.fnmatch_lines(["FAILED: * of * gates (worst: memory overall recall@10 -" + f"{drop:.1f} points)*",
                                 "  FAIL recall* memory overall*", "report: *retrieval-gate-report.json"])
    assert "Report(" not in output and "provenance" not in output
    assert "Traceback" not in output
    report = re.search(r"^report: (\S+)$", output, re.M).group(1)
    assert json.loads(open(report, encoding="utf-8").read())["exit_code"] == 1


def perfect_recall_at_10(entry: dict) -> float:
    """Give every scored row of a baseline's set recall@10 1.0 and each scope the mean of its rows (what the
    baseline reader checks), as a better earlier run would have recorded it; returns the overall rise in points."""
    rows = [row for row in entry["queries"].values() if row["scored"]]
    before = entry["aggregates"]["overall"]["recall@10"]
    for row in rows:
        row["metrics"]["recall@10"] = 1.0
    entry["aggregates"]["overall"]["recall@10"] = 1.0
    for field in ("category", "split"):
        for name in entry["aggregates"][field]:
            entry["aggregates"][field][name]["recall@10"] = 1.0
    return 100 * (1.0 - before)


def test_an_input_error_fails_the_test_in_one_line(pytester):
    pytester.makepyfile(test_missing="""
        def test_gate(retrieval_gate):
            retrieval_gate(["nosuch"], baseline=None)
    """)
    result = pytester.runpytest_subprocess(*plugin_arguments(), "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["retrieval-gate: error: *nosuch*"])
    assert "Traceback" not in result.stdout.str()


def test_raise_for_gates_passes_a_pass_and_raises_the_verdict_lines(tmp_path, monkeypatch):
    """harness.gate without log_path writes nothing in the working folder; raise_for_gates says why it failed."""
    inputs, work = tmp_path / "inputs", tmp_path / "work"
    inputs.mkdir(), work.mkdir()
    monkeypatch.chdir(work)
    tiny = load_set(TINY_SET)
    perfect_run, empty_run, baseline = inputs / "perfect.run", inputs / "empty.run", inputs / "baseline.json"
    perfect_run.write_text("".join(f"{q.qid} Q0 {doc} {rank} {10 - rank} r\n" for q in tiny.queries
                                   for rank, doc in enumerate(q.relevant, 1)))
    empty_run.write_text("")  # no answer at all: every query scores 0
    perfect = harness.gate([str(TINY_SET)], run_file=str(perfect_run), baseline=None)
    assert harness.raise_for_gates(perfect) is perfect
    write_baseline(baseline, build_baseline(list(perfect.sets), perfect.provenance.to_dict()))
    worse = harness.gate([str(TINY_SET)], run_file=str(empty_run), baseline=str(baseline))
    with pytest.raises(GatesFailed) as failed:
        harness.raise_for_gates(worse, "out/report.json")
    lines = str(failed.value).splitlines()
    assert failed.value.exit_code == 1 and lines[0].startswith("FAILED: ")
    assert lines[-1] == "report: out/report.json" and all(line.startswith("  FAIL ") for line in lines[1:-1])
    assert 3 <= len(lines) <= 12
    assert list(work.iterdir()) == []  # no .retrieval-gate/ log nor anything else


def test_gate_keeps_the_adapter_log_only_where_log_path_says(tmp_path, monkeypatch):
    """A real adapter: without log_path its log is a temp file gone when gate returns; with it, it is kept."""
    monkeypatch.chdir(tmp_path)
    before = set(tempfile_names())
    report = harness.gate([str(TINY_SET)], backend="bm25", baseline=None)
    assert report.complete and report.provenance.adapter.log is None
    assert list(tmp_path.iterdir()) == [] and set(tempfile_names()) <= before
    kept = tmp_path / "logs" / "adapter.log"
    report = harness.gate([str(TINY_SET)], backend="bm25", baseline=None, log_path=kept)
    assert report.provenance.adapter.log == str(kept) and kept.is_file()


def tempfile_names() -> list[str]:
    import tempfile
    from pathlib import Path
    return [p.name for p in Path(tempfile.gettempdir()).glob("retrieval-gate-log-*")]
