"""Baselines that would silence a gate, lost updates, and gold edits that slip past the revision.

Every defect is one BaselineError line naming file and field (exit 2); the lock is proven with
real concurrent processes writing one baseline file.
"""

import dataclasses
import json
import math
import subprocess
import sys

import pytest

from harness.errors import BaselineError
from pathlib import Path

from harness.gating.baseline import Baseline, baseline_lock, build_baseline, read_baseline
from harness.gating.policy import GatePolicy
from harness.measured import ScopeNumbers
from harness.gating.gates import check
from harness.scoring.evaluate import Answer, evaluate_set
from harness.sets.loader import load_set
from tests.conftest import TINY_SET, REPO_ROOT
from tests.builders import PROVENANCE, rewrite_query, set_result

REPO = REPO_ROOT
TINY = load_set(TINY_SET)
ANSWERS = {q.qid: Answer(tuple(q.relevant), None, 0.002) for q in TINY.queries}


def written(tmp_path, edit=None, *, judgments=None):
    """A baseline of the tiny set, optionally hand-edited (edit(document) mutates it), as a file."""
    document = build_baseline([evaluate_set(TINY, ANSWERS, k=10)], PROVENANCE, judgments=judgments)
    if edit:
        edit(document)
    path = tmp_path / "b.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("path_to, field", [
    (("aggregates", "overall"), "sets.tiny.aggregates.overall.recall@10: missing; the recall gate needs it"),
    (("aggregates", "category", "a"), "sets.tiny.aggregates.category.a.recall@10: missing"),
])
def test_a_baseline_without_the_gated_metric_is_refused(tmp_path, path_to, field):
    def drop(document):
        scope = document["sets"]["tiny"]
        for key in path_to:
            scope = scope[key]
        del scope["recall@10"]
    path = written(tmp_path, drop)
    with pytest.raises(BaselineError, match="^" + str(path) + ": " + field.replace(".", r"\.")):
        read_baseline(path)


def test_an_empty_scope_needs_no_recall(tmp_path):
    def empty(document):
        document["sets"]["tiny"]["aggregates"]["category"]["ghost"] = {"n": 0}
    read_baseline(written(tmp_path, empty))


@pytest.mark.parametrize("old, new, why", [
    ('"recall@10": 1.0', '"recall@10": 1e301', "aggregates.overall.recall@10: must be a finite number, got 1e+301"),
    ('"revision": 1', '"revision": ' + "9" * 400, "not valid strict JSON (an integer of 400 digits is too large)"),
    ('"p95": 2.0', '"p95": NaN', "not valid strict JSON (NaN is not a JSON number)"),
])
def test_huge_numbers_and_nan_in_a_baseline_are_refused(tmp_path, old, new, why):
    path = written(tmp_path)
    raw = path.read_text()
    assert old in raw
    path.write_text(raw.replace(old, new, 1))
    with pytest.raises(BaselineError) as caught:
        read_baseline(path)
    assert why in str(caught.value) and "\n" not in str(caught.value)


def test_a_run_with_a_nan_metric_writes_no_baseline(tmp_path):
    result = evaluate_set(TINY, ANSWERS, k=10)
    overall = result.aggregates.overall
    broken = dataclasses.replace(result, aggregates=dataclasses.replace(
        result.aggregates, overall=dataclasses.replace(overall, means={**overall.means, "ndcg@10": math.nan})))
    with pytest.raises(BaselineError, match=r"^this run: sets\.tiny\.aggregates\.overall\.ndcg@10: must be a finite number"):
        build_baseline([broken], PROVENANCE)


def test_a_missing_metric_never_passes_the_recall_gate():
    rows = [("a", 1, 1, 0)] * 5  # recall 1.0 -> 0.0: an 100-point drop
    baseline = set_result(rows, 2).numbers()
    current = set_result(rows, 3)
    overall = dataclasses.replace(baseline.aggregates.overall, means={})  # as a hand-edited file would lack it
    baseline = dataclasses.replace(baseline, aggregates=dataclasses.replace(baseline.aggregates, overall=overall))
    # five queries can never reach p < 0.05 (sign-flip's smallest p is 2/2^5): the discount rule fails them
    gates = [g for g in check([current], {"s": baseline}, policy=GatePolicy(category_rule="discount"))
             if g.gate == "recall"]
    overall = next(g for g in gates if g.category is None)
    assert not overall.passed and "recall@10: missing from the baseline" in overall.message
    assert not next(g for g in gates if g.category == "a").passed  # the category still gates the drop


