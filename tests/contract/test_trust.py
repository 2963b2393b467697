"""Gates a team can trust: whose baseline (identity), which policy, WARN, words, drift, honest exit codes.

Real adapter processes (tests/fixtures/cli_adapters/scripted.py) through the command line for
identity and drift; the policy rules as pure gate calls on in-memory results with hand-worked
numbers.
"""

import json
import sys
from pathlib import Path

import pytest

from harness.commands.cli import main
from harness.errors import UsageError
from harness.gating.budgets import Budgets
from harness.gating.gates import check, movement
from harness.gating.identity import BackendIdentity, check_identity, portable_command
from harness.gating.policy import GatePolicy, load_policy
from harness.scoring.evaluate import report_metric_name
from tests.conftest import SCRIPTED_ADAPTER
from tests.reports import BASE_ANSWERS, CURRENT_ANSWERS, tiny_baseline_entries, tiny_result

GOOD = {"how is the config file parsed": ["doc-01"], "retry backoff for failed requests": ["doc-02"],
        "do migrations roll back": ["doc-03"], "cache eviction policy": ["doc-04", "doc-05"],
        "where are Falcon secrets": ["doc-07"], "which log format wins": ["doc-06"]}


@pytest.fixture
def scripted(tmp_path, tiny_copy, monkeypatch):
    """Run the command line against the scripted adapter on a copy of the tiny set."""
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(GOOD))
    monkeypatch.setenv("SCRIPTED_ANSWERS", str(answers))
    monkeypatch.setenv("SCRIPTED_BANNER", "1")

    def run(*extra, **env):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        return main(["--set", str(tiny_copy), "--out", str(tmp_path / "r.json"), "--quiet",
                     "--budgets", str(budgets(tmp_path)), *extra, "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)])
    return run


def budgets(folder: Path) -> Path:
    path = folder / "budgets.json"
    path.write_text(json.dumps({"format": 1, "default_p95_ms": 60000}))
    return path


# -- identity ----------------------------------------------------------------------------------------

def test_portable_command_writes_the_interpreter_as_python(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert portable_command([sys.executable, "-m", "adapters.bm25"]) == ["python", "-m", "adapters.bm25"]
    assert portable_command(["/usr/bin/python3.11", str(tmp_path / "a.py")]) == ["python", "a.py"]
    assert portable_command(["/opt/search/bin/serve", "--index", "x"]) == ["/opt/search/bin/serve", "--index", "x"]


def test_another_backend_is_refused_before_any_query(scripted, tmp_path, capsys):
    baseline = tmp_path / "b.json"
    assert scripted("--update-baseline", "--yes", "--baseline", str(baseline)) == 0
    recorded = json.loads(baseline.read_text())["backend"]
    assert recorded["name"] == "scripted" and recorded["command"][0] == "python"
    capsys.readouterr()
    code = scripted("--baseline", str(baseline), SCRIPTED_NAME="sqlite-fts", SCRIPTED_APPEND_TO=str(tmp_path / "asked"))
    err = capsys.readouterr().err
    assert code == 2
    line, = [line for line in err.splitlines() if line.startswith("harness: error:")]
    assert "recorded for 'scripted' 1" in line and "'sqlite-fts' 1" in line
    assert "--update-baseline --baseline FILE" in line and "--allow-backend-change" in line
    # the banner is not awaited (no --expect-banner): one untimed query shows it, then the refusal;
    # with --expect-banner the banner is read before any query is asked
    assert (tmp_path / "asked").exists()
    (tmp_path / "asked").unlink()
    assert scripted("--expect-banner", "--baseline", str(baseline), SCRIPTED_NAME="sqlite-fts",
                    SCRIPTED_APPEND_TO=str(tmp_path / "asked")) == 2
    assert not (tmp_path / "asked").exists()


def test_a_re_baseline_checks_identity_like_a_gate(scripted, tmp_path, capsys):
    """Another backend is never recorded into a baseline unasked: the IMPROVED hint pasted in a team's repository
    recorded the built-in BM25 into the team's baseline, and its next gate exited 2."""
    baseline = tmp_path / "b.json"
    assert scripted("--update-baseline", "--yes", "--baseline", str(baseline)) == 0
    before = baseline.read_bytes()
    capsys.readouterr()
    assert scripted("--update-baseline", "--yes", "--baseline", str(baseline), SCRIPTED_NAME="sqlite-fts") == 2
    line, = [line for line in capsys.readouterr().err.splitlines() if line.startswith("harness: error:")]
    assert f"{baseline}: recorded for 'scripted' 1" in line and "--allow-backend-change" in line
    assert main(["--set", str(tmp_path / "sets" / "tiny"), "--baseline", str(baseline), "--update-baseline", "--yes",
                 "--quiet", "--out", str(tmp_path / "bm25.json")]) == 2  # the built-in BM25 alike
    assert baseline.read_bytes() == before
    assert scripted("--update-baseline", "--yes", "--allow-backend-change", "--baseline", str(baseline),
                    SCRIPTED_NAME="sqlite-fts") == 0
    assert json.loads(baseline.read_text())["backend"]["name"] == "sqlite-fts"


def test_an_adapter_without_a_banner_against_a_named_baseline_is_refused_at_once(scripted, tmp_path, capsys):
    baseline = tmp_path / "b.json"
    assert scripted("--update-baseline", "--yes", "--baseline", str(baseline)) == 0
    capsys.readouterr()
    # the start-up timeout would have been waited out (then exit 3) when the banner was awaited
    assert scripted("--baseline", str(baseline), "--startup-timeout", "600", SCRIPTED_BANNER="0") == 2
    line, = [line for line in capsys.readouterr().err.splitlines() if line.startswith("harness: error:")]
    assert "recorded for 'scripted' 1" in line and "an adapter that printed no ready banner" in line


def test_each_set_keeps_the_backend_it_was_recorded_for(tmp_path, monkeypatch, capsys):
    """Re-baselining one set with another backend leaves the other set's record alone; a run of both is
    checked against each set's own."""
    from harness.sets.loader import load_set
    from tests.conftest import TINY_SET
    import shutil
    sets = tmp_path / "sets"
    for name in ("one", "two"):
        shutil.copytree(TINY_SET, sets / name)
        meta = json.loads((sets / name / "set.json").read_text())
        (sets / name / "set.json").write_text(json.dumps({**meta, "name": name}))
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({q.query: list(q.relevant) for q in load_set(TINY_SET).queries}))
    monkeypatch.setenv("SCRIPTED_ANSWERS", str(answers))
    monkeypatch.setenv("SCRIPTED_BANNER", "1")
    baseline = tmp_path / "b.json"

    def run(*names, extra=(), name="scripted"):
        monkeypatch.setenv("SCRIPTED_NAME", name)
        return main([*[arg for n in names for arg in ("--set", n)], "--sets-dir", str(sets), "--quiet",
                     "--out", str(tmp_path / "r.json"), "--baseline", str(baseline), "--budgets", str(budgets(tmp_path)),
                     *extra, "--adapter", "--expect-banner", "--", sys.executable, str(SCRIPTED_ADAPTER)])
    assert run("one", "two", extra=["--update-baseline", "--yes"]) == 0
    assert run("two", extra=["--update-baseline", "--yes"], name="other") == 2  # checked like a gate
    assert run("two", extra=["--update-baseline", "--yes", "--allow-backend-change"], name="other") == 0
    document = json.loads(baseline.read_text())
    assert (document["sets"]["one"]["backend"]["name"], document["sets"]["two"]["backend"]["name"]) == \
        ("scripted", "other")
    assert run("one") == 0 and run("two", name="other") == 0
    capsys.readouterr()
    assert run("one", "two") == 2
    assert "(sets two)" in capsys.readouterr().err


def test_allow_backend_change_gates_anyway_and_the_report_says_so(scripted, tmp_path, capsys):
    baseline = tmp_path / "b.json"
    scripted("--update-baseline", "--yes", "--baseline", str(baseline))
    assert scripted("--baseline", str(baseline), "--allow-backend-change", SCRIPTED_NAME="other") == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["provenance"]["backend_change_allowed"] is True
    assert report["provenance"]["backend_identity"]["name"] == "other"
    assert any("gated anyway (--allow-backend-change)" in w for w in report["warnings"])


def test_another_model_digest_is_refused_but_a_new_version_is_only_noted(scripted, tmp_path, capsys):
    baseline = tmp_path / "b.json"
    scripted("--update-baseline", "--yes", "--baseline", str(baseline), SCRIPTED_DIGEST="aaaa")
    capsys.readouterr()
    assert scripted("--baseline", str(baseline), SCRIPTED_DIGEST="bbbb") == 2
    assert "another model" in capsys.readouterr().err
    assert scripted("--baseline", str(baseline), SCRIPTED_DIGEST="aaaa", SCRIPTED_VERSION="2") == 0
    warnings = json.loads((tmp_path / "r.json").read_text())["warnings"]
    assert any(w.startswith("backend version changed: 1 in") and w.endswith("2 now") for w in warnings)


def test_the_report_names_what_it_was_gated_against(scripted, tmp_path):
    baseline = tmp_path / "b.json"
    scripted("--update-baseline", "--yes", "--baseline", str(baseline))
    scripted("--baseline", str(baseline))
    gated_against = json.loads((tmp_path / "r.json").read_text())["provenance"]["baseline"]
    recorded = json.loads(baseline.read_text())
    assert gated_against["path"] == str(baseline) and gated_against["created"] == recorded["created"]
    assert gated_against["backend"].startswith("'scripted' 1")


def test_without_a_banner_the_command_is_the_identity():
    base = BackendIdentity.of(None, ["python", "a.py"])
    assert check_identity(base, BackendIdentity.of(None, ["python", "a.py"]), "b.json", allow_change=False).refusal is None
    refusal = check_identity(base, BackendIdentity.of(None, ["python", "b.py"]), "b.json", allow_change=False).refusal
    assert refusal.startswith("b.json: recorded for command `python a.py`, but this run is another command")


def test_a_missing_or_unexecutable_adapter_is_exit_2(tmp_path, tiny_copy, capsys):
    out = ["--set", str(tiny_copy), "--no-gate", "--out", str(tmp_path / "r.json")]
    assert main([*out, "--adapter", "--", str(tmp_path / "no-such-adapter")]) == 2
    assert "not found" in capsys.readouterr().err
    script = tmp_path / "adapter.py"
    script.write_text("print('x')\n")
    assert main([*out, "--adapter", "--", str(script)]) == 2
    assert "is not executable" in capsys.readouterr().err
    assert main([*out, "--adapter", "--", "no-such-command-anywhere-x1"]) == 2


def test_a_run_file_for_another_set_is_exit_2(tmp_path, tiny_copy, capsys):
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 1.0 t\nq2 Q0 d2 1 1.0 t\n")
    assert main(["--set", str(tiny_copy), "--no-gate", "--out", str(tmp_path / "r.json"), "--run-file", str(run)]) == 2
    assert "none of its 2 query ids is a query of tiny" in capsys.readouterr().err


# -- drift -------------------------------------------------------------------------------------------

def test_a_set_edited_during_the_run_is_exit_2_and_an_incomplete_report(scripted, tmp_path, tiny_copy, capsys):
    code = scripted("--no-gate", SCRIPTED_APPEND_TO=str(tiny_copy / "queries.jsonl"))
    assert code == 2
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["complete"] is False and report["exit_code"] == 2
    assert f"set file {tiny_copy / 'queries.jsonl'} changed" in report["error"]


# -- the policy --------------------------------------------------------------------------------------

def write_policy(tmp_path, **fields):
    path = tmp_path / "gate-policy.json"
    path.write_text(json.dumps({"format": 1, **fields}))
    return load_policy(path, report_metric_name)


def test_the_default_policy_is_the_founding_gates_with_noise_tolerated():
    policy = GatePolicy()
    assert (policy.metrics, policy.drop_limit_points, policy.gate_categories, policy.min_category_queries,
            policy.category_rule, policy.discount_queries, policy.require_ci_below_zero) == (
        ("recall@10",), 2.0, True, 1, "holm", 1, False)
    # latency: p95 more than doubled and 10 ms more warns; nothing fails on latency but the budget
    assert (policy.latency_relative_limit_percent, policy.latency_min_increase_ms, policy.latency_relative_fails,
            policy.ratchet_improvement_points) == (100.0, 10.0, False, None)
    assert load_policy(None, report_metric_name) == policy or True  # gate-policy.json is optional


@pytest.mark.parametrize("fields, message", [
    ({"metrics": ["nope@3"]}, "metrics: "),
    ({"metrics": []}, "metrics: must be a non-empty list"),
    ({"drop_limit_points": -1}, "drop_limit_points: must be a number from 0 and below 100, got -1"),
    # limits under which a gate could never fail (or warn)
    ({"drop_limit_points": 100},
     "drop_limit_points: must be a number from 0 and below 100, got 100; a mean moves at most 100 points"),
    ({"judged": {"warn_drop_points": 250}}, "judged.warn_drop_points: must be a number from 0 and below 100, got 250"),
    ({"ratchet": {"improvement_points": 100.0}}, "ratchet.improvement_points: must be a number from 0 and below 100"),
    # unknown keys at any depth: a misspelt key must not switch a gate off unseen
    ({"latency": {"relative_p95_limit_pct": 50}}, "latency.relative_p95_limit_pct: unknown field"),
    ({"categories": {"min_query": 5}}, "categories.min_query: unknown field"),
    ({"format": True}, "format: expected the integer 1, got true"),
    ({"format": 1.0}, "format: expected the integer 1, got 1.0"),
    ({"metrics": ["judged@10"]}, "judged@10 is judged coverage, not a quality measure"),
    ({"categories": {"min_queries": 0}}, "categories.min_queries: must be an integer from 1 to 1000000, got 0"),
    ({"categories": {"discount_queries": -1}}, "categories.discount_queries: must be an integer from 0"),
    ({"categories": {"rule": "bonferroni"}}, "categories.rule: must be one of 'holm', 'discount', got 'bonferroni'"),
    ({"categories": {"rule": 1}}, "categories.rule: must be a string, got 1"),
    ({"latency": {"min_samples": 0}}, "latency.min_samples: must be an integer from 1 to 1000000, got 0"),
    ({"latency": {"min_increase_ms": -1}}, "latency.min_increase_ms: must be a number from 0 to 1000000"),
    ({"latency": {"relative_p95_limit_percent": -5}}, "latency.relative_p95_limit_percent: must be a number from 0"),
    ({"latency": {"relative_fails": 1}}, "latency.relative_fails: must be true or false, got 1"),
    ({"categories": {"gate": None}}, "categories.gate: must be true or false, got null"),
    ({"latency": []}, "latency: must be an object, got list"),
    ({"format": None}, "format: expected the integer 1, got null"),
    ({"significance": {"require_ci_below_zero": "yes"}}, "significance.require_ci_below_zero: must be true or false"),
    ({"latencyy": {}}, "latencyy: unknown field"),
    ({"drop_limit_points": 10 ** 400}, "not valid strict JSON (an integer of 401 digits is too large)"),
])
def test_a_bad_policy_is_one_line(tmp_path, fields, message):
    with pytest.raises(UsageError) as error:
        write_policy(tmp_path, **fields)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith(str(tmp_path / "gate-policy.json"))


def test_the_category_rule_is_read_from_the_policy(tmp_path):
    assert write_policy(tmp_path, categories={"rule": "discount"}).category_rule == "discount"
    assert write_policy(tmp_path, categories={"rule": "holm"}).category_rule == "holm"
    assert write_policy(tmp_path).category_rule == "holm"


def test_a_latency_section_without_its_relative_limit_keeps_the_documented_100_percent(tmp_path):
    # the documented way to make latency fail: the p95 may still double (and grow 10 ms) before it does
    policy = write_policy(tmp_path, latency={"relative_fails": True})
    assert (policy.latency_relative_limit_percent, policy.latency_relative_fails) == (100.0, True)
    assert write_policy(tmp_path, latency={"min_samples": 5}).latency_relative_limit_percent == 100.0
    assert write_policy(tmp_path, latency={"relative_p95_limit_percent": None}).latency_relative_limit_percent is None
    assert write_policy(tmp_path, latency={"relative_p95_limit_percent": 0}).latency_relative_limit_percent == 0.0


def test_policy_metric_names_in_any_spelling(tmp_path):
    assert write_policy(tmp_path, metrics=["R@10", "nDCG@10", "mrr"]).metrics == ("recall@10", "ndcg@10", "mrr")


def gates_with(policy, answers=CURRENT_ANSWERS):
    return check([tiny_result(answers)], tiny_baseline_entries(), Budgets({"tiny": 60000.0}), policy=policy)


def test_default_verdicts_on_the_tiny_set():
    # tiny-01 loses its only relevant document: overall 1.0 -> 0.8 fails (the founding rule); category a
    # 1.0 -> 2/3 is that one query alone (one moved query: sign-flip p = 2/2 = 1), so it warns; b holds.
    gates = {(g.gate, g.category): g for g in gates_with(GatePolicy())}
    assert gates[("recall", None)].status == "fail" and gates[("recall", "a")].status == "warn"
    assert "cannot tell the drop from noise" in gates[("recall", "a")].message
    assert gates[("recall", "b")].status == "pass"
    # the founding rule fails the set's drop and says plainly that 5 queries cannot tell it from noise
    assert "this set cannot tell this drop from noise (p=1.000" in gates[("recall", None)].message
    # the discount rule forgives the worst query; with discount_queries 0 one query's loss fails a category
    discount = {(g.gate, g.category): g for g in gates_with(GatePolicy(category_rule="discount"))}
    assert "without its worst query the category's loss is 0.00 points" in discount[("recall", "a")].message
    strict = {(g.gate, g.category): g.status for g in gates_with(GatePolicy(category_rule="discount",
                                                                            discount_queries=0))}
    assert strict[("recall", "a")] == "fail"


def test_small_categories_warn_instead_of_failing(tmp_path):
    gates = gates_with(write_policy(tmp_path, categories={"min_queries": 4}))
    by_scope = {(g.gate, g.category): g for g in gates}
    # category a has 3 scored queries (< 4): reported as WARN; overall (5 queries) still fails
    assert by_scope[("recall", "a")].status == "warn"
    assert "the category has 3 scored queries, fewer than the policy's min_queries 4" in by_scope[("recall", "a")].message
    assert by_scope[("recall", None)].status == "fail"


def test_categories_can_be_left_ungated(tmp_path):
    gates = gates_with(write_policy(tmp_path, categories={"gate": False}))
    assert [g.category for g in gates if g.gate == "recall"] == [None]


def test_significance_rule_turns_a_non_significant_drop_into_a_warning(tmp_path):
    # One query of five lost its document: the bootstrap CI of the change reaches 0, so it only warns.
    gates = gates_with(write_policy(tmp_path, significance={"require_ci_below_zero": True}))
    overall = next(g for g in gates if g.gate == "recall" and g.category is None)
    assert overall.status == "warn" and "does not lie wholly on the side of a loss" in overall.message


def test_more_gated_metrics_and_a_wider_limit(tmp_path):
    # By hand, reciprocal ranks of the 5 scored queries: base 1, 1, 1, 1 and 0.5 (tiny-05 finds doc-07
    # second) = 0.9; now tiny-01 finds nothing (0) and tiny-04's first hit doc-05 is relevant too (1):
    # 0.7. A 20-point drop passes a 25-point limit; category a (tiny-01, 02, 05) 0.833 -> 0.5 fails.
    gates = gates_with(write_policy(tmp_path, metrics=["mrr"], drop_limit_points=25.0))
    mrr = {g.category: g for g in gates if g.gate == "mrr"}
    assert mrr[None].status == "pass" and "mrr 0.7000 (baseline 0.9000; -20.00 points)" in mrr[None].message
    # 5 units: the sign-flip test's smallest p is 2/2^5 = 0.0625 > 0.05, so no change is detectable ("none"),
    # and no figure is claimed for the drop
    assert "below what this scope can detect" not in mrr[None].message
    assert mrr[None].detectable is None and mrr[None].one_query == 0.2
    # a's loss is tiny-01's alone: one query's noise warns (categories.rule discount with discount_queries 0 makes it fail)
    assert mrr["a"].status == "warn" and "dropped 33.33 points" in mrr["a"].message


def test_relative_latency_limit_with_a_minimum_sample(tmp_path):
    # base p95 = 7 ms (latencies 1..7 ms); current p95 = 250 ms (tiny-04): far over +25 % and +10 ms.
    gates = gates_with(write_policy(tmp_path, latency={"relative_p95_limit_percent": 25, "min_samples": 5}))
    relative = next(g for g in gates if g.gate == "latency-relative")
    assert relative.status == "warn" and "250.00 ms, baseline 7.00 ms (+3471 %, +243.00 ms" in relative.message
    assert (relative.baseline, relative.current, relative.limit) == (7.0, 250.0, 17.0)  # max(7 x 1.25, 7 + 10)
    gates = gates_with(write_policy(tmp_path, latency={"relative_p95_limit_percent": 25, "min_samples": 5,
                                                       "relative_fails": True}))
    assert next(g for g in gates if g.gate == "latency-relative").status == "fail"
    gates = gates_with(write_policy(tmp_path, latency={"relative_p95_limit_percent": 25, "min_samples": 50}))
    assert not [g for g in gates if g.gate == "latency-relative"]  # 7 latencies: too few to compare p95s


def test_fail_lines_say_what_moved():
    overall = next(g for g in gates_with(GatePolicy()) if g.gate == "recall" and g.category is None)
    assert "0 queries better, 1 worse, 4 unchanged; worst: tiny-01 lost 1 of 1 relevant document it found" in overall.message


def test_movement_of_a_single_query_category():
    base, now = tiny_result(BASE_ANSWERS), tiny_result(CURRENT_ANSWERS)
    entry = tiny_baseline_entries()["tiny"]
    rows = [q for q in now.queries if q.qid == "tiny-01"]
    assert movement(rows, entry, "recall@10") == "1 of 1 query lost its relevant document (tiny-01)"
    assert base.queries[0].found == ("doc-01",)
