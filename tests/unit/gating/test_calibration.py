"""Calibrated noise: its record (computed, read, written), and the quality gates' allowance for it."""

import dataclasses
import json
from pathlib import Path

import pytest

from harness.errors import BaselineError
from harness.gating.baseline import Baseline, baseline_text, build_baseline, write_baseline, write_calibration
from harness.gating.calibration import Noise, SetCalibration, calibrate_runs
from harness.gating.gates import check
from harness.measured import Aggregates, Latency, Resources, ScopeNumbers
from harness.records import ContractResult, QueryResult, SetResult
from tests.builders import PROVENANCE

# z_{0.99} of the standard normal, from a printed table (Abramowitz & Stegun 26.2), and sqrt(2)
Z_99, SQRT2 = 2.326348, 1.414214


def synthetic(values_by_category, p95=1.0, broken=()):
    """A SetResult of set `s` whose per-query recall@10 values are given (a relevant document found when > 0);
    the queries in `broken` break their contract `forbid:x`, the others keep it."""
    queries = [QueryResult(qid=f"{category}-{index}", query=f"{category}-{index}", category=category,
                           split="development", ids=(), scores=None, latency_seconds=0.001,
                           metrics={"recall@10": value}, found=("d",) if value else (),
                           contracts=(ContractResult("forbid", f"{category}-{index}" not in broken, "x ranked", "x"),),
                           outcome="pass", scored=True)
               for category, values in values_by_category.items() for index, value in enumerate(values)]
    everything = [v for values in values_by_category.values() for v in values]
    aggregates = Aggregates(ScopeNumbers(len(everything), {"recall@10": sum(everything) / len(everything)}),
                            {c: ScopeNumbers(len(v), {"recall@10": sum(v) / len(v)}) for c, v in values_by_category.items()})
    return SetResult(name="s", kind="s", revision=1, corpus_hash="h", k=10, query_count=len(queries), complete=True,
                     aggregates=aggregates, latency=Latency(1, p95, p95, p95), queries=tuple(queries))


def calibration(sd_values, alpha=0.01, scope="overall"):
    return SetCalibration(runs=len(sd_values), alpha=alpha, rebuild=None,
                          quality={scope: {"recall@10": Noise(tuple(sd_values))}}, varying={"recall@10": ()})


def test_the_spread_is_the_sample_standard_deviation_and_zero_when_nothing_moved():
    # 0.70, 0.72, 0.74: mean 0.72, squared deviations 0.0004 + 0 + 0.0004 over n - 1 = 2: sd 0.02
    assert Noise((0.70, 0.72, 0.74)).sd == pytest.approx(0.02, abs=1e-12)
    assert Noise((0.1, 0.1, 0.1)).sd == 0.0  # exactly zero, not float dust
    assert calibration([0.1, 0.1]).allowance(Noise((0.1, 0.1))) == 0.0


def test_the_allowance_is_z_times_sqrt2_times_sd():
    noise = Noise((0.70, 0.72, 0.74))
    assert calibration([0.70, 0.72, 0.74]).allowance(noise) == pytest.approx(Z_99 * SQRT2 * 0.02, rel=1e-5)
    # alpha 0.05: z_{0.95} = 1.644854 from the same table
    assert calibration([0.70, 0.72, 0.74], alpha=0.05).allowance(noise) == pytest.approx(1.644854 * SQRT2 * 0.02,
                                                                                         rel=1e-5)


def _numbers(values, p95):
    return synthetic({"c": values}, p95=p95).numbers()


def test_calibrating_runs_names_the_queries_that_varied_and_every_scope():
    runs = [_numbers([1.0, 0.0, 1.0, 1.0], 2.0), _numbers([1.0, 1.0, 1.0, 1.0], 3.0), _numbers([1.0, 0.0, 1.0, 0.0], 4.0)]
    result = calibrate_runs(runs, ["recall@10"])
    assert result.varying == {"recall@10": ("c-1", "c-3")}
    assert result.quality["overall"]["recall@10"].values == (0.75, 1.0, 0.5)
    assert set(result.quality) == {"overall", "category:c"}
    # p95 2, 3, 4 ms: sd 1 ms
    assert result.latency["p95"].sd == pytest.approx(1.0)
    assert result.runs == 3 and result.alpha == 0.01
    with pytest.raises(BaselineError, match="at least 2 runs"):
        calibrate_runs(runs[:1], ["recall@10"])