def test_the_recall_gate_says_when_nothing_was_scored():
    rows = [("a", 1, 1, 1)]
    baseline = set_result(rows, 2).numbers()
    current = set_result(rows, 3)
    empty = ScopeNumbers(n=0)
    baseline = dataclasses.replace(baseline, aggregates=dataclasses.replace(baseline.aggregates, overall=empty))
    current = dataclasses.replace(current, aggregates=dataclasses.replace(current.aggregates, overall=empty))
    overall = next(g for g in check([current], {"s": baseline}) if g.gate == "recall" and g.category is None)
    assert overall.passed and "no scored queries" in overall.message


def test_judgments_are_fingerprinted_and_a_gold_edit_without_revision_bump_is_refused(tmp_path, tiny_copy):
    path = written(tmp_path, judgments={"tiny": TINY.judgments_hash})
    baseline = Baseline.read(path)
    assert baseline.sets["tiny"].judgments_hash == TINY.judgments_hash
    assert baseline.comparable(load_set(tiny_copy))  # unchanged: comparable
    rewrite_query(tiny_copy, "tiny-01", relevant={"doc-01": 1, "doc-02": 1})
    edited = load_set(tiny_copy)
    assert (edited.revision, edited.corpus_hash) == (TINY.revision, TINY.corpus_hash)
    with pytest.raises(BaselineError, match=r"sets\.tiny\.judgments_hash: judgments changed without a revision bump"):
        baseline.comparable(edited)


def test_baselines_without_a_judgments_hash_still_compare(tmp_path, tiny_copy):
    baseline = Baseline.read(written(tmp_path))
    assert baseline.sets["tiny"].judgments_hash is None
    rewrite_query(tiny_copy, "tiny-01", relevant={"doc-01": 2})
    assert baseline.comparable(load_set(tiny_copy))


@pytest.mark.parametrize("name", ["current.json", "hybrid.json", "onnx.json"])
def test_the_committed_baselines_still_load_and_compare_with_the_shipped_sets(name):
    baseline = Baseline.read(REPO / "baselines" / name)
    for set_name in baseline.sets:
        baseline.comparable(load_set(REPO / "sets" / set_name, offline=True, check_pins=False))


WRITER = r"""
import json, sys, time
from pathlib import Path
from harness.gating.baseline import write_baseline
path, name, start, rounds = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
template = json.loads(Path(sys.argv[5]).read_text())
while not start.exists():
    time.sleep(0.001)
for round_ in range(rounds):
    document = dict(template, sets={name: dict(template["sets"]["tiny"], query_count=round_)})
    write_baseline(path, document)
"""


def test_concurrent_updates_of_different_sets_all_survive(tmp_path):
    # Eight real processes, each writing its own set 15 times into one file, released together.
    template = tmp_path / "template.json"
    template.write_text(json.dumps(build_baseline([evaluate_set(TINY, ANSWERS, k=10)], PROVENANCE)))
    path, start = tmp_path / "shared.json", tmp_path / "go"
    names = [f"set{n}" for n in range(8)]
    children = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(start), "15", str(template)],
                                 cwd=REPO) for name in names]
    start.touch()
    for child in children:
        assert child.wait(timeout=120) == 0
    sets = read_baseline(path)["sets"]
    assert sorted(sets) == names
    assert {entry["query_count"] for entry in sets.values()} == {14}  # each writer's last round
    assert sorted(p.name for p in tmp_path.iterdir()) == ["go", "shared.json", "template.json"]  # lock removed


def test_the_lock_excludes_a_second_holder(tmp_path):
    path = tmp_path / "b.json"
    probe = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
             "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)")
    with baseline_lock(path):
        lock = tmp_path / ".b.json.lock"
        assert lock.exists()
        held = subprocess.run([sys.executable, "-c", probe, str(lock)], capture_output=True, text=True, timeout=60)
        assert held.returncode != 0 and "BlockingIOError" in held.stderr
    assert not lock.exists()


