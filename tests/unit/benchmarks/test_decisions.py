"""benchmarks/decisions.py: how a decided pair is counted, the subsets it decides on, and the rules it compares.

Expected values are worked by hand from the synthetic rows (tests/builders.set_result: row =
(category, relevant, hits at baseline, hits now)); the verdicts come from the real gating code.
"""

import pytest

from benchmarks import decisions
from tests.builders import set_result


@pytest.mark.parametrize("truth, failed, counted", [
    (-0.03, False, {"regressions": 1, "missed": 1}),             # a real drop over 2 points that passed: a miss
    (-0.03, True, {"regressions": 1}),                           # caught
    (-0.02, True, {"not_drops": 1, "false_alarms": 1}),          # exactly 2 points is not "more than 2"
    (0.03, True, {"not_drops": 1, "false_alarms": 1, "improvements": 1, "improvements_failed": 1}),
    (0.0, False, {"not_drops": 1}),
])
def test_a_decision_is_counted_by_the_whole_set_truth(truth, failed, counted):
    tally = decisions.Tally()
    tally.add(truth, failed)
    expected = {"regressions": 0, "missed": 0, "improvements": 0, "improvements_failed": 0, "not_drops": 0,
                "false_alarms": 0, **counted}
    assert vars(tally) == expected


def test_a_subset_is_aggregated_over_its_own_queries():
    # q0..q3: recall 1, 0.5, 0, 1 (category a, a, b, b); the subset {q1, q2}: overall 0.25, a 0.5, b 0.0
    result = set_result([("a", 1, 1, 1), ("a", 2, 1, 1), ("b", 1, 0, 0), ("b", 1, 1, 1)], 2)
    cut = decisions.subset(result, frozenset({"q1", "q2"}))
    assert [q.qid for q in cut.queries] == ["q1", "q2"] and cut.query_count == 2
    assert cut.aggregates.overall.means["recall@10"] == 0.25
    assert {name: scope.means["recall@10"] for name, scope in cut.aggregates.category.items()} == {"a": 0.5, "b": 0.0}
    assert decisions.subset(result, None) is result


def test_the_rules_differ_where_they_should():
    rules = decisions.policies()
    # a: 10 of 20 queries lost (sign-flip p = 2/2^10, significant after Holm over a and b), b: 10 of 40 gained;
    # the set is unchanged (0 points), so the founding rule passes and both category rules fail
    rows = [("a", 1, 1, 0)] * 10 + [("a", 1, 1, 1)] * 10 + [("b", 1, 0, 1)] * 10 + [("b", 1, 0, 0)] * 30
    base, now = set_result(rows, 2), set_result(rows, 3)
    assert [decisions.verdict(base, now, rules[rule]) for rule in decisions.RULES] == [False, True, True]
    # one query of a's three lost while b gains 5 of 37 (+10 points on the set): the discount rule forgives the
    # worst query (0 points left), holm finds one moved query insignificant (p = 1): nobody fails
    rows = [("a", 1, 1, 0), ("a", 1, 1, 1), ("a", 1, 1, 1)] + [("b", 1, 0, 1)] * 5 + [("b", 1, 0, 0)] * 32
    base, now = set_result(rows, 2), set_result(rows, 3)
    assert [decisions.verdict(base, now, rules[rule]) for rule in decisions.RULES] == [False, False, False]
    # two of a's ten lost, the set unchanged: the discount rule fails (-10 points without the worst), holm
    # does not (two moved queries: p = 2/2^2 = 0.5)
    rows = [("a", 1, 1, 0)] * 2 + [("a", 1, 1, 1)] * 8 + [("b", 1, 0, 1)] * 2 + [("b", 1, 0, 0)] * 38
    base, now = set_result(rows, 2), set_result(rows, 3)
    assert [decisions.verdict(base, now, rules[rule]) for rule in decisions.RULES] == [False, True, False]


def test_every_ordered_pair_is_decided_at_every_size():
    # two variants of 60 queries: x finds every query, y loses 3 of them (-5 points on the whole set)
    rows = [("a", 1, 1, 0)] * 3 + [("a", 1, 1, 1)] * 57
    variants = {"x": set_result(rows, 2), "y": set_result(rows, 3)}
    tallies = {}
    made = decisions.decide_set(variants, (50,), 3, 0, tallies, "design", ["x", "y"])
    assert made == 2 * (3 + 1)  # 2 ordered pairs x (3 draws of 50 + the whole set)
    whole = tallies[("design", "settings", "founding", "whole")]
    # x -> y is a 5-point regression, caught on the whole set; y -> x a 5-point improvement, passed
    assert (whole.regressions, whole.missed, whole.improvements, whole.improvements_failed) == (1, 0, 1, 0)
    assert tallies[("design", "settings", "holm", "50")].regressions == 3
    assert ("design", "degraded", "holm", "50") not in tallies  # both variants are settings of one backend
    assert ("design", "from default", "holm", "whole") not in tallies  # neither is the default


def test_the_usual_pull_request_is_the_default_baseline_against_one_setting():
    rows = [("a", 1, 1, 0)] * 3 + [("a", 1, 1, 1)] * 57
    variants = {"default": set_result(rows, 2), "y": set_result(rows, 3)}
    tallies = {}
    decisions.decide_set(variants, (), 1, 0, tallies, "design", ["default", "y"])
    # only default -> y (a 5-point regression, caught on the whole set), not y -> default
    usual = tallies[("design", "from default", "founding", "whole")]
    assert (usual.regressions, usual.missed, usual.not_drops) == (1, 0, 0)


def test_a_bad_draws_count_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        decisions.main(["--draws", "0"])
    assert exit_.value.code == 2 and "--draws: must be at least 1, got 0" in capsys.readouterr().err
