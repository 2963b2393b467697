"""Baselines that would gate nothing, anybody or the wrong numbers are refused before a run: one line
naming file and field, exit 2 (a configuration error, never a verdict).

Each case was accepted by the harness before this rule: a backend record of `{}` or an emptied name
and command matched any backend; `"sets": {}` gated nothing and passed; aggregates edited down with
the rows untouched let a 15-point drop pass; a per-query recall of 7.5 was compared as a gain; a
policy gating a measure the baseline lacks failed an unchanged backend with exit 1.
"""

import json
from pathlib import Path

import pytest

from harness.commands.cli import main
from harness.errors import BaselineError, EXIT_CONFIG, UsageError
from harness.gating.baseline import Baseline, build_baseline
from harness.gating.inputs import GateInputs
from harness.gating.policy import GatePolicy
from harness.scoring.evaluate import Answer, evaluate_set
from harness.sets.loader import load_set
from tests.builders import PROVENANCE
from tests.conftest import TINY_SET

TINY = load_set(TINY_SET)
# Every query finds its relevant documents: recall@10 1.0 in every scope.
ANSWERS = {q.qid: Answer(tuple(q.relevant), None, 0.002) for q in TINY.queries}


def document():
    return json.loads(json.dumps(build_baseline([evaluate_set(TINY, ANSWERS, k=10)], PROVENANCE)))


def refused(edited, match):
    with pytest.raises(BaselineError, match=match) as caught:
        Baseline.from_document(edited, Path("b.json"))
    assert "\n" not in str(caught.value) and str(caught.value).startswith("b.json: ")


def test_the_unedited_document_reads():
    Baseline.from_document(document(), Path("b.json"))


@pytest.mark.parametrize("record", [{}, {"label": "bm25", "name": "", "command": []}, {"label": "x", "name": None}])
def test_a_backend_record_naming_no_backend_is_refused(record):
    top = document()
    top["backend"] = record
    refused(top, r"^b\.json: backend: names no backend")
    per_set = document()
    per_set["sets"]["tiny"]["backend"] = record
    refused(per_set, r"^b\.json: sets\.tiny\.backend: names no backend")


def test_a_baseline_of_no_set_is_refused():
    empty = document()
    empty["sets"] = {}
    refused(empty, r"^b\.json: sets: records no set")


@pytest.mark.parametrize("path, value, field", [
    (("overall", "recall@10"), -0.15, r"aggregates\.overall\.recall@10: 0\.85, but its rows give 1:"),
    (("category", "a", "recall@10"), -0.15, r"aggregates\.category\.a\.recall@10"),
    (("split", "development", "ndcg@10"), -0.01, r"aggregates\.split\.development\.ndcg@10"),
    (("overall", "n"), 1, r"aggregates\.overall\.n: 6, but 5 scored queries"),
    (("overall", "unjudged@10"), 2, r"aggregates\.overall\.unjudged@10: 2, but its rows give 0"),
])
def test_aggregates_that_disagree_with_their_rows_are_refused(path, value, field):
    edited = document()
    scope = edited["sets"]["tiny"]["aggregates"]
    for key in path[:-1]:
        scope = scope[key]
    scope[path[-1]] += value
    refused(edited, r"^b\.json: sets\.tiny\." + field + ".*the aggregates disagree with the per-query rows")


@pytest.mark.parametrize("where", ["row", "scope"])
def test_a_measure_outside_0_and_1_is_refused(where):
    edited = document()
    entry = edited["sets"]["tiny"]
    if where == "row":
        entry["queries"]["tiny-01"]["metrics"]["recall@10"] = 7.5
        refused(edited, r"sets\.tiny\.queries\.tiny-01\.metrics\.recall@10: must lie between 0 and 1")
    else:
        entry["aggregates"]["overall"]["mrr"] = -0.5
        refused(edited, r"sets\.tiny\.aggregates\.overall\.mrr: must lie between 0 and 1")


def test_a_policy_gating_a_measure_the_baseline_lacks_is_a_configuration_error():
    baseline = Baseline.from_document(document(), Path("b.json"))
    inputs = GateInputs((TINY,), policy=GatePolicy(metrics=("recall@10", "ap@100"), source="gate-policy.json"),
                        baseline=baseline)
    with pytest.raises(BaselineError, match=r"^b\.json: sets\.tiny\.aggregates\.overall\.ap@100: missing; the gate "
                                            r"policy \(gate-policy\.json\) gates ap@100") as caught:
        inputs.entries()
    assert caught.value.exit_code == EXIT_CONFIG
    # an evidence measure of a set without evidence is no error: its gate says there is nothing to compare
    GateInputs((TINY,), policy=GatePolicy(metrics=("recall@10", "ku@1")), baseline=baseline).entries()


