"""One gate for every path: an unsharded run and `merge` of its 2, 3 or 7 shards decide alike.

Every shipped set is asked by the scripted adapter (exact rankings: the relevant documents,
except for every 17th query, which gets nothing), gated against a baseline of perfect answers
under three policies: the default, one gating other metrics with another limit, and one that
does not gate categories. The merged report must hold the same gates (set, gate, scope,
status, metric, baseline, current, limit, unit, CI, p-value, message) and exit code as the
unsharded run. Latency is measured anew by each process, so a latency gate's current value
and message are the one thing allowed to differ (its status, budget and baseline are not: the
baseline's p95 is set high so that load on this machine never decides a latency gate); so are the
resource gates' (start-up, peak memory, index size), each process measuring its own adapter.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from harness.commands.cli import main
from harness.errors import SetError
from harness.sets.loader import load_set
from tests.conftest import REPO_ROOT, SCRIPTED_ADAPTER, TINY_SET

SHIPPED = ("code", "code-agent", "memory", "dedupe", "wiki", "dedupe-hard", "memory-hard", "wiki-hard")
SHARD_COUNTS = (2, 3, 7)
RECORDED_METRICS = ["recall@10", "nDCG@20", "RR@10", "recall@5"]  # the baseline carries every policy's metrics
POLICIES = {
    "default": None,
    "other-metrics": {"format": 1, "metrics": ["nDCG@20", "RR@10", "recall@5"], "drop_limit_points": 5.0},
    "no-categories": {"format": 1, "categories": {"gate": False}},
}
# Measured anew by each process: latency, and the adapter's start-up, memory and index size (their budgets and
# their growth against the baseline), so a merge's largest shard figure is no unsharded run's figure.
LATENCY_GATES = ("latency", "latency-relative", "startup", "startup-relative", "memory", "memory-relative",
                 "index-size", "index-size-relative")


def shipped_sets():
    """The shipped sets, loaded offline (the code set's corpus must be cached: .ci/run fetches it)."""
    sets = []
    for name in SHIPPED:
        try:
            sets.append(load_set(REPO_ROOT / "sets" / name, offline=True))
        except SetError as error:
            message = f"set {name} not available offline ({error}); run `python -m harness sets verify {name}`"
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
    return sets


def answers(query_sets, *, perturbed: bool) -> dict[str, list[str]]:
    """Query text -> ids: the relevant documents best first; perturbed, every 17th query gets nothing."""
    script = {}
    for query_set in query_sets:
        for index, query in enumerate(query_set.queries):
            relevant = sorted(query.relevant, key=lambda doc: (-query.relevant[doc], doc))
            script[query.query] = [] if perturbed and index % 17 == 3 else [d for d in relevant
                                                                             if query.relevant[d] > 0]
    return script


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    query_sets = shipped_sets()
    root = tmp_path_factory.mktemp("one-gate")
    for name, script in (("perfect", answers(query_sets, perturbed=False)),
                         ("current", answers(query_sets, perturbed=True))):
        (root / f"{name}.json").write_text(json.dumps(script))
    (root / "budgets.json").write_text(json.dumps({"format": 1, "default_p95_ms": 60000}))
    for name, policy in {**POLICIES, "record": {"format": 1, "metrics": RECORDED_METRICS}}.items():
        if policy is not None:
            (root / f"{name}.policy.json").write_text(json.dumps(policy))
    code, _ = harness(root, "record.json", "perfect", "--policy", str(root / "record.policy.json"),
                      "--update-baseline", "--yes")
    assert code == 0
    slow_machine_baseline(root / "baseline.json")
    return root


def slow_machine_baseline(path):
    """The baseline as if recorded on a slow machine (p95 100 ms per set): the relative latency gate
    then passes in every process, however loaded this machine is, so a latency gate's status says
    how each path gates and not how busy the machine was while it measured."""
    document = json.loads(path.read_text())
    for entry in document["sets"].values():
        entry["latency_ms"] = {**entry["latency_ms"], "p50": 100.0, "p95": 100.0, "max": 100.0}
    path.write_text(json.dumps(document))


def harness(root, out, answers_name, *options, env=None):
    """One in-process run of the sets with the scripted adapter: (exit code, report path)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCRIPTED_ANSWERS", str(root / f"{answers_name}.json"))
        patch.setenv("SCRIPTED_BANNER", "1")
        for key, value in (env or {}).items():
            patch.setenv(key, value)
        sets = [arg for name in SHIPPED for arg in ("--set", name)]
        code = main([*sets, "--sets-dir", str(REPO_ROOT / "sets"), "--offline", "--out", str(root / out),
                     "--budgets", str(root / "budgets.json"), "--baseline", str(root / "baseline.json"),
                     "--quiet", *options, "--adapter", "--expect-banner", "--", sys.executable,
                     str(SCRIPTED_ADAPTER)])
    return code, root / out


def merge(root, out, shards, *options):
    code = main(["merge", *map(str, shards), "--out", str(root / out), "--sets-dir", str(REPO_ROOT / "sets"),
                 "--offline", "--budgets", str(root / "budgets.json"), "--baseline", str(root / "baseline.json"),
                 "--quiet", *options])
    return code, root / out


def policy_options(root, name):
    return [] if POLICIES[name] is None else ["--policy", str(root / f"{name}.policy.json")]


def decided(report_path):
    """What a verdict is made of, gate by gate (latency: all but the value measured anew)."""
    rows = []
    for gate in json.loads(report_path.read_text())["gates"]:
        row = (gate["set"], gate["gate"], gate["category"], gate["status"], gate.get("metric"), gate.get("baseline"),
               gate.get("limit"), gate.get("unit"))
        if gate["gate"] not in LATENCY_GATES:
            row += (gate.get("current"), tuple(gate.get("ci") or ()), gate.get("p_value"), gate["message"])
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def shard_reports(workspace):
    """The perturbed backend's shard reports, 2, 3 and 7 shards (shards are never gated alone)."""
    reports = {}
    for count in SHARD_COUNTS:
        reports[count] = []
        for index in range(1, count + 1):
            code, path = harness(workspace, f"shard-{index}-of-{count}.json", "current", "--shard", f"{index}/{count}")
            assert code == 0
            reports[count].append(path)
    return reports


@pytest.mark.parametrize("policy", list(POLICIES))
def test_merge_of_any_split_decides_exactly_as_the_unsharded_run(workspace, shard_reports, policy):
    run_code, run_report = harness(workspace, f"whole-{policy}.json", "current", *policy_options(workspace, policy))
    expected = decided(run_report)
    statuses = {row[3] for row in expected}
    assert run_code == 1 and {"pass", "fail"} <= statuses  # a verdict worth comparing: some gates pass, some fail
    if policy == "no-categories":
        assert all(row[2] is None for row in expected)
    if policy == "other-metrics":
        assert {row[4] for row in expected if row[1] not in ("query-count", "contract", "judged") + LATENCY_GATES} \
            == {"ndcg@20", "mrr", "recall@5"}
    for count in SHARD_COUNTS:
        code, merged = merge(workspace, f"merged-{policy}-{count}.json", shard_reports[count],
                             *policy_options(workspace, policy))
        assert (code, decided(merged)) == (run_code, expected), f"{count} shards under the {policy} policy"
        document = json.loads(merged.read_text())
        whole = json.loads(run_report.read_text())
        assert document["pooled"] == whole["pooled"]
        for mine, theirs in zip(document["sets"], whole["sets"]):
            assert mine["aggregates"] == theirs["aggregates"]
            assert [q["metrics"] for q in mine["queries"]] == [q["metrics"] for q in theirs["queries"]]


# --- the identity check, in both paths ------------------------------------------------------------

def tiny(root, out, *options, env):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCRIPTED_ANSWERS", str(root / "tiny.answers.json"))
        patch.setenv("SCRIPTED_BANNER", "1")
        for key, value in env.items():
            patch.setenv(key, value)
        return main(["--set", str(TINY_SET), "--out", str(root / out), "--baseline", str(root / "tiny.baseline.json"),
                     "--quiet", *options, "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)])


@pytest.mark.parametrize("change", [{"SCRIPTED_NAME": "another"}, {"SCRIPTED_DIGEST": "f" * 64}],
                         ids=["another backend", "another model"])
def test_the_identity_check_refuses_alike_in_a_run_and_in_merge(tmp_path, capsys, change):
    tiny_set = load_set(TINY_SET)
    (tmp_path / "tiny.answers.json").write_text(json.dumps({q.query: list(q.relevant) for q in tiny_set.queries}))
    assert tiny(tmp_path, "base.json", "--update-baseline", "--yes", env={}) == 0
    capsys.readouterr()
    assert tiny(tmp_path, "whole.json", env=change) == 2
    refused_run = capsys.readouterr().err.strip().splitlines()
    shards = [tmp_path / f"s{i}.json" for i in (1, 2)]
    for index, shard in enumerate(shards, start=1):
        assert tiny(tmp_path, shard.name, "--shard", f"{index}/2", env=change) == 0
    capsys.readouterr()
    code = main(["merge", *map(str, shards), "--out", str(tmp_path / "merged.json"), "--quiet",
                 "--baseline", str(tmp_path / "tiny.baseline.json")])
    refused_merge = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(refused_run) == len(refused_merge) == 1
    assert refused_run == refused_merge and "tiny.baseline.json: recorded for 'scripted' 1" in refused_run[0]
    # --allow-backend-change gates anyway in both paths, and both reports say so
    assert tiny(tmp_path, "whole.json", "--allow-backend-change", env=change) == 0
    code = main(["merge", *map(str, shards), "--out", str(tmp_path / "merged.json"), "--quiet",
                 "--baseline", str(tmp_path / "tiny.baseline.json"), "--allow-backend-change"])
    assert code == 0
    for path in ("whole.json", "merged.json"):
        assert json.loads((tmp_path / path).read_text())["provenance"]["backend_change_allowed"] is True


# --- the summary of a failing run: one headline, each flipped query once, under 5 KB ------------------

def test_the_summary_of_a_failing_two_set_run_is_compact(workspace, tmp_path):
    summary = tmp_path / "summary.md"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCRIPTED_ANSWERS", str(workspace / "current.json"))
        patch.setenv("SCRIPTED_BANNER", "1")
        code = main(["--set", "memory", "--set", "dedupe", "--sets-dir", str(REPO_ROOT / "sets"), "--offline",
                     "--out", str(tmp_path / "r.json"), "--budgets", str(workspace / "budgets.json"),
                     "--baseline", str(workspace / "baseline.json"), "--quiet", "--summary", str(summary),
                     "--adapter", "--expect-banner", "--", sys.executable, str(SCRIPTED_ADAPTER)])
    text = summary.read_text()
    report = json.loads((tmp_path / "r.json").read_text())
    assert code == 1 and len(text.encode()) < 5 * 1024, len(text.encode())
    lost = {(name, flip["qid"]) for name, flips in report["flips"].items() for flip in flips if flip["lost"]}
    assert lost  # every 17th query answers nothing: some lost their documents
    for _, qid in lost:
        assert text.count(f"`{qid}` lost") <= 1  # listed once, never under each gate
    assert text.count("**FAILED:") == 1 and text.index("**FAILED:") < text.index("#### Failures")
