"""harness/history/changepoints.py: the energy statistic against its definition, E-Divisive on hand-made
series, outliers, staircases, and the per-query confirmation. Rates on realistic histories are the
benchmark's, not a test's."""

from __future__ import annotations

import itertools
import random

import pytest

from harness.history.changepoints import analyse, edivisive, isolated_runs, run_noise, split_divergences


def energy_q(x: list[float], y: list[float]) -> float:
    """Matteson and James's q straight from the definition: (m k / (m + k)) times
    (2/(m k) sum |x - y| - sum_{i<j} |x_i - x_j| / C(m, 2) - sum_{i<j} |y_i - y_j| / C(k, 2))."""
    m, k = len(x), len(y)
    between = 2 / (m * k) * sum(abs(a - b) for a in x for b in y)
    within_x = sum(abs(a - b) for a, b in itertools.combinations(x, 2)) / (m * (m - 1) / 2) if m > 1 else 0.0
    within_y = sum(abs(a - b) for a, b in itertools.combinations(y, 2)) / (k * (k - 1) / 2) if k > 1 else 0.0
    return m * k / (m + k) * (between - within_x - within_y)


def test_the_divergence_of_a_hand_split():
    # [0, 0 | 1, 1]: 4 pairs across at distance 1, none within: q = (2*2/4) * (2/4 * 4 - 0 - 0) = 2.
    assert split_divergences([0.0, 0.0, 1.0, 1.0]) == [(2, 2.0)]
    # [0, 1 | 0, 1] (min size 2: only tau 2): across |0-0|+|0-1|+|1-0|+|1-1| = 2, within each 1;
    # q = 1 * (2/4 * 2 - 1 - 1) = -1.
    assert split_divergences([0.0, 1.0, 0.0, 1.0]) == [(2, -1.0)]


def test_every_split_matches_the_definition():
    rng = random.Random(7)
    values = [rng.gauss(0, 1) for _ in range(17)]
    for min_size in (1, 2, 3):
        found = split_divergences(values, min_size)
        assert [tau for tau, _ in found] == list(range(min_size, len(values) - min_size + 1))
        for tau, q in found:
            assert q == pytest.approx(energy_q(values[:tau], values[tau:]), rel=1e-9, abs=1e-12)


def test_a_clean_step_is_found_where_it_is_and_nothing_else():
    assert [tau for tau, _ in edivisive([0.8] * 10 + [0.77] * 6)] == [10]
    assert edivisive([0.8] * 16) == []
    assert edivisive([0.8, 0.7, 0.6]) == []  # too short for two levels


def test_two_steps_are_two_change_points():
    values = [0.80] * 12 + [0.70] * 12 + [0.75] * 12
    assert [tau for tau, _ in edivisive(values)] == [12, 24]
    analysis = analyse(values)
    assert [(c.last_before, c.first_after) for c in analysis.changes] == [(11, 12), (23, 24)]
    assert [round(c.size, 10) for c in analysis.changes] == [-0.1, 0.05]


def _noisy(levels: list[float], seed: int = 1, sigma: float = 0.003) -> list[float]:
    rng = random.Random(seed)
    return [level + rng.gauss(0, sigma) for level in levels]


def test_noise_only_gives_no_change():
    for seed in range(5):
        assert analyse(_noisy([0.75] * 60, seed)).changes == ()


def test_the_noise_estimate_ignores_a_step():
    flat = _noisy([0.75] * 40, seed=3)
    stepped = flat[:20] + [v - 0.05 for v in flat[20:]]
    assert run_noise(stepped) == pytest.approx(run_noise(flat), rel=0.2)
    assert 0.002 < run_noise(flat) < 0.0045  # sigma 0.003


def test_a_one_run_blip_is_an_outlier_not_a_change():
    values = _noisy([0.75] * 30 + [0.71] + [0.75] * 10)
    analysis = analyse(values)
    assert analysis.changes == ()
    assert [(o.index, o.latest) for o in analysis.outliers] == [(30, False)]
    assert analysis.outliers[0].size == pytest.approx(-0.04, abs=0.01)


def test_the_last_run_off_the_level_is_an_outlier_until_the_next_runs_say():
    values = _noisy([0.75] * 30 + [0.71])
    assert [(o.index, o.latest) for o in analyse(values).outliers] == [(30, True)]
    two = analyse(_noisy([0.75] * 30 + [0.71] * 2))  # a second run at the new level: not a lone run any more
    assert two.outliers == () and [(c.last_before, c.first_after) for c in two.changes] == [(29, 30)]


def test_isolated_runs_need_both_neighbours_on_one_side():
    # 0.70 sits between its neighbours' levels (a step's first run): not isolated; 0.60 is.
    assert [o.index for o in isolated_runs([0.8, 0.8, 0.7, 0.6, 0.6, 0.6], 0.0)] == []
    assert [o.index for o in isolated_runs([0.8, 0.8, 0.6, 0.8, 0.8], 0.0)] == [2]


def test_a_staircase_of_small_drops_is_one_change_over_its_whole_range():
    steps = [0.75] * 20 + [0.75 - 0.006 * (i + 1) for i in range(5) for _ in range(2)] + [0.72] * 4
    analysis = analyse(_noisy(steps, seed=4, sigma=0.002))
    [change] = analysis.changes
    assert change.last_before <= 19 and change.first_after >= 28  # the last step's first run is 28
    assert change.size == pytest.approx(-0.03, abs=0.004)


def _per_query(levels: list[float], moved: int, queries: int = 100) -> list[dict[str, float]]:
    """Per-query values whose run means follow `levels`: `moved` queries carry the whole change."""
    base = levels[0]
    rows = []
    for level in levels:
        row = {f"q{i}": 0.5 for i in range(queries)}
        for i in range(moved):
            row[f"q{i}"] = 0.5 + (level - base) * queries / moved
        rows.append(row)
    return rows


def test_a_change_carried_by_one_query_is_not_confirmed_per_query():
    levels = [0.5] * 12 + [0.49] * 12  # one query of 100 went from 0.5 to -0.5 worth of recall: one query's noise
    assert len(analyse(levels).changes) == 1
    assert analyse(levels, _per_query(levels, moved=1)).changes == ()
    [change] = analyse(levels, _per_query(levels, moved=10)).changes  # ten queries lost 0.1 each: kept
    assert change.ci is not None and change.ci[1] < 0 and change.ci[0] <= -0.01 <= change.ci[1]


def test_the_analysis_is_deterministic_for_a_seed():
    values = _noisy([0.75] * 25 + [0.74] * 25, seed=9)
    assert analyse(values, seed=3) == analyse(values, seed=3)
