"""harness/history/drift.py and recording.py: the window of accepted baselines, the drift gate (warn, fail
by policy), and a gated run recorded with the baseline it was gated against."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from harness.errors import UsageError
from harness.gating.baseline import baseline_text, build_baseline
from harness.gating.policy import GatePolicy, load_policy
from harness.history.drift import DRIFT_GATE, Drift, DriftPolicy, window, with_drift_gates
from harness.history.entries import entries_from_baseline
from harness.history.recording import record_baseline, record_run
from harness.history.store import BASELINE, OVERALL, RUN, HistoryStore, Point, SeriesKey
from tests.reports import BASE_ANSWERS, gated_report, provenance, tiny_result

KEY = SeriesKey(BASELINE, "bm25", "tiny", OVERALL, "recall@10")


def _points(values, *, days=None, comparable=None) -> list[Point]:
    days = days or list(range(1, len(values) + 1))
    comparable = comparable or ["r1"] * len(values)
    return [Point(i, f"2026-12-{day:02d}T00:00:00+00:00", None, None, value, version, str(i))
            for i, (value, day, version) in enumerate(zip(values, days, comparable))]


def test_the_window_is_the_last_n_baselines_of_the_current_set_version():
    points = _points([0.9, 0.8, 0.79, 0.78, 0.77], comparable=["r1", "r2", "r2", "r2", "r2"])
    assert [p.value for p in window(points, DriftPolicy(baselines=3))] == [0.79, 0.78, 0.77]
    assert [p.value for p in window(points, DriftPolicy(baselines=10))] == [0.8, 0.79, 0.78, 0.77]  # not r1's 0.9


def test_a_window_of_days_starts_with_the_baseline_in_force_when_it_opened():
    points = _points([0.80, 0.79, 0.78, 0.77], days=[1, 10, 20, 25])
    # the last 10 days from the 25th open on the 15th: the 20th and 25th, and the 10th's, in force on the 15th
    assert [p.value for p in window(points, DriftPolicy(baselines=None, days=10))] == [0.79, 0.78, 0.77]


def test_five_green_steps_of_a_loss_drift_and_warn():
    # 1.5 points five times: each step under the 2.0-point gate, 7.5 points in all
    points = _points([0.80 - 0.015 * i for i in range(6)])
    drift = Drift(KEY, tuple(points), DriftPolicy())
    assert drift.change == pytest.approx(-0.075) and drift.drifted
    gate = drift.gate()
    assert (gate.gate, gate.status, gate.metric, gate.baseline, gate.current, gate.limit) == (
        DRIFT_GATE, "warn", "recall@10", 0.80, points[-1].value, 0.02)
    assert gate.message == ("tiny recall@10 moved -7.5 points over 6 accepted baselines since 2026-12-01 "
                            "(0.800 -> 0.725; largest step -1.5); limit over the last 10 baselines: 2.0 points")
    assert Drift(KEY, tuple(points), DriftPolicy(fails=True)).gate().status == "fail"


def test_an_exact_limit_and_a_rise_do_not_drift():
    assert not Drift(KEY, tuple(_points([0.70, 0.69, 0.68])), DriftPolicy()).drifted  # exactly 2.0 points
    assert not Drift(KEY, tuple(_points([0.70, 0.80])), DriftPolicy()).drifted


def test_drift_gates_decide_the_exit_code_again():
    report = gated_report(BASE_ANSWERS)  # every gate passes
    assert report.exit_code == 0
    falling = Drift(KEY, tuple(_points([0.80, 0.70])), DriftPolicy(fails=True))
    failed = with_drift_gates(report, [falling])
    assert failed.exit_code == 1 and failed.gates[-1].gate == DRIFT_GATE
    warned = with_drift_gates(report, [dataclasses.replace(falling, policy=DriftPolicy())])
    assert warned.exit_code == 0 and warned.warned_gates[-1].gate == DRIFT_GATE


def _write_baseline(path, answers, created):
    document = build_baseline([tiny_result(answers)], provenance().to_dict())
    path.write_text(baseline_text({**document, "created": created}))


def test_a_recorded_run_brings_its_baseline_and_the_drift_of_the_baselines_accepted_before(tmp_path):
    store, baseline = tmp_path / "h.sqlite", tmp_path / "current.json"
    losing = {**BASE_ANSWERS, "tiny-01": (("doc-09",), 1.0)}  # tiny-01 lost: recall@10 of 5 scored queries -20 points
    _write_baseline(baseline, BASE_ANSWERS, "2026-12-01T00:00:00+00:00")
    with HistoryStore.for_append(store) as opened:
        for entry in entries_from_baseline(baseline.read_bytes(), "first"):
            opened.append(entry)
    _write_baseline(baseline, losing, "2026-12-02T00:00:00+00:00")
    report = gated_report(losing)
    recorded = record_run(store, report, baseline=baseline)
    [drift] = recorded.drifts
    assert drift.change == pytest.approx(-0.2) and drift.drifted
    assert recorded.report.gates[:-1] == report.gates and recorded.report.gates[-1].status == "warn"
    with HistoryStore.for_reading(store) as opened:
        assert opened.run_count() == {BASELINE: 2, RUN: 1}
    incomplete = record_run(store, dataclasses.replace(report, complete=False), baseline=baseline)
    assert incomplete.report.gates == report.gates and "not appended" in incomplete.notes[0]
    later = dataclasses.replace(report, provenance=dataclasses.replace(report.provenance,
                                                                       started="2026-12-03T00:00:00+00:00"))
    ungated = record_run(store, later, baseline=None)  # --no-gate: appended, and no drift gate added
    assert ungated.drifts == () and ungated.report.gates == report.gates
    with HistoryStore.for_reading(store) as opened:
        assert opened.run_count() == {BASELINE: 2, RUN: 2}


def test_a_re_baseline_that_makes_a_drift_warns(tmp_path):
    store, baseline = tmp_path / "h.sqlite", tmp_path / "current.json"
    _write_baseline(baseline, BASE_ANSWERS, "2026-12-01T00:00:00+00:00")
    assert record_baseline(store, baseline, ["tiny"], gated_report(BASE_ANSWERS)).warnings == ()
    _write_baseline(baseline, {**BASE_ANSWERS, "tiny-01": (("doc-09",), 1.0)}, "2026-12-02T00:00:00+00:00")
    [warning] = record_baseline(store, baseline, ["tiny"], gated_report(BASE_ANSWERS)).warnings
    assert warning.startswith("drift: tiny recall@10 moved -20.0 points over 2 accepted baselines")
    assert json.loads(baseline.read_text())["sets"]["tiny"]  # the baseline file is read, never rewritten


def _with_policy(report, policy: GatePolicy):
    extra = {**report.provenance.extra, "policy": policy.to_dict()}
    return dataclasses.replace(report, provenance=dataclasses.replace(report.provenance, extra=extra))


def test_the_policy_s_drift_section_makes_a_recorded_run_fail(tmp_path):
    store, baseline = tmp_path / "h.sqlite", tmp_path / "current.json"
    losing = {**BASE_ANSWERS, "tiny-01": (("doc-09",), 1.0)}
    _write_baseline(baseline, BASE_ANSWERS, "2026-12-01T00:00:00+00:00")
    record_baseline(store, baseline, ["tiny"], gated_report(BASE_ANSWERS))
    _write_baseline(baseline, losing, "2026-12-02T00:00:00+00:00")
    report = gated_report(BASE_ANSWERS)
    assert report.exit_code == 0  # every gate of the run passes; the accepted baselines lost 20 points
    failing = record_run(store, _with_policy(report, GatePolicy(drift_fails=True)), baseline=baseline)
    assert failing.report.exit_code == 1 and failing.report.gates[-1].status == "fail"
    # a limit above the 20-point fall, and a window of one day that holds both baselines: warns nothing
    loose = GatePolicy(drift_limit_points=25.0, drift_days=1.5, drift_fails=True)
    quiet = record_run(store, _with_policy(report, loose), baseline=baseline)
    [drift] = quiet.drifts
    assert quiet.report.exit_code == 0 and drift.policy == DriftPolicy(25.0, None, 1.5, True) and not drift.drifted


def test_a_report_recorded_before_the_drift_section_gets_the_defaults_with_its_drop_limit():
    assert DriftPolicy.recorded({"drop_limit_points": 3.0}) == DriftPolicy(limit_points=3.0)
    assert DriftPolicy.recorded({}) == DriftPolicy()
    assert DriftPolicy.of(GatePolicy(drop_limit_points=4.0, drift_baselines=5)) == DriftPolicy(4.0, 5, None, False)


@pytest.mark.parametrize("section, message", [
    ({"baselines": 1}, "drift.baselines: must be an integer from 2 to"),
    ({"limit_points": 100}, "drift.limit_points:"),
    ({"days": 0}, "drift.days:"),
    ({"fails": "yes"}, "drift.fails: must be true or false"),
    ({"window": 3}, "drift"),
])
def test_a_drift_section_that_could_never_fail_or_is_misspelt_is_refused(tmp_path, section, message):
    path = tmp_path / "gate-policy.json"
    path.write_text(json.dumps({"format": 1, "drift": section}))
    with pytest.raises(UsageError, match=re.escape(f"{path}: {message}")):
        load_policy(path, lambda name: name)
