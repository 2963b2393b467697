"""Graded contracts: a set.json `contracts: graded` fails a change only on significantly more breaks than fixes."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from harness.errors import SetError
from harness.gating.baseline import Baseline, build_baseline
from harness.gating.gates import check, decide
from harness.gating.inputs import GateInputs
from harness.measured import Aggregates, Latency, ScopeNumbers
from harness.records import ContractResult, QueryResult, SetResult
from harness.scoring.evaluate import Answer, evaluate_set
from harness.sets.loader import load_set
from tests.builders import PROVENANCE
from tests.conftest import TINY_SET

ROOT = Path(__file__).resolve().parents[3]
QUERIES = 60


def contract_run(broken, xfail=()):
    """60 queries with one `forbid` contract each; the queries in `broken` break theirs."""
    queries = tuple(
        QueryResult(qid=f"q{i:02d}", query="q", category="c", split="development", ids=(), scores=None,
                    latency_seconds=0.001, metrics={"recall@10": 1.0}, found=("d",),
                    contracts=(ContractResult("forbid", i not in broken, "forbidden x at rank 1", "x"),),
                    outcome="xfail" if i in xfail else ("fail" if i in broken else "pass"), scored=True)
        for i in range(QUERIES))
    aggregates = Aggregates(ScopeNumbers(QUERIES, {"recall@10": 1.0}), {"c": ScopeNumbers(QUERIES, {"recall@10": 1.0})})
    return SetResult(name="s", kind="s", revision=1, corpus_hash="h", k=10, query_count=QUERIES, complete=True,
                     aggregates=aggregates, latency=Latency(1, 1.0, 1.0, 1.0), queries=queries)


def contract_gate(now, base, **options):
    entry = Baseline.from_document(build_baseline([base], PROVENANCE), Path("b.json")).sets["s"]
    [gate] = [g for g in check([now], {"s": entry}, **options) if g.gate == "contract"]
    return gate


def graded(now, base):
    return contract_gate(now, base, graded_contracts={"s"})


def test_ten_more_broken_than_fixed_fails_and_lists_the_flips():
    base = contract_run(broken=set(range(30)))                    # 30 broken in the baseline
    now = contract_run(broken=set(range(30)) | set(range(40, 50)))  # 10 more, none fixed: p = 2 / 2^10
    gate = graded(now, base)
    assert gate.status == "fail" and gate.p_value == pytest.approx(2 / 1024)
    assert gate.baseline == 30 and gate.current == 40
    assert "10 broken now, 0 fixed now (exact McNemar p=0.00195 < alpha 0.05): significantly more broken" \
        in gate.message
    assert "broken now: q40 forbid:x, q41 forbid:x" in gate.message and "(+0 more)" not in gate.message
    assert gate.flipped == tuple(f"q{i}" for i in range(40, 50))
    # 13 broken against 3 fixed: still 10 more, n 16, p = 2 * (1 + 16 + 120 + 560) / 2^16 = 0.0213
    now = contract_run(broken=set(range(3, 30)) | set(range(40, 53)))
    gate = graded(now, base)
    assert gate.status == "fail" and gate.p_value == pytest.approx(2 * (1 + 16 + 120 + 560) / 2 ** 16)
    assert "fixed now: q00 forbid:x, q01 forbid:x, q02 forbid:x" in gate.message


def test_a_reshuffle_with_fewer_breaks_passes_where_the_strict_rule_fails():
    base = contract_run(broken=set(range(30)))
    now = contract_run(broken=set(range(10, 30)) | set(range(40, 48)))  # 8 broken now, 10 fixed now
    gate = graded(now, base)
    assert gate.status == "pass" and "8 broken now, 10 fixed now" in gate.message and "no more broken than fixed" \
        in gate.message
    # the strict rule, even with the known failures accepted, fails on the 8 new breaks
    assert contract_gate(now, base, known_contract_failures=True).status == "fail"


def test_more_broken_but_not_significantly_passes():
    base = contract_run(broken=set(range(30)))
    now = contract_run(broken=set(range(5, 30)) | set(range(40, 50)))  # 10 broken now, 5 fixed: p = 0.30
    gate = graded(now, base)
    # n 15: P[X <= 5] = (1 + 15 + 105 + 455 + 1365 + 3003) / 2^15
    assert gate.status == "pass" and gate.p_value == pytest.approx(2 * 4944 / 2 ** 15)
    assert "not significantly more broken than fixed" in gate.message


def test_xfail_queries_count_on_neither_side():
    base = contract_run(broken=set())
    now = contract_run(broken=set(range(10)), xfail=set(range(10)))  # all ten breaks are on xfail queries
    gate = graded(now, base)
    assert gate.status == "pass" and "0 broken now, 0 fixed now" in gate.message and gate.current == 0


def test_unchanged_contracts_pass_graded():
    base = contract_run(broken={1, 2})
    gate = graded(base, base)
    assert gate.status == "pass" and gate.p_value == 1.0 and "2 of 60 broken, baseline 2" in gate.message


def test_set_json_contracts_key_is_validated(tmp_path):
    folder = tmp_path / "tiny"
    shutil.copytree(TINY_SET, folder)
    assert load_set(folder).contracts == "strict"  # no key: the founding rule
    meta = json.loads((folder / "set.json").read_text())
    (folder / "set.json").write_text(json.dumps({**meta, "contracts": "graded"}))
    assert load_set(folder).contracts == "graded"
    (folder / "set.json").write_text(json.dumps({**meta, "contracts": "lenient"}))
    with pytest.raises(SetError, match=r"set.json: contracts: must be one of strict, graded, got 'lenient'"):
        load_set(folder)


def test_decide_grades_the_sets_that_declare_it(tmp_path):
    folder = tmp_path / "tiny"
    shutil.copytree(TINY_SET, folder)
    strict_set = load_set(folder)
    good = {q.qid: Answer(ids=tuple(q.relevant) if q.relevant else (), scores=None, latency_seconds=0.001)
            for q in strict_set.queries}
    base = evaluate_set(strict_set, good, k=10)
    broken = evaluate_set(strict_set, {**good, "tiny-05": Answer(("doc-07", "doc-08"), None, 0.001)}, k=10)
    baseline = Baseline.from_document(build_baseline([base], PROVENANCE), Path("b.json"))
    for rule, status in (("strict", "fail"), ("graded", "pass")):  # one new break: p = 1 graded
        query_set = dataclasses.replace(strict_set, contracts=rule)
        decision = decide([broken], GateInputs((query_set,), baseline=baseline))
        [gate] = [g for g in decision.gates if g.gate == "contract"]
        assert gate.status == status, rule


def test_memory_hard_is_graded_and_its_identity_unchanged():
    """The key changes no figure a baseline compares: the shipped baselines stay comparable."""
    query_set = load_set(ROOT / "sets" / "memory-hard")
    assert query_set.contracts == "graded"
    assert load_set(ROOT / "sets" / "memory").contracts == "strict"  # the founding memory set keeps its rule
    for path in ("baselines/companions/current.json", "baselines/companions/onnx.json"):
        entry = Baseline.read(ROOT / path).comparable(query_set, k=query_set.k)
        assert entry.judgments_hash == query_set.judgments_hash and entry.corpus_hash == query_set.corpus_hash