def _baseline_file(tmp_path, values=(1.0,) * 35 + (0.0,) * 15):
    document = build_baseline([synthetic({"c": list(values)})], PROVENANCE)
    path = tmp_path / "b.json"
    write_baseline(path, document, merge=False)
    return path


def test_a_calibration_is_written_into_its_set_and_read_back(tmp_path):
    path = _baseline_file(tmp_path)
    before = json.loads(path.read_text())
    recorded = calibrate_runs([_numbers([1.0, 0.0], 1.0), _numbers([0.0, 0.0], 2.0)], ["recall@10"])
    write_calibration(path, {"s": recorded})
    after = json.loads(path.read_text())
    assert {k: v for k, v in after["sets"]["s"].items() if k != "calibration"} == before["sets"]["s"]
    read = Baseline.read(path).calibration["s"]
    assert read.quality["overall"]["recall@10"].values == (0.5, 0.0) and read.varying == {"recall@10": ("c-0",)}
    assert read.latency["p95"].values == (1.0, 2.0)
    assert "calibrated" in Baseline.read(path).gated_against(["s"])
    with pytest.raises(BaselineError, match="no baseline for set 'other'"):
        write_calibration(path, {"other": recorded})


def test_a_baseline_without_calibration_reads_as_before(tmp_path):
    baseline = Baseline.read(_baseline_file(tmp_path))
    assert baseline.calibration == {}
    assert "calibrated" not in baseline.gated_against(["s"])


def test_a_calibration_with_the_wrong_count_of_values_is_refused_naming_the_field(tmp_path):
    path = _baseline_file(tmp_path)
    document = json.loads(path.read_text())
    document["sets"]["s"]["calibration"] = {**calibration([0.7, 0.72, 0.74]).to_dict(), "runs": 4}
    path.write_text(baseline_text(document))
    with pytest.raises(BaselineError, match=r"sets\.s\.calibration\.quality\.overall\.recall@10\.means: holds 3 values "
                                            r"for 4 runs"):
        Baseline.read(path)


def test_unknown_families_are_kept_for_later_figures(tmp_path):
    path = _baseline_file(tmp_path)
    document = json.loads(path.read_text())
    document["sets"]["s"]["calibration"] = {**calibration([0.7, 0.72]).to_dict(), "energy": {"joules": [1, 2]}}
    path.write_text(baseline_text(document))
    read = Baseline.read(path).calibration["s"]
    assert read.other == {"energy": {"joules": [1, 2]}} and read.to_dict()["energy"] == {"joules": [1, 2]}


def test_resource_figures_every_run_measured_are_calibrated_and_widen_the_comparison_not_the_budget():
    runs = [dataclasses.replace(synthetic({"c": [1.0, 0.0]}), resources=Resources(startup_seconds=start,
                                                                                  peak_rss_mib=100.0))
            for start in (1.0, 2.0, 3.0)]
    record = calibrate_runs([run.numbers() for run in runs], ["recall@10"])
    # start-up 1, 2, 3 s: sd 1.0 (sample, n - 1); peak RSS the same in every run: sd 0; index size never measured
    assert set(record.resources) == {"startup_seconds", "peak_rss_mib"}
    assert record.resource_allowances() == pytest.approx({"startup_seconds": Z_99 * SQRT2 * 1.0, "peak_rss_mib": 0.0},
                                                         rel=1e-5)
    assert "resources start-up/peak RSS" in record.summary()
    # the baseline's start-up 2 s, this run's 6 s: +200 % and +4 s, beyond +50 % and the 2 s floor (allowed 4 s) warns;
    # with the calibrated 3.29 s of noise allowed on top (7.29 s) it passes, saying so
    base = dataclasses.replace(runs[1], resources=Resources(startup_seconds=2.0)).numbers()
    now = dataclasses.replace(runs[1], resources=Resources(startup_seconds=6.0))
    plain, = [g for g in check([now], {"s": base}, latency_gated=True) if g.gate == "startup-relative"]
    widened, = [g for g in check([now], {"s": base}, latency_gated=True, calibration={"s": record})
                if g.gate == "startup-relative"]
    assert plain.status == "warn" and plain.limit == pytest.approx(4.0)
    assert widened.status == "pass" and widened.limit == pytest.approx(4.0 + Z_99 * SQRT2, rel=1e-5)
    assert "calibrated noise" in widened.message


