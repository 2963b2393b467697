"""What a scope can detect (harness/scoring/detectability.py), against hand-computed figures and scipy's normal."""

import math

import pytest

from harness.scoring.detectability import detectability, multiplier, queries_needed

Z = 1.959963984540054 + 0.8416212335729143  # z[0.975] + z[0.8], from a normal table


def test_the_multiplier_is_the_normal_quantiles():
    assert multiplier() == pytest.approx(Z, abs=1e-9)
    scipy_stats = pytest.importorskip("scipy.stats")  # an independent computation where scipy is installed
    assert multiplier(0.01, 0.9) == pytest.approx(scipy_stats.norm.ppf(0.995) + scipy_stats.norm.ppf(0.9), abs=1e-9)


def test_a_change_sizes_the_test_by_its_own_differences():
    # differences -1, 0, 0, 0 over four queries: sample sd = sqrt((0.5625 + 3 x 0.0625) / 3) = 0.5
    found = detectability({"a": 0.0, "b": 1.0, "c": 1.0, "d": 1.0}, {}, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0})
    assert found.observed and found.sigma_d == pytest.approx(0.5)
    assert found.detectable == pytest.approx(Z * 0.5 / 2) and found.one_query == 0.25


def test_without_a_change_the_bound_for_a_change_of_system():
    # values 1, 0, 1, 0: sample sd sqrt(4 x 0.25 / 3) = 0.57735; sigma_d = sqrt(2) x that = 0.8165
    found = detectability({"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0}, {})
    assert not found.observed and found.sigma_d == pytest.approx(math.sqrt(2 / 3))
    assert found.detectable == pytest.approx(Z * math.sqrt(2 / 3) / 2)


def test_a_paraphrase_group_is_one_unit():
    # a and b are one group: unit means 0.5 (a, b) and 1, 0 (c, d): m = 3 units, n = 4 queries
    found = detectability({"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0}, {"a": "g", "b": "g"})
    assert (found.queries, found.units, found.one_query) == (4, 3, 0.25)
    sd = math.sqrt(((0.5 - 0.5) ** 2 + 0.25 + 0.25) / 2)
    assert found.detectable == pytest.approx(Z * math.sqrt(2) * sd / math.sqrt(3))


def test_a_saturated_scope_says_nothing_rather_than_zero():
    found = detectability({"a": 1.0, "b": 1.0, "c": 1.0}, {})
    assert found.detectable is None and not found.covers(0.5)


def test_queries_needed_inverts_the_detectable_effect():
    # (2.8016 x 0.5 / 0.02)^2 = 4905.5 -> 4906 units to detect 2 points when the differences have sd 0.5
    assert queries_needed(0.5, 0.02) == math.ceil((Z * 0.5 / 0.02) ** 2) == 4906
