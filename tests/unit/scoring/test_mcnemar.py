"""The exact McNemar test of graded contracts: hand-computed binomial tails, and scipy's binomtest."""

import pytest

from harness.scoring.stats import mcnemar_exact


@pytest.mark.parametrize(("broken", "fixed", "expected"), [
    (10, 0, 2 / 2 ** 10),            # all ten discordant one way: 2 * (1/2)^10
    (0, 10, 2 / 2 ** 10),            # symmetric
    (5, 1, 2 * (1 + 6) / 64),        # n 6: P[X <= 1] = (C(6,0) + C(6,1)) / 2^6
    (3, 3, 1.0),                     # balanced: 2 * P[X <= 3] > 1, capped
    (0, 0, 1.0),                     # nothing changed
    (1, 0, 1.0),                     # one flip can never be significant: 2 * 1/2
    (6, 0, 2 / 64),                  # 0.03125: the fewest one-way flips reaching 0.05 is 6
    (5, 0, 2 / 32),                  # 0.0625: five are not enough
])
def test_exact_mcnemar_by_hand(broken, fixed, expected):
    assert mcnemar_exact(broken, fixed) == pytest.approx(expected, rel=1e-12)


def test_exact_mcnemar_agrees_with_scipy_binomtest():
    stats = pytest.importorskip("scipy.stats")
    for broken in range(0, 41, 3):
        for fixed in range(0, 41, 4):
            n = broken + fixed
            expected = stats.binomtest(broken, n, 0.5).pvalue if n else 1.0
            assert mcnemar_exact(broken, fixed) == pytest.approx(expected, rel=1e-9, abs=1e-300), (broken, fixed)
    # large counts stay exact (integer sums, no float underflow of the tail's terms)
    assert mcnemar_exact(700, 600) == pytest.approx(stats.binomtest(700, 1300, 0.5).pvalue, rel=1e-9)


def test_negative_counts_are_refused():
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)
