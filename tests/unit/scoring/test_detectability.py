"""What a scope can detect (harness/scoring/detectability.py), against hand-computed figures, a t table and scipy."""

import math

import pytest

from harness.scoring.detectability import (bound_sigma_d, detectability, multiplier, queries_needed, small_change,
                                           smallest_sign_flip_p, t_cdf, t_quantile)

Z = 1.959963984540054 + 0.8416212335729143  # z[0.975] + z[0.8], from a normal table
# Student's t quantiles from a printed t table (two-sided 0.05 and one-sided 0.20 columns), 3 decimals
T_TABLE = {1: (12.706, 1.376), 3: (3.182, 0.978), 5: (2.571, 0.920), 9: (2.262, 0.883), 19: (2.093, 0.861),
           29: (2.045, 0.854)}


def t_multiplier(units):
    return sum(T_TABLE[units - 1])


@pytest.mark.parametrize("df", sorted(T_TABLE))
def test_t_quantiles_match_a_t_table(df):
    assert t_quantile(0.975, df) == pytest.approx(T_TABLE[df][0], abs=6e-4)
    assert t_quantile(0.8, df) == pytest.approx(T_TABLE[df][1], abs=6e-4)
    assert t_quantile(0.025, df) == -t_quantile(0.975, df)


def test_t_distribution_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")  # an independent computation where scipy is installed
    for df in (1, 2, 3, 4, 5, 7, 10, 20, 50, 200, 1000, 10_000):
        for p in (0.6, 0.8, 0.9, 0.95, 0.975, 0.995):
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9), (p, df)
        for t in (-4.0, -0.7, 0.0, 1.3, 8.0):
            assert t_cdf(t, df) == pytest.approx(stats.t.cdf(t, df), abs=1e-10), (t, df)


def test_the_normal_understates_the_t_multiplier_by_more_than_ten_percent_below_twenty_units():
    assert multiplier() == pytest.approx(Z, abs=1e-9)
    assert multiplier(units=10) / Z == pytest.approx((2.262 + 0.883) / Z, abs=1e-3) and multiplier(units=10) / Z > 1.1
    assert multiplier(units=30) / Z < 1.1
    stats = pytest.importorskip("scipy.stats")
    assert multiplier(0.01, 0.9, units=8) == pytest.approx(stats.t.ppf(0.995, 7) + stats.t.ppf(0.9, 7), rel=1e-9)


def test_a_change_sizes_the_test_by_its_own_differences():
    # differences -1 on two of ten units, 0 elsewhere: mean -0.2, sample sd sqrt((2 x 0.64 + 8 x 0.04) / 9) = 0.4216
    current = {f"q{i}": 0.0 if i < 2 else 1.0 for i in range(10)}
    found = detectability(current, {}, {f"q{i}": 1.0 for i in range(10)})
    sd = math.sqrt((2 * 0.64 + 8 * 0.04) / 9)
    assert found.observed and found.sigma_d == pytest.approx(sd) and found.one_query == 0.1
    assert found.detectable == pytest.approx(t_multiplier(10) * sd / math.sqrt(10), rel=1e-3)


@pytest.mark.parametrize("units, reachable", [(1, False), (5, False), (6, True)])
def test_a_scope_whose_sign_flip_test_cannot_reach_alpha_detects_none(units, reachable):
    # the smallest two-sided p of a sign-flip test over m units is 2/2^m: 0.0625 at 5, 0.03125 at 6
    assert smallest_sign_flip_p(units) == pytest.approx(min(1.0, 2 / 2 ** units))
    values = {f"q{i}": float(i % 2) for i in range(units)}
    found = detectability(values, {}, {qid: 1.0 for qid in values})
    assert (found.detectable is not None) == reachable
    assert found.unreachable.startswith("none: ") != reachable
    assert found.too_few_units != reachable  # the reason `sets show` prints under its table


def test_a_figure_beyond_the_metric_range_is_none():
    # differences +1, -1 alternating over 6 units: sd sqrt(6/5), (2.571 + 0.920) x 1.0954 / sqrt(6) = 1.56 > 1
    current = {f"q{i}": float(i % 2) for i in range(6)}
    found = detectability(current, {}, {qid: 1.0 - value for qid, value in current.items()})
    assert found.detectable is None and "beyond the metric's range of 100 points" in found.unreachable
    assert not found.too_few_units  # 6 units reach alpha: the other reason


def test_the_bound_for_a_change_of_system_adds_the_widest_spread_of_the_other_system():
    # ten units 1, 0, 1, 0, ...: mean 0.5, sample variance 10 x 0.25 / 9; the other system at any mean near 0.5
    # can have variance 0.25: sigma_d^2 = 0.27778 + 0.25, delta = (2.262 + 0.883) x sqrt(0.52778 / 10) = 0.7226
    found = detectability({f"q{i}": float(i % 2) for i in range(10)}, {})
    assert not found.observed and found.sigma_d == pytest.approx(math.sqrt(10 * 0.25 / 9 + 0.25))
    assert found.detectable == pytest.approx(t_multiplier(10) * math.sqrt((10 * 0.25 / 9 + 0.25) / 10), rel=1e-3)


