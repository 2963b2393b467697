"""Paired bootstrap, randomization test and Holm: hand-worked cases and known properties."""

import itertools

import pytest

from harness.scoring.stats import bootstrap_ci, group_differences, holm, paired_test, randomization_p_value


def test_identical_runs_give_p_1_and_a_zero_interval():
    values = {f"q{i}": i / 10 for i in range(12)}
    result = paired_test(values, dict(values), resamples=2000, seed=3)
    assert (result.ci_low, result.ci_high, result.p_value, result.mean_difference) == (0.0, 0.0, 1.0, 0.0)


def test_randomization_matches_the_exact_enumeration():
    # Differences 1, 2, 3 (three independent queries). The 8 sign patterns give sums
    # 6, 4, 2, 0, 0, -2, -4, -6; |sum| >= 6 in 2 of 8, so the exact two-sided p is 0.25.
    clusters = [(1.0, 1), (2.0, 1), (3.0, 1)]
    exact = sum(abs(sum(s * d for s, (d, _) in zip(signs, clusters))) >= 6
                for signs in itertools.product((1, -1), repeat=3)) / 8
    assert exact == 0.25
    assert randomization_p_value(clusters, resamples=20_000, seed=1) == pytest.approx(0.25, abs=0.01)


def test_bootstrap_of_a_constant_difference_is_that_constant():
    assert bootstrap_ci([(0.5, 1)] * 7, resamples=500) == (0.5, 0.5)


def test_bootstrap_two_groups_hand_worked():
    # Groups with mean differences 0 and 1 (one query each): a draw of 2 groups gives
    # 0 (1/4), 0.5 (1/2) or 1 (1/4); the 2.5% and 97.5% points are 0 and 1.
    low, high = bootstrap_ci([(0.0, 1), (1.0, 1)], resamples=4000, seed=5)
    assert (low, high) == (0.0, 1.0)


def test_uniform_shift_is_detected():
    base = {f"q{i}": (i % 7) / 7 for i in range(60)}
    candidate = {qid: value + 0.1 for qid, value in base.items()}
    result = paired_test(base, candidate, resamples=3000, seed=11)
    assert result.mean_difference == pytest.approx(0.1)
    assert result.ci_low == pytest.approx(0.1) and result.ci_high == pytest.approx(0.1)
    assert result.p_value < 0.001


def test_groups_resample_together():
    # Four queries in two intent groups: the test sees 2 units, not 4.
    base = {"a1": 0.0, "a2": 0.0, "b1": 0.0, "b2": 0.0}
    candidate = {"a1": 1.0, "a2": 1.0, "b1": 0.0, "b2": 0.0}
    groups = {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}
    assert group_differences(base, candidate, groups) == [(2.0, 2), (0.0, 2)]
    result = paired_test(base, candidate, groups, resamples=4000, seed=2)
    assert result.n_groups == 2 and result.n_queries == 4
    # sign flips of (2, 0): |sum| = 2 always, so p = 1
    assert result.p_value == 1.0


def test_only_shared_queries_are_compared():
    assert group_differences({"a": 1.0, "b": 0.0}, {"b": 1.0, "c": 0.0}) == [(1.0, 1)]


def test_holm_hand_worked():
    # p = 0.01, 0.04, 0.03 with m = 3: sorted 0.01*3 = 0.03, 0.03*2 = 0.06, max(0.06, 0.04*1) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []
