"""`compare BASE CAND [CAND ...]`: the headline Holm family, equivalence at the margin, movement,
latency with its refusals, the verdict, and the outputs (terminal, JSON, Markdown, JUnit)."""

import json
import sys
import xml.etree.ElementTree as ET

import pytest

from harness.commands.cli import main
from harness.report.comparison import render_junit, render_markdown, render_text, system_table, verdict_line
from harness.scoring.compare import RunView, compare, compare_many, latency_difference, movement
from harness.measured import QueryNumbers
from tests.builders import make_report, make_revised_report, record_baseline_and_report, set_numbers
from tests.conftest import REPO_ROOT
from tests.reports import GOOD

RESAMPLES = 2000


def view(values, *, label="run", latency=None, categories=None, kind="report", condition=None, machine=None,
         metric="recall@10"):
    """A RunView of one set `s` from {qid: metric value}; each query its own category unless given."""
    rows = [QueryNumbers(qid, query=f"text of {qid}", metrics={metric: value},
                         category=(categories or {}).get(qid, f"c{index}"), split="test",
                         latency_ms=latency[qid] if latency is not None else None)
            for index, (qid, value) in enumerate(values.items())]
    return RunView(label, None, {"s": set_numbers(rows)}, kind=kind, condition=condition, machine=machine or {})


def qids(n):
    return [f"q{i:02d}" for i in range(n)]


# --- the Holm family is the headline --------------------------------------------------------------

def test_single_query_categories_do_not_dilute_the_overall_test():
    # 40 queries, each its own category (40 exploratory cells); 16 drop by 0.5 and none gain:
    # overall -0.2. Before, Holm ran over all 41 tests; now over the one headline cell only.
    base = view({q: 1.0 for q in qids(40)})
    cand = view({q: (0.5 if i < 16 else 1.0) for i, q in enumerate(qids(40))})
    result = compare(base, cand, resamples=RESAMPLES, tested=("recall@10",))
    overall = result.scopes[0]
    assert overall.scope == "overall" and overall.tests["recall@10"].mean_difference == pytest.approx(-0.2)
    assert result.family_size == 1
    assert overall.adjusted_p["recall@10"] == overall.tests["recall@10"].p_value < 0.05
    assert all(not s.adjusted_p for s in result.scopes[1:]) and len(result.scopes) == 42  # + 40 categories + 1 split
    assert result.verdict() == "WORSE"


def test_the_family_spans_every_candidate_set_and_metric():
    base = view({q: 1.0 for q in qids(10)})
    suite = compare_many(base, [view({q: 1.0 for q in qids(10)}, label="b"), view({q: 0.0 for q in qids(10)}, label="c")],
                         resamples=500, tested=("recall@10",))
    assert suite.family_size == 2 and [c.family_size for c in suite.comparisons] == [2, 2]
    # c: 10 queries all -1: the randomization p is (1 + 500 * 2/2^10 ish) / 501; Holm doubles the smallest
    c_overall = suite.comparisons[1].scopes[0]
    assert c_overall.adjusted_p["recall@10"] == pytest.approx(min(1.0, 2 * c_overall.tests["recall@10"].p_value))
    assert [c.verdict() for c in suite.comparisons] == ["EQUIVALENT", "WORSE"] and suite.verdict() == "WORSE"


# --- equivalence at the margin ---------------------------------------------------------------------

def test_small_symmetric_noise_is_shown_no_worse():
    # 40 queries, half +0.01, half -0.01: mean 0, every resampled mean within [-0.01, +0.01]
    base = view({q: 0.5 for q in qids(40)})
    cand = view({q: 0.51 if i % 2 else 0.49 for i, q in enumerate(qids(40))})
    result = compare(base, cand, resamples=RESAMPLES, tested=("recall@10",), margin_points=2.0)
    overall = result.scopes[0]
    low, high = overall.equivalence_ci["recall@10"]
    assert -0.01 <= low < 0 < high <= 0.01
    # both bounds inside +-2 points: equivalent (the two one-sided tests)
    assert result.cell_status(overall, "recall@10") == "equivalent" and result.verdict() == "EQUIVALENT"
    # the same data with a margin of a tenth of a point: the set cannot tell
    tight = compare(base, cand, resamples=RESAMPLES, tested=("recall@10",), margin_points=0.1)
    assert tight.cell_status(tight.scopes[0], "recall@10") == "inconclusive" and tight.verdict() == "INCONCLUSIVE"


def test_a_significant_drop_inside_the_margin_is_its_own_label_not_worse():
    # 100 queries, every one -0.01: a certain drop of one point, inside the 2-point margin
    base = view({q: 0.5 for q in qids(100)})
    result = compare(base, view({q: 0.49 for q in qids(100)}), resamples=RESAMPLES, tested=("recall@10",))
    overall = result.scopes[0]
    assert overall.tests["recall@10"].p_value < 0.05 and overall.tests["recall@10"].ci_high < 0
    assert result.cell_status(overall, "recall@10") == "lower within margin"
    assert result.verdict() == "LOWER WITHIN MARGIN"
    # and JUnit fails only what is WORSE
    suite = compare_many(base, [view({q: 0.49 for q in qids(100)}, label="b")], resamples=300, tested=("recall@10",))
    assert ET.fromstring(render_junit(suite)).get("failures") == "0"


def test_a_label_needs_both_procedures_to_agree():
    # 6 queries, differences -1, -1, -1, 0, 0, 0 (each its own unit): the bootstrap CI can exclude 0
    # while the sign-flip p (2 x 8 / 64 = 0.25) does not reach 0.05: not significant, so never WORSE
    base = view({q: 1.0 for q in qids(6)})
    cand = view({"q00": 0.0, "q01": 0.0, "q02": 0.0, "q03": 1.0, "q04": 1.0, "q05": 1.0})
    result = compare(base, cand, resamples=RESAMPLES, tested=("recall@10",))
    test = result.scopes[0].tests["recall@10"]
    assert test.p_value > 0.05
    assert result.cell_status(result.scopes[0], "recall@10") == "inconclusive"


def test_a_candidate_speaks_per_set():
    # three sets improve clearly, one cannot tell: the candidate is INCONCLUSIVE, never painted WORSE
    def sets(values_by_set):
        return {name: set_numbers([QueryNumbers(q, metrics={"recall@10": v}) for q, v in values.items()], name=name)
                for name, values in values_by_set.items()}
    before = {f"s{i}": {q: 0.0 for q in qids(20)} for i in range(3)} | {"t": {q: 1.0 for q in qids(4)}}
    after = {f"s{i}": {q: 1.0 for q in qids(20)} for i in range(3)} | {
        "t": {"q00": 0.0, "q01": 1.0, "q02": 1.0, "q03": 1.0}}
    result = compare(RunView("a", None, sets(before)), RunView("b", None, sets(after)), resamples=RESAMPLES,
                     tested=("recall@10",))
    assert result.set_verdicts() == {"s0": "BETTER", "s1": "BETTER", "s2": "BETTER", "t": "INCONCLUSIVE"}
    assert result.verdict() == "INCONCLUSIVE"
    assert verdict_line(result).startswith("INCONCLUSIVE: s0 BETTER, s1 BETTER, s2 BETTER, t INCONCLUSIVE; worst t "
                                           "overall recall@10 -25.0 points (inconclusive")
    assert "1 of 4 queries moved (0 up, 1 down)" in verdict_line(result)


def test_a_bound_near_the_margin_is_resampled_more():
    # differences of -1 in 2 of 100 queries: the mean is -2 points, its 90% lower bound near -2 .. -4:
    # with the margin at the bound's own value the cell is recomputed at 40,000 resamples
    base = view({q: 1.0 for q in qids(100)})
    cand = view({q: 0.0 if i < 2 else 1.0 for i, q in enumerate(qids(100))})
    first = compare(base, cand, resamples=1000, tested=("recall@10",))
    low = first.scopes[0].equivalence_ci["recall@10"][0]
    near = compare(base, cand, resamples=1000, tested=("recall@10",), margin_points=-low * 100 + 0.1)
    assert near.scopes[0].resamples_used == {"recall@10": 40_000}
    assert first.scopes[0].resamples_used == {}


def test_a_non_significant_drop_is_not_evidence_of_no_drop():
    # 4 queries, one loses everything: mean -0.25; a single moving query never reaches significance
    # (every sign flip gives |mean| 0.25: p = 1), and the 90% CI reaches -0.5 or below: not shown.
    base = view({q: 1.0 for q in qids(4)})
    cand = view({"q00": 0.0, "q01": 1.0, "q02": 1.0, "q03": 1.0})
    result = compare(base, cand, resamples=RESAMPLES, tested=("recall@10",))
    overall = result.scopes[0]
    assert overall.tests["recall@10"].p_value == 1.0
    assert overall.equivalence_ci["recall@10"][0] <= -0.5
    assert result.cell_status(overall, "recall@10") == "inconclusive"


def test_a_significant_gain_is_better():
    base = view({q: 0.0 for q in qids(20)})
    result = compare(base, view({q: 0.5 for q in qids(20)}), resamples=RESAMPLES, tested=("recall@10",))
    assert result.verdict() == "BETTER"


# --- per-query movement -------------------------------------------------------------------------

def test_movement_counts_worst_losses_and_risk_by_hand():
    base = {"q1": 1.0, "q2": 1.0, "q3": 0.5, "q4": 0.0, "q5": 0.75}
    cand = {"q1": 0.0, "q2": 1.0, "q3": 1.0, "q4": 0.0, "q5": 0.5}
    result = movement(base, cand, {"q1": "first"})
    assert (result.better, result.worse, result.unchanged) == (1, 2, 2)
    assert result.worst == (("q1", -1.0, "first"), ("q5", -0.25, ""))
    assert result.mean_loss == pytest.approx((1.0 + 0.25) / 2)
    # URisk at alpha 1: (gains 0.5 - 2 * losses 1.25) / 5 queries = -0.4
    assert result.urisk == pytest.approx(-0.4)


# --- latency ------------------------------------------------------------------------------------

def test_latency_percentiles_and_a_paired_shift_by_hand():
    base = [float(ms) for ms in range(1, 21)]
    result = latency_difference("s", base, [ms + 10 for ms in base], resamples=300)
    # nearest rank over 20: p50 is the 10th value, p95 the 19th
    assert result.base == {"p50": 10.0, "p95": 19.0} and result.candidate == {"p50": 20.0, "p95": 29.0}
    # every resample shifts both sides' percentiles by exactly 10 ms
    assert result.difference_ci == {"p50": (10.0, 10.0), "p95": (10.0, 10.0)}


@pytest.mark.parametrize("engine", ["python", "numpy"])
def test_the_latency_interval_takes_the_25th_and_975th_of_1000_draws(engine):
    # the 95% interval's tails are the 2.5th and 97.5th percentiles of the draws: ranks 25 and 975 of 1,000, as
    # the paired tests read them (the float (1 - 0.95) / 2 * 100 is 2.500000000000002, whose exact rank is 26)
    if engine == "numpy":
        pytest.importorskip("numpy")
    import random

    values = random.Random(89)  # latencies whose draws differ at ranks 25/26 and 975/976 (checked below)
    base = [values.uniform(1, 20) for _ in range(40)]
    candidate = [ms + values.uniform(0, 5) for ms in base]
    result = latency_difference("s", base, candidate, resamples=1000, seed=0, engine=engine)
    rng, differences = random.Random(0 + 2), []  # the documented draws, p50 by nearest rank (the 20th of 40)
    for _ in range(1000):
        drawn = rng.choices(range(40), k=40)
        differences.append(sorted(candidate[i] for i in drawn)[19] - sorted(base[i] for i in drawn)[19])
    differences.sort()
    assert differences[24] != differences[25] and differences[974] != differences[975]  # so a rank off would show
    assert result.difference_ci["p50"] == (differences[24], differences[974])


def test_latency_is_refused_across_conditions_machines_and_baselines():
    values = {q: 1.0 for q in qids(5)}
    latency = {q: 5.0 for q in qids(5)}
    same = compare(view(values, latency=latency), view(values, latency=latency), resamples=50)
    assert same.latency_note is None and same.latency[0].n == 5
    cases = {"conditions differ": dict(condition="loaded"), "different machines": dict(machine={"cpus": 64}),
             "is a baseline file": dict(kind="baseline")}
    for reason, options in cases.items():
        result = compare(view(values, latency=latency), view(values, latency=latency, **options), resamples=50)
        assert result.latency == [] and reason in result.latency_note


# --- outputs ------------------------------------------------------------------------------------

def test_text_markdown_and_junit_say_the_same_verdict():
    base = view({q: 1.0 for q in qids(10)}, label="base.json")
    suite = compare_many(base, [view({q: 1.0 for q in qids(10)}, label="b.json"),
                                view({q: 0.0 for q in qids(10)}, label="c.json")], resamples=300,
                         tested=("recall@10",))
    text = render_text(suite)
    assert text.startswith("VERDICT: WORSE\n  b b.json: EQUIVALENT: e.g. s overall recall@10 +0.0 points (equivalent, "
                           "Holm p 1.000), 0 of 10 queries moved (0 up, 0 down)\n"
                           "  c c.json: WORSE: worst s overall recall@10 -100.0 points (worse, Holm p ")
    headers, rows = system_table(suite)
    assert headers == ["", "system", "s recall@10"]
    assert rows == [["a", "base.json (base)", "1.000 >c"], ["b", "b.json", "1.000"], ["c", "c.json", "0.000 v"]]
    markdown = render_markdown(suite)
    assert markdown.startswith("## retrieval-gate comparison: **WORSE**\n")
    assert "| a | base.json (base) | 1.000 &gt;c |" in markdown  # `>` as an entity: our text is never markup
    assert "<details><summary>Exploratory rows" in markdown and "(unadjusted)" in markdown
    root = ET.fromstring(render_junit(suite))
    assert (root.get("tests"), root.get("failures")) == ("2", "1")
    cases = [(case.get("name"), case.find("failure") is not None) for case in root.iter("testcase")]
    assert cases == [("recall@10 overall (b b.json)", False), ("recall@10 overall (c c.json)", True)]
    assert root.find(".//failure").get("type") == "worse"


def test_compare_command_with_two_candidates_and_a_policy(tmp_path, monkeypatch, capsys):
    a = make_report(tmp_path, monkeypatch, "a", GOOD)
    b = make_report(tmp_path, monkeypatch, "b", GOOD)
    worse = dict(GOOD, **{"how is the config file parsed": ["doc-02"]})
    c = make_report(tmp_path, monkeypatch, "c", worse)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"format": 1, "metrics": ["nDCG@10", "R@10"], "drop_limit_points": 5.0}))
    out = {name: tmp_path / ("out-" + name) for name in ("c.json", "c.md", "c.xml", "c.html")}
    capsys.readouterr()
    assert main(["compare", str(a), str(b), str(c), "--resamples", "300", "--policy", str(policy),
                 "--json", str(out["c.json"]), "--summary", str(out["c.md"]), "--junit", str(out["c.xml"]),
                 "--html", str(out["c.html"])]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.startswith("VERDICT: INCONCLUSIVE\n")
    assert "90% CI inside +-5.0" in captured.out
    document = json.loads(out["c.json"].read_text())
    assert document["tested"] == ["ndcg@10", "recall@10"] and document["margin_points"] == 5.0
    assert document["holm_family"] == 4 and len(document["candidates"]) == 2  # 2 candidates x 1 set x 2 metrics
    assert [c["verdict"] for c in document["candidates"]] == ["EQUIVALENT", "INCONCLUSIVE"]
    assert document["candidates"][0]["latency_note"] is None and document["candidates"][0]["latency"][0]["n"] == 7
    assert ET.fromstring(out["c.xml"].read_text()).get("tests") == "4"
    assert out["c.md"].read_text().startswith("## retrieval-gate comparison: **INCONCLUSIVE**")
    page = out["c.html"].read_text()
    assert page.count('<section id="set-') == 2 and "candidate c" in page
    # --metric overrides the policy's metrics
    assert main(["compare", str(a), str(b), "--resamples", "50", "--policy", str(policy), "--metric", "RR@10",
                 "--json", str(out["c.json"])]) == 0
    assert json.loads(out["c.json"].read_text())["tested"] == ["mrr"]


def test_a_mismatched_candidate_among_several_is_named(tmp_path, monkeypatch, capsys, tiny_copy):
    a = make_report(tmp_path, monkeypatch, "a", GOOD)
    b = make_revised_report(tmp_path, monkeypatch, "b", GOOD, tiny_copy)
    capsys.readouterr()
    assert main(["compare", str(a), str(a), str(b), "--resamples", "50"]) == 2
    assert f"runs are not comparable: {b}: set tiny: revision 1 vs 2" in capsys.readouterr().err


def test_a_baseline_side_refuses_latency_with_a_note(tmp_path, monkeypatch, capsys):
    baseline, report = record_baseline_and_report(tmp_path, monkeypatch, GOOD)
    capsys.readouterr()
    assert main(["compare", str(baseline), str(report), "--resamples", "50"]) == 0
    assert ("latency not compared: the base is a baseline file, which keeps only the latency summary, "
            "not per-query latencies") in capsys.readouterr().out


def test_compare_as_a_subprocess_on_the_committed_baselines():
    # A real `python -m harness compare`: exact verdict lines, empty stderr, exit 0 whatever the verdict.
    # bm25 -> onnx on code: recall@10 0.750 -> 0.592 over 120 queries; Holm over the 4 headline
    # cells (4 sets x recall@10, the default policy) keeps it significant; the three other sets rise or hold.
    import subprocess
    repo = REPO_ROOT
    completed = subprocess.run([sys.executable, "-m", "harness", "compare", "baselines/current.json",
                                "baselines/onnx.json", "--resamples", "200"], cwd=repo, capture_output=True,
                               text=True, timeout=300)
    assert completed.returncode == 0 and completed.stderr == ""
    assert completed.stdout.splitlines()[:2] == [
        "VERDICT: WORSE",
        "  b baselines/onnx.json (onnx): WORSE: code WORSE, dedupe BETTER, memory BETTER, wiki NO WORSE; worst code "
        "overall recall@10 -15.8 points (worse, Holm p 0.030), 55 of 120 queries moved (19 up, 36 down)"]
    assert "latency not compared: the base is a baseline file" in completed.stdout


def test_the_markdown_is_appended_to_the_github_step_summary(tmp_path, monkeypatch, capsys):
    a = make_report(tmp_path, monkeypatch, "a", GOOD)
    step = tmp_path / "step.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    assert main(["compare", str(a), str(a), "--resamples", "50"]) == 0
    assert step.read_text().startswith("earlier step\n## retrieval-gate comparison: **EQUIVALENT**\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a folder: refused before any work, one line
    capsys.readouterr()
    assert main(["compare", str(a), str(a), "--resamples", "50"]) == 2
    assert capsys.readouterr().err.startswith(f"harness: error: $GITHUB_STEP_SUMMARY: {tmp_path}: ")