def test_a_saturated_baseline_is_bounded_by_what_the_other_system_can_still_move():
    # twenty units all 1.0: no spread here, but another system delta lower can have variance delta (1 - delta):
    # delta = M sqrt(delta (1 - delta) / 20), so delta = M^2 / (20 + M^2) with M = t[0.975;19] + t[0.8;19]
    found = detectability({f"q{i}": 1.0 for i in range(20)}, {})
    m2 = t_multiplier(20) ** 2
    assert found.detectable == pytest.approx(m2 / (20 + m2), rel=2e-3)
    assert bound_sigma_d({f"q{i}": 1.0 for i in range(20)}, {}, 0.02) == pytest.approx(math.sqrt(0.02 * 0.98))


def test_a_paraphrase_group_is_one_unit():
    # q0 and q1 are one group (unit mean 0.5); 7 more units alternate 1, 0: m = 8 units, n = 9 queries
    values = {"q0": 1.0, "q1": 0.0, **{f"r{i}": float(i % 2) for i in range(7)}}
    found = detectability(values, {"q0": "g", "q1": "g"})
    assert (found.queries, found.units, found.one_query) == (9, 8, pytest.approx(1 / 9))


def test_queries_needed_takes_the_t_quantiles_at_the_size_it_finds():
    # the normal's answer, ceil((2.8016 x 0.5 / 0.02)^2) = 4906, is a lower bound; the t at ~4900 units adds a few
    needed = queries_needed(0.5, 0.02)
    assert needed >= math.ceil((Z * 0.5 / 0.02) ** 2) == 4906
    stats = pytest.importorskip("scipy.stats")

    def enough(m):
        return m >= ((stats.t.ppf(0.975, m - 1) + stats.t.ppf(0.8, m - 1)) * 0.5 / 0.02) ** 2
    assert enough(needed) and not enough(needed - 1)


def test_a_small_change_is_sized_from_its_moves_only_when_ten_units_moved():
    base = {f"q{i:02d}": 0.5 for i in range(40)}
    nine = {qid: value + (0.5 if i < 9 else 0.0) for i, (qid, value) in enumerate(base.items())}
    sized = small_change(nine, base, {})
    assert sized.detectable is None and sized.moved_words() == "9 of 40 units moved"
    assert sized.reason == "too few moved units to size a change (9 moved; at least 10)"


def test_a_small_change_figure_solves_its_own_variance():
    # 40 units, 10 moved: 5 by +0.5 and 5 by -0.5. Mean square over the units 10 x 0.25 / 40 = 0.0625; moves of
    # size a = 0.5 and mean square q = 0.25. A change of mean delta adds delta x 40 / 0.5 moves of 0.5:
    # sigma_d^2 = 0.0625 + delta x 0.25 / 0.5 - delta^2, and the figure solves delta = M sigma_d(delta) / sqrt(40).
    base = {f"q{i:02d}": 0.5 for i in range(40)}
    now = {qid: value + (0.5 if i < 5 else -0.5 if i < 10 else 0.0) for i, (qid, value) in enumerate(base.items())}
    sized = small_change(now, base, {})
    stats = pytest.importorskip("scipy.stats")
    factor = stats.t.ppf(0.975, 39) + stats.t.ppf(0.8, 39)
    low, high = 0.0, 1.0
    for _ in range(100):  # bisection on delta - M sigma_d(delta) / sqrt(40), increasing on [0, 1] here
        middle = (low + high) / 2
        low, high = (middle, high) if middle < factor * math.sqrt(0.0625 + middle / 2 - middle ** 2) / math.sqrt(40) \
            else (low, middle)
    assert sized.moved == 10 and sized.detectable == pytest.approx(high, abs=1e-6)
    assert sized.sigma_d(0.02) == pytest.approx(math.sqrt(0.0625 + 0.01 - 0.0004))


def test_a_small_change_rise_that_cannot_be_undone_is_covered_by_the_drop():
    # 10 queries rose 0 -> 1 (none can go the other way: a stuck rise of 10, 0.25 per unit), 30 stayed at 1.0
    # (room 1: further moves of size 1, a = q = 1). var(d) = 10 / 40 + (delta + 0.25) - delta^2.
    base = {f"q{i:02d}": 0.0 if i < 10 else 1.0 for i in range(40)}
    now = {qid: 1.0 for qid in base}
    sized = small_change(now, base, {})
    stats = pytest.importorskip("scipy.stats")
    factor = stats.t.ppf(0.975, 39) + stats.t.ppf(0.8, 39)
    low, high = 0.0, 1.0
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if middle < factor * math.sqrt(0.25 + middle + 0.25 - middle ** 2) / math.sqrt(40) \
            else (low, middle)
    assert sized.detectable == pytest.approx(high, abs=1e-6) and sized.moved_words() == "10 of 40 units moved"


def test_a_paraphrase_group_moves_as_one_summed_unit():
    # 20 queries in 10 groups of two; both queries of groups g0-g4 rose by 0.5: their unit sums are 1.0
    base = {f"q{i:02d}": 0.5 for i in range(20)}
    units = {qid: f"g{i // 2}" for i, qid in enumerate(base)}
    now = {qid: value + (0.5 if i < 10 else 0.0) for i, (qid, value) in enumerate(base.items())}
    sized = small_change(now, base, units, min_moved=5)
    # 5 of 10 units moved; unit sums 1.0: mean square 5 / 10 = 0.5; per unit 2 queries
    assert sized.moved_words() == "5 of 10 units moved" and sized.mean_square == pytest.approx(0.5)
    assert sized.per_unit == 2.0
