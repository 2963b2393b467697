"""benchmarks/history_series.py and bisect_fixture.py: the synthetic histories and the fixture repository
are what the benchmark says they are (the rows real, the steps the size asked, the culprit where drawn)."""

from __future__ import annotations

import json
import statistics
import subprocess

import pytest

from benchmarks import bisect_fixture, history_series


@pytest.fixture(scope="module")
def rows():
    return history_series.real_rows()


def test_the_rows_are_bm25s_on_code_agent(rows):
    baseline = json.loads((history_series.shipped_baselines_dir() / history_series.BASELINE).read_text())
    assert len(rows) == baseline["sets"]["code-agent"]["aggregates"]["overall"]["n"]  # every scored query
    mean = statistics.fmean(row.found / row.relevant for row in rows)
    assert mean == pytest.approx(baseline["sets"]["code-agent"]["aggregates"]["overall"]["recall@10"])


def test_a_step_moves_the_mean_by_the_points_asked_and_a_blip_one_run_only(rows):
    history = history_series.History(rows, seed=1, noise=0.0)
    history.run()
    history.degrade(0.6)
    history.run()
    history.run(offset=-4.0)
    history.run()
    first, stepped, blip, after = (100 * v for v in history.values)
    assert stepped - first == pytest.approx(-0.6, abs=0.08)  # whole relevant ids: within half of 1/n
    assert blip - stepped == pytest.approx(-4.0, abs=0.08) and after == stepped


def test_run_noise_is_stationary_at_about_a_third_of_a_point(rows):
    values = [100 * v for v in history_series.aa(5, runs=60, rows=rows).values]
    assert 0.2 < statistics.stdev(values) < 0.45
    assert statistics.fmean(values[:30]) == pytest.approx(statistics.fmean(values[30:]), abs=0.25)


def test_the_fixture_repository_has_its_culprit_where_drawn(tmp_path):
    fixture = bisect_fixture.build(tmp_path, seed=2, commits=12)
    assert len(fixture.commits) == 12 and 0 < fixture.culprit < 11

    def missed(index):
        text = subprocess.run(["git", "-C", str(fixture.repository), "show", f"{fixture.commits[index]}:ranking.json"],
                              check=True, capture_output=True, text=True).stdout
        return set(json.loads(text)["missed"])

    before, at = missed(fixture.culprit - 1), missed(fixture.culprit)
    # 80 missed at the first commit; the culprit misses 20 more, each commit moves 2 each way
    assert len(missed(0)) == 80 and len(at) - len(before) == bisect_fixture.DROP_QUERIES
