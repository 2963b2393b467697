"""Paired latency: the ratio of percentiles with its bootstrap interval, and the gate it decides."""

import dataclasses

import pytest

from harness.gating.gates import check
from harness.gating.policy import GatePolicy
from harness.measured import Latency
from harness.scoring.evaluate import latency_summary
from harness.scoring.stats import paired_percentile_ratio
from tests.builders import set_result

ROWS = [("a", 1, 1, 1)] * 24  # 24 queries, each found now and in the baseline


def paired(base_ms, run_ms):
    """The builders' result with per-query latencies on both sides (milliseconds)."""
    result = set_result(ROWS[:len(base_ms)], 3)
    queries = tuple(dataclasses.replace(q, latency_seconds=run / 1000, base_latency_seconds=base / 1000)
                    for q, base, run in zip(result.queries, base_ms, run_ms))
    return dataclasses.replace(result, queries=queries, latency=latency_summary([r / 1000 for r in run_ms]),
                               base_latency=latency_summary([b / 1000 for b in base_ms]))


def paired_gate(result, policy=GatePolicy()):
    gates = check([result], {"s": set_result(ROWS[:len(result.queries)], 2).numbers()}, policy=policy)
    return {g.gate: g for g in gates}


def test_ratio_of_percentiles_by_hand():
    # base all 1 ms; run 1..5 ms: nearest-rank p50 of the run is its 3rd smallest, 3 ms -> 3x
    ratio = paired_percentile_ratio([1.0] * 5, [1.0, 2.0, 3.0, 4.0, 5.0], 50)
    assert ratio.ratio == 3.0
    assert 1.0 <= ratio.ci_low <= 3.0 <= ratio.ci_high <= 5.0
    # an exact doubling is 2x in every resample: the interval is the point
    doubled = paired_percentile_ratio([0.1, 0.2, 0.3, 0.4], [0.2, 0.4, 0.6, 0.8], 95)
    assert (doubled.ratio, doubled.ci_low, doubled.ci_high) == (2.0, 2.0, 2.0)


def test_ratio_refuses_unpaired_or_zero_values():
    with pytest.raises(ValueError):
        paired_percentile_ratio([1.0, 2.0], [1.0], 50)
    with pytest.raises(ValueError):
        paired_percentile_ratio([0.0, 1.0], [1.0, 1.0], 50)


def test_same_latencies_pass_and_say_paired():
    base = [1.0 + 0.1 * (i % 7) for i in range(24)]
    gates = paired_gate(paired(base, base))
    gate = gates["latency-paired"]
    assert gate.status == "pass" and "latency-relative" not in gates
    assert "paired in this run" in gate.message and "p50 1.00x" in gate.message
    assert "baseline 1.6 ms, paired in this run" in gates["latency"].message  # p95 of base: 23rd of 24 -> 1.6


def test_a_tripling_warns_and_a_tenfold_fails_by_policy():
    base = [1.0 + 0.1 * (i % 7) for i in range(24)]
    tripled = paired_gate(paired(base, [3 * b for b in base]))["latency-paired"]
    assert tripled.status == "warn" and "p50 3.00x" in tripled.message
    # the gate's numbers are in ms: base p50 (12th smallest of 24 is 1.3) and the run's, limit 1.5x the base's
    expected = {"p50": (1.3, 3.9), "p95": (1.6, 4.8)}[tripled.metric]  # p95: the 23rd smallest of 24
    assert (tripled.baseline, tripled.current) == pytest.approx(expected)
    assert tripled.limit == pytest.approx(1.5 * expected[0])
    tenfold = paired_gate(paired(base, [10 * b for b in base]))["latency-paired"]
    assert tenfold.status == "fail"
    never = dataclasses.replace(GatePolicy(), latency_paired_fails_ratio=None)
    assert paired_gate(paired(base, [10 * b for b in base]), never)["latency-paired"].status == "warn"


def test_too_few_pairs_decide_nothing_and_warn_so():
    base = [1.0] * 10
    gate = paired_gate(paired(base, [10.0] * 10))["latency-paired"]  # 10 pairs, min_samples 20: even 10x is not decided
    assert gate.status == "warn" and gate.current is None
    assert gate.message == ("s latency against the baseline's backend, paired in this run: not decided on 10 query "
                            "pairs (latency.min_samples asks for 20; a set of more queries gives a verdict)")


def test_without_pairs_the_relative_rule_says_across_runs():
    result = dataclasses.replace(set_result(ROWS, 3), latency=Latency(24, 30.0, 50.0, 60.0))
    gates = paired_gate(result)
    assert "latency-paired" not in gates
    assert "across runs and machines" in gates["latency-relative"].message
    assert gates["latency-relative"].status == "warn"
    assert "baseline 1.0 ms, across runs and machines" in gates["latency"].message


@pytest.mark.parametrize("latency, expected", [
    ({"paired_warn_ratio": 0.5}, "latency.paired_warn_ratio: must be a number from 1 to"),
    ({"paired_fails_ratio": "3"}, "latency.paired_fails_ratio: must be a number from 1 to"),
    ({"paired_ratio": 2}, "paired_ratio"),
])
def test_paired_policy_keys_are_checked(tmp_path, latency, expected):
    import json

    from harness.errors import UsageError
    from harness.gating.policy import load_policy
    from harness.scoring.evaluate import policy_metric_name
    path = tmp_path / "gate-policy.json"
    path.write_text(json.dumps({"format": 1, "latency": latency}))
    with pytest.raises(UsageError, match=expected):
        load_policy(path, policy_metric_name)


def test_paired_policy_keys_are_read(tmp_path):
    import json

    from harness.gating.policy import load_policy
    from harness.scoring.evaluate import policy_metric_name
    path = tmp_path / "gate-policy.json"
    path.write_text(json.dumps({"format": 1, "latency": {"paired_warn_ratio": 1.2, "paired_fails_ratio": None}}))
    policy = load_policy(path, policy_metric_name)
    assert (policy.latency_paired_warn_ratio, policy.latency_paired_fails_ratio) == (1.2, None)
    assert policy.to_dict()["latency"]["paired_fails_ratio"] is None
