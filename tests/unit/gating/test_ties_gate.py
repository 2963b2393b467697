"""Ties in the gates: a loss confined to tied positions is said as such, and the gate policy's `tie_aware`
gates the expected value over tie orders (no drop when only the order inside a tie moved)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.gating.baseline import Baseline, build_baseline
from harness.gating.gates import check, lost_within_ties
from harness.gating.policy import GatePolicy, load_policy
from harness.scoring.evaluate import Answer, evaluate_set, policy_metric_name
from harness.sets.loader import load_set
from tests.builders import PROVENANCE
from tests.conftest import TINY_SET

TINY = load_set(TINY_SET)
# One query (tiny-01, relevant doc-01), asked for 11 documents: all 11 come back with one score.
ONE = dataclasses.replace(TINY, queries=(TINY.queries[0],), k=11)
FILLERS = tuple(f"other-{i:02d}" for i in range(1, 11))
TENTH = Answer(FILLERS[:9] + ("doc-01", FILLERS[9]), (1.5,) * 11, 0.001)     # relevant 10th
ELEVENTH = Answer(FILLERS + ("doc-01",), (1.5,) * 11, 0.001)                 # relevant 11th, same scores


def baseline_of(result):
    document = build_baseline([result], PROVENANCE)
    return Baseline.from_document(document, Path("b.json")).sets


def gates_of(before: Answer, now: Answer, policy: GatePolicy = GatePolicy()):
    base = evaluate_set(ONE, {"tiny-01": before}, k=11, metrics=policy.metrics)
    run = evaluate_set(ONE, {"tiny-01": now}, k=11, metrics=policy.metrics)
    return [g for g in check([run], baseline_of(base), latency_gated=False, policy=policy) if g.category is None
            and g.gate not in ("query-count", "contract", "judged")]


def test_a_loss_inside_a_tie_fails_naming_the_tie():
    [gate] = gates_of(TENTH, ELEVENTH)
    assert not gate.passed and gate.baseline == 1.0 and gate.current == 0.0  # recall@10 1 -> 0: 100 points
    assert "the loss is confined to tied positions" in gate.message
    assert "tiny-01: doc-01 moved within a tie of 11 equal scores at ranks 1-11" in gate.message
    assert "tie_aware" in gate.message  # the way out is named


def test_a_loss_past_a_tie_is_not_said_to_be_one():
    scores = (2.0,) * 10 + (1.0,)  # the 11th scored lower: its scores put it out of the top 10
    [gate] = gates_of(dataclasses.replace(TENTH, scores=scores), dataclasses.replace(ELEVENTH, scores=scores))
    assert not gate.passed and "tie" not in gate.message


def test_lost_within_ties_needs_the_tie_to_reach_the_tenth_position():
    base = baseline_of(evaluate_set(ONE, {"tiny-01": TENTH}, k=11))["tiny"]
    straddling = evaluate_set(ONE, {"tiny-01": dataclasses.replace(ELEVENTH, scores=(3.0,) * 8 + (1.5,) * 3)}, k=11)
    assert lost_within_ties(straddling, base) == {"tiny-01": "doc-01 moved within a tie of 3 equal scores at ranks 9-11"}
    below = evaluate_set(ONE, {"tiny-01": dataclasses.replace(ELEVENTH, scores=(3.0,) * 10 + (1.5,))}, k=11)
    assert lost_within_ties(below, base) == {}
    unscored = evaluate_set(ONE, {"tiny-01": dataclasses.replace(ELEVENTH, scores=None)}, k=11)
    assert lost_within_ties(unscored, base) == {}


def write_policy(tmp_path, body) -> Path:
    path = tmp_path / "gate-policy.json"
    path.write_text(json.dumps({"format": 1, **body}))
    return path


def test_a_tie_aware_policy_sees_no_drop_when_only_the_tie_order_moved(tmp_path):
    policy = load_policy(write_policy(tmp_path, {"tie_aware": True}), policy_metric_name)
    assert policy.metrics == ("recall@10(ties)",) and policy.to_dict()["tie_aware"] is True
    [gate] = gates_of(TENTH, ELEVENTH, policy)
    assert gate.passed and gate.metric == "recall@10(ties)"
    assert gate.baseline == gate.current == pytest.approx(10 / 11)  # 10 of the tie's 11 places are in the top 10


def test_a_tie_aware_policy_still_fails_a_loss_the_scores_decide(tmp_path):
    policy = load_policy(write_policy(tmp_path, {"tie_aware": True, "metrics": ["recall@10", "nDCG@10"]}),
                         policy_metric_name)
    assert policy.metrics == ("recall@10(ties)", "ndcg@10(ties)")
    lower = dataclasses.replace(ELEVENTH, scores=(2.0,) * 10 + (1.0,))
    gates = gates_of(TENTH, lower, policy)
    assert [g.passed for g in gates] == [False, False]
    assert gates[0].current == 0.0 and gates[0].baseline == pytest.approx(10 / 11)


def test_a_tie_aware_policy_refuses_a_family_without_an_expectation(tmp_path):
    path = write_policy(tmp_path, {"tie_aware": True, "metrics": ["recall@10", "ap@100"]})
    with pytest.raises(UsageError, match=r"gate-policy\.json: tie_aware: metrics: ap: takes no ties option"):
        load_policy(path, policy_metric_name)
    with pytest.raises(UsageError, match=r"tie_aware"):
        load_policy(write_policy(tmp_path, {"tie_aware": "yes"}), policy_metric_name)


def test_a_set_of_one_query_is_counted_in_the_singular():
    result = evaluate_set(ONE, {"tiny-01": TENTH}, k=11)
    count = next(g for g in check([result], baseline_of(result), latency_gated=False) if g.gate == "query-count")
    assert count.message == "tiny: 1 query, as the baseline"


def test_a_relevant_document_cut_off_inside_a_tie_is_said_to_maybe_have_moved():
    """k = 10: the 11th document is never returned; the list ending inside a tie may hide it just past the cut."""
    ten = dataclasses.replace(ONE, k=10)
    base = baseline_of(evaluate_set(ten, {"tiny-01": Answer(FILLERS[:9] + ("doc-01",), (2.0,) * 6 + (1.5,) * 4,
                                                            0.001)}, k=10))
    cut = evaluate_set(ten, {"tiny-01": Answer(FILLERS, (2.0,) * 6 + (1.5,) * 4, 0.001)}, k=10)
    assert lost_within_ties(cut, base["tiny"]) == {
        "tiny-01": "doc-01 not returned; the list ends inside a tie of 4 equal scores at ranks 7-10, which may go on "
                   "past it"}
    [gate] = [g for g in check([cut], base, latency_gated=False) if g.gate == "recall" and g.category is None]
    assert not gate.passed and "the loss may be confined to tied positions: tiny-01: doc-01 not returned" in gate.message
    untied = evaluate_set(ten, {"tiny-01": Answer(FILLERS, tuple(float(20 - i) for i in range(10)), 0.001)}, k=10)
    assert lost_within_ties(untied, base["tiny"]) == {}
