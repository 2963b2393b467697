"""`history`, `history import`, `history drift`, and a run's --history: what they print, write and exit with."""

from __future__ import annotations

import dataclasses
import json

import pytest

from benchmarks import history_series
from harness.commands import cli
from harness.gating.baseline import baseline_text, build_baseline
from harness.history.store import BASELINE, RUN, HistoryStore
from tests.reports import BASE_ANSWERS, gated_report, provenance, tiny_result


@pytest.fixture(scope="module")
def synthetic_store(tmp_path_factory):
    """A store holding a 3-point step (runs 0-19, then 20-29) and a one-run blip, from real per-query rows."""
    path = tmp_path_factory.mktemp("history") / "h.sqlite"
    with HistoryStore.for_append(path) as store:
        for entry in history_series.store_entries(history_series.step(1, points=3.0)):
            store.append(entry)
        for entry in history_series.store_entries(history_series.blip(2), backend="onnx"):
            store.append(entry)
    return path


def test_history_prints_each_series_with_its_change_and_outlier(synthetic_store, tmp_path, capsys):
    page = tmp_path / "history.html"
    assert cli.main(["history", "--history", str(synthetic_store), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    blocks = out.strip().split("\n\n")
    assert [block.splitlines()[0] for block in blocks] == [
        "bm25: code-agent recall@10: 30 runs, 2026-01-01 .. 2026-01-30",
        "onnx: code-agent recall@10: 41 runs, 2026-01-01 .. 2026-02-10"]
    # the step is committed at run 20 (c020): its range is c019..c020, about -3 points
    change = blocks[0].splitlines()[2]
    assert change.startswith("  change: \u22123.") and change.endswith("in c01900000000..c02000000000")
    assert "outlier, back to its level after: c03000000000 \u22124." in blocks[1]
    html = page.read_text()
    assert html.count('<svg class="chart trend"') == 2 and 'class="change"' in html and 'class="outlier"' in html


def test_history_filters_and_says_when_there_is_nothing(synthetic_store, capsys):
    assert cli.main(["history", "--history", str(synthetic_store), "--backend", "onnx", "--metric", "R@10"]) == 0
    assert capsys.readouterr().out.startswith("onnx: code-agent recall@10: 41 runs")
    assert cli.main(["history", "--history", str(synthetic_store), "--baselines"]) == 0
    assert capsys.readouterr().out.startswith("no series in ")
    assert cli.main(["history", "--history", str(synthetic_store), "--backend", "bm25", "--last", "8"]) == 0
    lines = capsys.readouterr().out.splitlines()  # the step (run 20) is not among the last 8 runs
    assert lines[0] == "bm25: code-agent recall@10: 8 runs (the last 8 of 30), 2026-01-23 .. 2026-01-30"
    assert lines[-1] == "  no change point"
    assert cli.main(["history", "--history", str(synthetic_store), "--last", "0"]) == 2


def test_a_store_that_is_not_one_is_exit_2_and_one_line(tmp_path, capsys):
    baseline = tmp_path / "current.json"
    baseline.write_text(baseline_text(build_baseline([tiny_result(BASE_ANSWERS)], provenance().to_dict())))
    before = baseline.read_bytes()
    for argv in (["history"], ["history", "drift"], ["history", "import", "--from-git"]):
        assert cli.main([*argv, "--history", str(baseline)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"harness: error: {baseline}: ")
    assert baseline.read_bytes() == before
    assert cli.main(["history", "--history", str(tmp_path / "none.sqlite")]) == 2
    assert "no history store here" in capsys.readouterr().err


def test_import_adds_reports_once_and_skips_incomplete_ones(tmp_path, capsys):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(gated_report().to_json())
    bad.write_text(dataclasses.replace(gated_report(), complete=False, error="crashed", exit_code=3).to_json())
    store = tmp_path / "h.sqlite"
    assert cli.main(["history", "import", str(good), str(bad), "--history", str(store)]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{store}: 1 run and 0 accepted baselines added\n"
    assert captured.err == f"skipped {bad}: incomplete (the backend failed or the run was interrupted)\n"
    assert cli.main(["history", "import", str(good), "--history", str(store)]) == 0
    assert capsys.readouterr().out == f"{store}: 0 runs and 0 accepted baselines added\n"
    assert cli.main(["history", "import", "--history", str(store)]) == 2


def _accepted(store, values) -> None:
    """Accepted baselines of the tiny set whose recall@10 are `values` (queries found or lost to match)."""
    with HistoryStore.for_append(store) as opened:
        for day, lost in enumerate(values, start=1):
            answers = {**BASE_ANSWERS, **{qid: ((), 1.0) for qid in lost}}
            document = build_baseline([tiny_result(answers)], provenance().to_dict())
            from harness.history.entries import entries_from_baseline
            for entry in entries_from_baseline(baseline_text(document).encode(), f"b@{day}",
                                               accepted=f"2026-12-{day:02d}T00:00:00Z"):
                opened.append(entry)


def test_drift_warns_then_fails_by_policy(tmp_path, capsys):
    store = tmp_path / "h.sqlite"
    _accepted(store, [(), ("tiny-01",)])
    assert cli.main(["history", "drift", "--history", str(store)]) == 0
    line = capsys.readouterr().out
    assert line.startswith("DRIFT bm25: tiny recall@10 moved -20.0 points over 2 accepted baselines")
    assert cli.main(["history", "drift", "--history", str(store), "--fail"]) == 1
    assert cli.main(["history", "drift", "--history", str(store), "--fail", "--limit", "25"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("ok    bm25: tiny")
    assert cli.main(["history", "drift", "--history", str(store), "--baselines", "1"]) == 2
    policy = tmp_path / "gate-policy.json"
    policy.write_text('{"format": 1, "drift": {"fails": true}}')
    assert cli.main(["history", "drift", "--history", str(store), "--policy", str(policy)]) == 1
    policy.write_text('{"format": 1, "drift": {"fails": true, "limit_points": 25}}')
    assert cli.main(["history", "drift", "--history", str(store), "--policy", str(policy)]) == 0


def test_a_run_with_history_appends_itself_and_its_baseline_and_gates_drift(stand_in, tmp_path, capsys):
    store, baseline = tmp_path / "h.sqlite", tmp_path / "current.json"
    _accepted(store, [()])  # the first accepted baseline: every tiny query found
    losing = {**BASE_ANSWERS, "tiny-01": (("doc-09",), 1.0)}
    baseline.write_text(baseline_text(build_baseline([tiny_result(losing)], provenance().to_dict())))
    stand_in(gated_report(losing))
    out = tmp_path / "r.json"
    # the stand-in's report fails its recall gate (exit 1): a drift only warns, so the verdict is unchanged
    assert cli.main(["--out", str(out), "--baseline", str(baseline), "--history", str(store)]) == 1
    gates = json.loads(out.read_text())["gates"]
    assert gates[-1]["gate"] == "drift" and gates[-1]["status"] == "warn"
    captured = capsys.readouterr()
    assert f"harness: history: run appended to {store}" in captured.err
    assert "WARN drift       tiny recall@10 moved -20.0 points over 2 accepted baselines" in captured.out
    with HistoryStore.for_reading(store) as opened:
        assert opened.run_count() == {BASELINE: 2, RUN: 1}


def test_a_damaged_history_store_stops_the_run_before_it_starts(stand_in, tmp_path, capsys):
    store = tmp_path / "h.sqlite"
    store.write_text("not a database\n")
    fake = stand_in(gated_report())
    assert cli.main(["--out", str(tmp_path / "r.json"), "--history", str(store)]) == 2
    assert [call[0] for call in fake.calls] == ["load_inputs"]  # never run
    assert store.read_text() == "not a database\n"
    assert "left as it is" in capsys.readouterr().err


def test_import_from_git_takes_every_accepted_version_and_skips_one_it_cannot_read(tmp_path, monkeypatch, capsys):
    import subprocess
    repository = tmp_path / "team"
    (repository / "baselines").mkdir(parents=True)

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=repository,
                       check=True, capture_output=True)

    git("init", "-q")
    for answers in (BASE_ANSWERS, {**BASE_ANSWERS, "tiny-01": ((), 1.0)}):
        document = build_baseline([tiny_result(answers)], provenance().to_dict())
        (repository / "baselines" / "current.json").write_text(baseline_text(document))
        git("add", "-A")
        git("commit", "-qm", "re-baseline")
    (repository / "baselines" / "broken.json").write_text("{not json")
    git("add", "-A")
    git("commit", "-qm", "a broken one")
    monkeypatch.chdir(repository)
    store = tmp_path / "h.sqlite"
    assert cli.main(["history", "import", "--from-git", "--history", str(store)]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{store}: 0 runs and 2 accepted baselines added; 1 skipped\n"
    assert captured.err.startswith("skipped baselines/broken.json@") and "corrupt baseline" in captured.err
    assert cli.main(["history", "drift", "--history", str(store)]) == 0
    assert capsys.readouterr().out.startswith("DRIFT bm25: tiny recall@10 moved -20.0 points over 2 accepted")