@pytest.mark.parametrize("text, why", [
    ('{"format": 1, "default_p95_ms": ' + "9" * 400 + "}", "not valid strict JSON (an integer of 400 digits"),
    ('{"format": 1, "default_p95_ms": ' + "9" * 200 + "}",
     "default_p95_ms: must be a number above 0 and up to 86400000, got 9999"),
    ('{"format": 1, "p95_ms": {"code": 1e400}}', "p95_ms.code: must be a number above 0 and up to 86400000"),
    ('{"format": 1, "p95_ms": {"co\\nde": -1}}', "p95_ms.'co\\nde': must be a number above 0 and up to 86400000, got -1"),
    ('{"format": 1, "default_p95_ms": NaN}', "not valid strict JSON (NaN is not a JSON number)"),
    ('{"format": true, "default_p95_ms": 5}', "format: expected the integer 1, got true"),
    ('{"format": 1, "p95ms": {"code": 5}}', "p95ms: unknown field (known: default_p95_ms, format, p95_ms, resources)"),
])
def test_budgets_with_huge_or_non_finite_numbers_are_one_line_errors(tmp_path, text, why):
    from harness.errors import UsageError
    from harness.gating.budgets import load_budgets
    path = tmp_path / "budgets.json"
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        load_budgets(path)
    assert why in str(caught.value) and "\n" not in str(caught.value)


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=REPO, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


@pytest.fixture
def cli_baseline(tmp_path, tiny_copy):
    """A baseline of the tiny set written by the real CLI (bm25), and the set it was written from."""
    baseline = tmp_path / "b.json"
    done = _cli("--set", str(tiny_copy), "--baseline", str(baseline), "--update-baseline", "--yes",
                "--out", str(tmp_path / "first.json"), "--quiet")
    assert done.returncode == 0, done.stderr
    return baseline, tiny_copy


def test_cli_a_baseline_stripped_of_recall_is_exit_2_not_a_silent_pass(cli_baseline, tmp_path):
    baseline, folder = cli_baseline
    document = json.loads(baseline.read_text())
    for scope in [document["sets"]["tiny"]["aggregates"]["overall"],
                  *document["sets"]["tiny"]["aggregates"]["category"].values()]:
        scope.pop("recall@10", None)
    baseline.write_text(json.dumps(document))
    done = _cli("--set", str(folder), "--baseline", str(baseline), "--out", str(tmp_path / "r.json"), "--quiet")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (f"harness: error: {baseline}: sets.tiny.aggregates.overall.recall@10: missing; the recall "
                           f"gate needs it for every scope with scored queries (restore the file from git, or remove it and re-baseline)\n")


def test_cli_a_gold_edit_without_revision_bump_is_refused(cli_baseline, tmp_path):
    baseline, folder = cli_baseline
    document = json.loads(baseline.read_text())
    document["sets"]["tiny"]["judgments_hash"] = load_set(folder).judgments_hash  # as the wired CLI records it
    baseline.write_text(json.dumps(document))
    before = _cli("--set", str(folder), "--baseline", str(baseline), "--out", str(tmp_path / "r.json"),
                  "--known-contract-failures", "--quiet")  # bm25 breaks two tiny contracts, known to the baseline
    assert before.returncode == 0, before.stdout + before.stderr
    rewrite_query(folder, "tiny-01", relevant={"doc-01": 1, "doc-02": 1})  # no revision bump
    done = _cli("--set", str(folder), "--baseline", str(baseline), "--out", str(tmp_path / "r.json"), "--quiet")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "sets.tiny.judgments_hash: judgments changed without a revision bump" in done.stderr
    assert done.stderr.count("\n") == 1


def test_cli_update_baseline_records_the_judgments_hash(cli_baseline):
    baseline, folder = cli_baseline
    assert json.loads(baseline.read_text())["sets"]["tiny"]["judgments_hash"] == load_set(folder).judgments_hash


def test_cli_two_folders_with_one_set_name_are_refused(tmp_path, tiny_copy):
    import shutil
    other = tmp_path / "elsewhere" / "tiny2"
    shutil.copytree(tiny_copy, other)
    done = _cli("--set", str(tiny_copy), "--set", str(other), "--no-gate", "--out", str(tmp_path / "r.json"), "--quiet")
    assert done.returncode == 2 and str(other) in done.stderr and str(tiny_copy) in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "two sets in one run need different names" in done.stderr
    assert not (tmp_path / "r.json").exists()  # refused before anything ran


def test_build_baseline_takes_the_judgments_hash_from_the_provenance_too():
    result = evaluate_set(TINY, ANSWERS, k=10)
    document = build_baseline([result], {**PROVENANCE, "sets": {"tiny": {"judgments_hash": TINY.judgments_hash}}})
    assert document["sets"]["tiny"]["judgments_hash"] == TINY.judgments_hash
    assert "judgments_hash" not in build_baseline([result], {**PROVENANCE, "sets": {"tiny": {"path": "x"}}})["sets"]["tiny"]
