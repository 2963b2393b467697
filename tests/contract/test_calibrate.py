"""`calibrate` against the real BM25 adapter: it records zero quality noise, and a BM25 gate against the
calibrated baseline gives the report of the uncalibrated one, but for the calibration note.

The decided (byte-for-byte) comparison: one BM25 run on the memory set, decided twice by the one gating
function, once against the baseline and once against the same baseline calibrated. The report JSON of the
two must be the same bytes once `provenance.baseline.calibrated` (the note) is removed and the p95
comparison's limit and message (which allow for BM25's latency spread, and say so) are set back: every
verdict, and every other gate's limit and message, are unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import harness
from harness.api import decided_report, load_inputs
from harness.gating.baseline import Baseline, write_calibration
from harness.layout import resolve
from tests.conftest import FIXTURES, REPO_ROOT, TINY_SET

SEEDED_ADAPTER = FIXTURES / "cli_adapters" / "seeded.py"

SHIPPED_BASELINE = REPO_ROOT / "baselines" / "current.json"
SUMMARY = ("memory: recall@10 in 8 scopes, latency p50/p95, resources start-up/peak RSS/index size; 3 runs, alpha 0.01, "
           "0 queries varied")


def calibrate(*args, cwd):
    return subprocess.run([sys.executable, "-m", "harness", "calibrate", *args], cwd=cwd, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), "HOME": str(cwd)},
                          timeout=300)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("calibrate")
    shutil.copy(SHIPPED_BASELINE, folder / "b.json")
    done = calibrate("--set", "memory", "--runs", "3", "--baseline", str(folder / "b.json"),
                     "--sets-dir", str(REPO_ROOT / "sets"), cwd=folder)
    return folder / "b.json", done


def test_bm25_calibrates_to_zero_quality_noise(calibrated):
    path, done = calibrated
    assert done.returncode == 0, done.stderr
    assert SUMMARY in done.stdout
    assert "quality: no run-to-run noise; its gates are unchanged" in done.stdout
    record = json.loads(path.read_text())["sets"]["memory"]["calibration"]
    assert record["runs"] == 3 and record["varying"] == {"recall@10": []}
    overall = record["quality"]["overall"]["recall@10"]
    shipped = json.loads(SHIPPED_BASELINE.read_text())
    # the same recall@10 in every run, the one the shipped baseline recorded for BM25
    assert overall == {"means": [shipped["sets"]["memory"]["aggregates"]["overall"]["recall@10"]] * 3, "query_sd": 0.0}
    assert len(record["latency_ms"]["p95"]) == 3
    # everything else in the file is as it was
    without = json.loads(path.read_text())
    del without["sets"]["memory"]["calibration"]
    assert without == shipped


def test_a_bm25_gate_is_the_same_report_with_and_without_calibration(calibrated, tmp_path):
    path, done = calibrated
    assert done.returncode == 0, done.stderr
    sets_dir, gated = REPO_ROOT / "sets", tmp_path / "b.json"
    shutil.copy(SHIPPED_BASELINE, gated)  # one path, first plain, then calibrated as `calibrate` recorded it
    measured = harness.gate(["memory"], backend="bm25", sets_dir=sets_dir, baseline=None)
    reports = []
    for calibration in ({}, Baseline.read(path).calibration):
        write_calibration(gated, calibration)
        inputs = load_inputs(["memory"], layout=resolve(sets_dir=sets_dir, baseline=gated), offline=True, k=None)
        reports.append(json.loads(decided_report(measured.sets, inputs, measured.provenance, None, k=None).to_json()))
    plain, calibrated_report = reports
    assert "calibrated" not in plain["provenance"]["baseline"] and plain["gates"]
    note = calibrated_report["provenance"]["baseline"].pop("calibrated")
    assert note == SUMMARY
    # BM25's latency moves between runs even where its rankings do not: the p95 comparison across runs allows
    # for that spread (its limit and message say so); its status, and every other gate, byte for byte the same
    [(widened, plain_latency)] = [(c, p) for c, p in zip(calibrated_report["gates"], plain["gates"])
                                  if p["gate"] == "latency-relative"]
    allowance = Baseline.read(path).calibration["memory"]
    p95_noise = allowance.allowance(allowance.latency["p95"])
    assert widened["limit"] == pytest.approx(plain_latency["limit"] + p95_noise)
    noted = f" ms, +{p95_noise:.2f} ms calibrated noise); baseline measured" if p95_noise else " ms); baseline measured"
    assert widened["message"] == plain_latency["message"].replace(" ms); baseline measured", noted)
    widened.update(limit=plain_latency["limit"], message=plain_latency["message"])
    assert json.dumps(calibrated_report, sort_keys=True) == json.dumps(plain, sort_keys=True)


@pytest.mark.parametrize("args, message", [
    (["--runs", "1"], "harness: error: --runs: must be from 2 to 1000, got 1\n"),
    (["--seed-option=--seed"], "harness: error: --seed-option: only with an adapter (--adapter, or the config's "
                                  "`adapter`): the option is appended to its command\n"),
    (["--alpha", "0.7"], "harness: error: --alpha: must be above 0 and below 0.5, got 0.7\n"),
])
def test_bad_options_are_one_line_and_exit_2(tmp_path, args, message):
    shutil.copy(SHIPPED_BASELINE, tmp_path / "b.json")
    before = (tmp_path / "b.json").read_bytes()
    done = calibrate("--set", "memory", "--baseline", str(tmp_path / "b.json"), *args, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", message)
    assert (tmp_path / "b.json").read_bytes() == before


def test_a_set_missing_from_the_baseline_is_refused_before_any_run(tmp_path):
    document = json.loads(SHIPPED_BASELINE.read_text())
    del document["sets"]["memory"]
    (tmp_path / "b.json").write_text(json.dumps(document))
    done = calibrate("--set", str(REPO_ROOT / "sets" / "memory"), "--baseline", str(tmp_path / "b.json"), cwd=tmp_path)
    assert done.returncode == 2 and "no baseline for set 'memory'" in done.stderr and "run 1" not in done.stderr


def test_a_seed_option_rebuilds_each_run_and_the_spread_is_recorded(tmp_path):
    """Three runs of an adapter whose seed 2 loses tiny-02's relevant document: the record holds each run's
    means, names tiny-02 as the query that varied, and the next gate's message carries the allowance."""
    queries = [json.loads(line) for line in (TINY_SET / "queries.jsonl").read_text().splitlines()]
    perfect = {q["query"]: sorted(q["relevant"]) for q in queries}
    lossy = {**perfect, "retry backoff for failed requests": []}
    (tmp_path / "answers.json").write_text(json.dumps({"1": perfect, "2": lossy, "3": perfect}))
    adapter = [sys.executable, str(SEEDED_ADAPTER)]
    env_args = ["--set", str(TINY_SET), "--baseline", str(tmp_path / "b.json")]
    record = subprocess.run([sys.executable, "-m", "harness", *env_args, "--update-baseline", "--yes", "--out",
                             str(tmp_path / "r.json"), "--adapter", "--", *adapter, "--seed", "1"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT),
                                 "SEEDED_ANSWERS": str(tmp_path / "answers.json")})
    assert record.returncode == 0, record.stderr
    done = subprocess.run([sys.executable, "-m", "harness", "calibrate", *env_args, "--runs", "3",
                           "--seed-option=--seed", "--adapter", "--", *adapter], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO_ROOT),
                                                        "SEEDED_ANSWERS": str(tmp_path / "answers.json")})
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("calibrate:")] == [
        "calibrate: run 1 of 3 (--seed 1)", "calibrate: run 2 of 3 (--seed 2)", "calibrate: run 3 of 3 (--seed 3)"]
    calibration = json.loads((tmp_path / "b.json").read_text())["sets"]["tiny"]["calibration"]
    assert calibration["rebuild"] == "--seed 1..3" and calibration["varying"] == {"recall@10": ["tiny-02"]}
    # five scored queries (tiny-06 is xfail, tiny-07 measure-only): 5/5, 4/5, 5/5; category a (tiny-01, 02, 05)
    assert calibration["quality"]["overall"]["recall@10"]["means"] == pytest.approx([1.0, 0.8, 1.0])
    assert calibration["quality"]["category:a"]["recall@10"]["means"] == pytest.approx([1.0, 2 / 3, 1.0])
    assert calibration["quality"]["category:b"]["recall@10"]["means"] == [1.0, 1.0, 1.0]
    # sd of (1, 0.8, 1) = 0.11547: the limit widens by 2.326 x 1.414 x 11.547 = 37.99 points
    assert "overall recall@10: sd 11.55 points -> limit widened by 37.99 points" in done.stdout
    gate = subprocess.run([sys.executable, "-m", "harness", *env_args, "--out", str(tmp_path / "g.json"),
                           "--adapter", "--", *adapter, "--seed", "2"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO_ROOT),
                                            "SEEDED_ANSWERS": str(tmp_path / "answers.json")})
    assert gate.returncode == 0, gate.stdout + gate.stderr  # a 20-point drop, within the calibrated noise
    overall = next(g for g in json.loads((tmp_path / "g.json").read_text())["gates"]
                   if g["gate"] == "recall" and g["category"] is None)
    assert overall["status"] == "pass" and overall["limit"] == pytest.approx(0.02 + 0.3799, abs=1e-4)
    assert "calibrated noise +37.99 points (z 2.33 x sqrt2 x sd 11.55 over 3 runs, alpha 0.01)" in overall["message"]