def test_a_loss_within_the_calibrated_noise_passes_and_says_so():
    # baseline 0.70 over 50 queries; now 0.66: a 4-point loss, beyond the 2-point limit
    base = synthetic({"c": [1.0] * 35 + [0.0] * 15})
    now = synthetic({"c": [1.0] * 33 + [0.0] * 17})
    entry = Baseline.from_document(build_baseline([base], PROVENANCE), Path("b.json")).sets
    plain = {g.category: g for g in check([now], entry) if g.gate == "recall"}
    assert plain[None].status == "fail"
    # overall sd 0.02: allowance 2.326 x 1.414 x 2 = 6.58 points, the limit 8.58: a 4-point loss passes
    noisy = calibration([0.70, 0.72, 0.74])
    calibrated = {g.category: g for g in check([now], entry, calibration={"s": noisy}) if g.gate == "recall"}
    assert calibrated[None].status == "pass"
    assert calibrated[None].limit == pytest.approx(0.02 + Z_99 * SQRT2 * 0.02, rel=1e-5)
    assert "calibrated noise +6.58 points (z 2.33 x sqrt2 x sd 2.00 over 3 runs, alpha 0.01)" in calibrated[None].message
    # the category was not calibrated: its gate is the plain one
    assert calibrated["c"] == plain["c"]


def test_a_loss_beyond_the_calibrated_noise_still_fails():
    base = synthetic({"c": [1.0] * 35 + [0.0] * 15})
    now = synthetic({"c": [1.0] * 30 + [0.0] * 20})  # a 10-point loss against a limit of 2 + 3.29 points
    entry = Baseline.from_document(build_baseline([base], PROVENANCE), Path("b.json")).sets
    gates = {g.category: g for g in check([now], entry, calibration={"s": calibration([0.70, 0.71, 0.72])})
             if g.gate == "recall"}
    assert gates[None].status == "fail"
    assert "(limit 2.0; calibrated noise +3.29 points" in gates[None].message


def test_zero_calibrated_noise_leaves_every_gate_exactly_as_it_was():
    base = synthetic({"a": [1.0] * 10, "b": [0.0] * 40})
    for now in (synthetic({"a": [1.0] * 8 + [0.0] * 2, "b": [0.0] * 38 + [1.0] * 2}), base,
                synthetic({"a": [1.0] * 9 + [0.0], "b": [0.0] * 40})):
        entry = Baseline.from_document(build_baseline([base], PROVENANCE), Path("b.json")).sets
        zero = SetCalibration(runs=5, alpha=0.01, rebuild=None, varying={"recall@10": ()},
                              quality={scope: {"recall@10": Noise((0.5,) * 5)}
                                       for scope in ("overall", "category:a", "category:b")})
        plain = [g.to_dict() for g in check([now], entry)]
        calibrated = [g.to_dict() for g in check([now], entry, calibration={"s": zero})]
        assert json.dumps(calibrated, sort_keys=True) == json.dumps(plain, sort_keys=True)


def test_the_record_round_trips_through_its_dict():
    record = dataclasses.replace(calibration([0.7, 0.72]), rebuild="--seed 1..2",
                                 latency={"p50": Noise((1.0, 1.5)), "p95": Noise((2.0, 2.5))},
                                 resources={"startup_seconds": Noise((0.2, 0.3)), "index_bytes": Noise((10.0, 10.0))})
    from harness.gating.calibration import read_calibration
    from harness.measured import StrictReader
    again = read_calibration(StrictReader(json.loads(json.dumps(record.to_dict())), "b.json", BaselineError))
    assert again == record


def test_queries_that_moved_give_a_spread_even_when_the_means_did_not():
    # two queries swap their hit between runs: the mean is 0.5 in every run, yet each query varies
    runs = [_numbers([1.0, 0.0], 1.0), _numbers([0.0, 1.0], 1.0), _numbers([1.0, 0.0], 1.0)]
    noise = calibrate_runs(runs, ["recall@10"]).quality["overall"]["recall@10"]
    assert noise.values == (0.5, 0.5, 0.5)
    # each query's values 1, 0, 1: sample variance 1/3; sqrt(1/3 + 1/3) / 2 queries
    assert noise.sd == pytest.approx((2 / 3) ** 0.5 / 2)