def test_cli_a_policy_metric_the_baseline_lacks_is_exit_2_before_the_adapter_starts(tmp_path, capsys):
    baseline = tmp_path / "b.json"
    assert main(["--set", str(TINY_SET), "--baseline", str(baseline), "--update-baseline", "--yes", "--quiet",
                 "--out", str(tmp_path / "r.json")]) == 0
    policy = tmp_path / "gate-policy.json"
    policy.write_text(json.dumps({"format": 1, "metrics": ["recall@10", "nDCG@20"]}))
    capsys.readouterr()
    assert main(["--set", str(TINY_SET), "--baseline", str(baseline), "--policy", str(policy), "--quiet",
                 "--out", str(tmp_path / "again.json")]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "sets.tiny.aggregates.overall.ndcg@20: missing; the gate policy" in err and err.count("\n") == 1
    assert not (tmp_path / "again.json").exists()  # refused before anything ran


def test_a_reworded_query_is_refused_until_re_baselined(tiny_copy):
    """Two hard queries reworded into easy ones would turn a regression into a pass: the baseline's rows
    carry the text asked, so the set's identity covers it as it covers judgments."""
    from tests.builders import rewrite_query
    baseline = Baseline.from_document(document(), Path("b.json"))
    baseline.comparable(load_set(tiny_copy))  # unchanged: comparable
    rewrite_query(tiny_copy, "tiny-03", query="an easier question")
    with pytest.raises(BaselineError, match=r"^b\.json: sets\.tiny\.queries\.tiny-03\.query: the baseline asked "
                                            r"'.+', the set now asks 'an easier question'; a reworded query"):
        baseline.comparable(load_set(tiny_copy, check_pins=False))


# The tiny set: 7 queries; scored, category a holds 3 (tiny-01, -02, -05) and b 2 (tiny-03, -04).
@pytest.mark.parametrize("limits, message", [
    ({"min_category_queries": 4}, "categories.min_queries: 4: more than the 3 scored queries of the largest category "
                                  "(tiny category a), so no category gate could ever fail; give 1 to 3, or "
                                  "categories.gate false"),
    ({"min_category_queries": 1_000_000}, "categories.min_queries: 1000000: more than the 3 scored queries"),
    ({"category_rule": "discount", "discount_queries": 3}, "categories.discount_queries: 3: the largest category (tiny category a) has 3 scored "
                              "queries, all discounted, so no category gate could ever fail; give 0 to 2, or "
                              "categories.gate false"),
    ({"latency_min_samples": 21}, "latency.min_samples: 21: more than the 7 queries of the largest set run (tiny), "
                                  "so the latency comparison could never warn or fail; give 1 to 7"),
])
def test_a_limit_no_set_of_the_run_can_reach_is_refused_with_the_range_that_can_fail(limits, message):
    baseline = Baseline.from_document(document(), Path("b.json"))
    inputs = GateInputs((TINY,), policy=GatePolicy(**limits, source="p.json"), baseline=baseline)
    with pytest.raises(UsageError) as caught:
        inputs.entries()
    assert str(caught.value).startswith(f"p.json: {message}")
    assert caught.value.exit_code == EXIT_CONFIG and "\n" not in str(caught.value)


@pytest.mark.parametrize("limits", [
    {"min_category_queries": 3, "discount_queries": 2},  # category a can still fail
    {"discount_queries": 3},  # the holm rule (the default) never reads discount_queries
    {"min_category_queries": 1_000_000, "discount_queries": 1_000_000, "gate_categories": False},  # no category gate
    {"latency_min_samples": 1_000_000, "latency_relative_limit_percent": None},  # no latency comparison
    {"latency_min_samples": 20},  # a default above a small set is the statistical floor, by design
])
def test_a_limit_some_set_can_reach_or_a_default_is_accepted(limits):
    baseline = Baseline.from_document(document(), Path("b.json"))
    GateInputs((TINY,), policy=GatePolicy(**limits, source="p.json"), baseline=baseline).entries()


def test_cli_a_min_queries_of_a_million_is_exit_2_before_the_adapter_starts(tmp_path, capsys):
    baseline = tmp_path / "b.json"
    assert main(["--set", str(TINY_SET), "--baseline", str(baseline), "--update-baseline", "--yes", "--quiet",
                 "--out", str(tmp_path / "r.json")]) == 0
    policy = tmp_path / "gate-policy.json"
    policy.write_text(json.dumps({"format": 1, "categories": {"min_queries": 1_000_000}}))
    capsys.readouterr()
    assert main(["--set", str(TINY_SET), "--baseline", str(baseline), "--policy", str(policy), "--quiet",
                 "--out", str(tmp_path / "again.json")]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"{policy}: categories.min_queries: 1000000: more than the 3 scored queries" in err and err.count("\n") == 1
    assert not (tmp_path / "again.json").exists()