def test_contracts_broken_in_some_runs_are_noise_and_in_every_run_are_not():
    runs = [synthetic({"c": [1.0] * 4}, broken=broken).numbers()
            for broken in (("c-0", "c-1"), ("c-0",), ("c-0", "c-2"))]
    recorded = calibrate_runs(runs, ["recall@10"])
    assert recorded.contracts == {"c-1": ("forbid:x",), "c-2": ("forbid:x",)}  # c-0 broke in every run: a break
    base = synthetic({"c": [1.0] * 4})
    entry = Baseline.from_document(build_baseline([base], PROVENANCE), Path("b.json")).sets
    now = synthetic({"c": [1.0] * 4}, broken=("c-1", "c-2"))
    plain = next(g for g in check([now], entry) if g.gate == "contract")
    calibrated = next(g for g in check([now], entry, calibration={"s": recorded}) if g.gate == "contract")
    assert plain.status == "fail"
    assert calibrated.status == "pass" and calibrated.message == (
        "s: 2 of 4 contracts hold; 2 queries broke a contract within calibrated noise (c-1, c-2)")
    worse = synthetic({"c": [1.0] * 4}, broken=("c-0", "c-1"))  # c-0: never noise
    failed = next(g for g in check([worse], entry, calibration={"s": recorded}) if g.gate == "contract")
    assert failed.status == "fail" and failed.flipped == ("c-0",)
    assert failed.message.endswith("; 1 query broke a contract within calibrated noise (c-1)")


def test_a_re_baseline_drops_the_calibration_of_the_sets_it_records_and_keeps_the_others(tmp_path):
    path = _baseline_file(tmp_path)
    other = build_baseline([dataclasses.replace(synthetic({"c": [1.0, 0.0]}), name="t")], PROVENANCE)
    write_baseline(path, other)  # merged: s kept, t added
    recorded = calibrate_runs([_numbers([1.0, 0.0], 1.0), _numbers([0.0, 0.0], 2.0)], ["recall@10"])
    write_calibration(path, {"s": recorded, "t": recorded})
    write_baseline(path, build_baseline([synthetic({"c": [1.0] * 35 + [0.0] * 15})], PROVENANCE))  # s re-recorded
    assert set(Baseline.read(path).calibration) == {"t"}


def test_a_count_of_breaks_within_its_calibrated_noise_passes_and_beyond_it_fails():
    qids = [f"c-{i}" for i in range(10)]
    runs = [synthetic({"c": [1.0] * 10}, broken=qids[:count]).numbers() for count in (3, 5, 4)]
    recorded = calibrate_runs(runs, ["recall@10"])
    assert recorded.breaks is not None and recorded.breaks.values == (3.0, 5.0, 4.0)  # sd 1
    base = synthetic({"c": [1.0] * 10})  # the baseline's run broke none
    entry = Baseline.from_document(build_baseline([base], PROVENANCE), Path("b.json")).sets
    # allowance 2.326 x 1.414 x 1 = 3.29: three new breaks pass (c-7..c-9 never broke in calibration), four fail
    three = next(g for g in check([synthetic({"c": [1.0] * 10}, broken=qids[7:])], entry, calibration={"s": recorded})
                 if g.gate == "contract")
    assert three.status == "pass" and three.message == (
        "s: 3 hard contract(s) broken in c-7, c-8, c-9; within calibrated noise: baseline 0, +3 allowed up to +3.3 "
        "(z 2.33 x sqrt2 x sd 1.0 over 3 runs, alpha 0.01)")
    four = next(g for g in check([synthetic({"c": [1.0] * 10}, broken=qids[6:])], entry, calibration={"s": recorded})
                if g.gate == "contract")
    assert four.status == "fail"


def test_the_p95_comparison_across_runs_allows_for_the_calibrated_p95_spread():
    # baseline p95 10 ms, now 25 ms: +150 % and +15 ms, beyond +100 % and +10 ms (allowed 20 ms): it warns.
    # Calibrated p95s 8, 10, 12 ms: sd 2.0, allowance z_0.99 x sqrt2 x 2.0 = 6.58 ms: allowed 26.58 ms, it passes.
    base = dataclasses.replace(synthetic({"c": [1.0]}), latency=Latency(30, 5.0, 10.0, 10.0)).numbers()
    now = dataclasses.replace(synthetic({"c": [1.0]}), latency=Latency(30, 12.0, 25.0, 25.0))
    record = dataclasses.replace(calibration([1.0, 1.0, 1.0]), latency={"p95": Noise((8.0, 10.0, 12.0))})
    plain, = [g for g in check([now], {"s": base}) if g.gate == "latency-relative"]
    widened, = [g for g in check([now], {"s": base}, calibration={"s": record}) if g.gate == "latency-relative"]
    assert (plain.status, plain.limit) == ("warn", pytest.approx(20.0))
    assert widened.status == "pass" and widened.limit == pytest.approx(20.0 + Z_99 * SQRT2 * 2.0, rel=1e-5)
    assert "+6.58 ms calibrated noise" in widened.message
