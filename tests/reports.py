"""Typed reports built in memory, for renderer and command tests that need no adapter process.

The sets come from the tiny committed set (tests/fixtures/sets/tiny) evaluated on fixed
answers, gated against a baseline built from other fixed answers, so every number is real
harness output for a known input, and the expected values in the tests are worked by hand.
"""

from __future__ import annotations

from pathlib import Path

from harness.gating.baseline import Baseline, build_baseline
from harness.gating.budgets import Budgets
from harness.gating.gates import decide
from harness.gating.inputs import GateInputs
from harness.gating.policy import GatePolicy
from harness.report.document import AdapterStart, Backend, Provenance, Report, SetSource, exit_code_for
from harness.scoring.evaluate import Answer, evaluate_set
from harness.sets.loader import load_set
from tests.conftest import TINY_SET

# What the "backend" returned for each tiny query (ids, scores) and its latency in ms.
BASE_ANSWERS = {
    "tiny-01": (("doc-01", "doc-02"), 1.0), "tiny-02": (("doc-02",), 2.0), "tiny-03": (("doc-03", "doc-01"), 3.0),
    "tiny-04": (("doc-04", "doc-05"), 4.0), "tiny-05": (("doc-06", "doc-07"), 5.0), "tiny-06": ((), 6.0),
    "tiny-07": ((), 7.0),
}
# The candidate loses tiny-01's relevant document and breaks tiny-04's rank_before contract.
CURRENT_ANSWERS = {**BASE_ANSWERS, "tiny-01": (("doc-09",), 1.5), "tiny-04": (("doc-05", "doc-04"), 250.0)}


def provenance(label: str = "bm25") -> Provenance:
    query_set = load_set(TINY_SET)
    return Provenance(
        harness_version="0.1.0", started="2026-12-01T00:00:00+00:00", git_commit="0" * 40,
        backend=Backend(label, ("python", "-m", "adapters.bm25")),
        adapter=AdapterStart(expect_banner=True, banner={"ready": True, "name": "bm25", "version": "1"},
                             startup_seconds=0.25, log="report.adapter.log"),
        condition="warm", settings={"k": None, "workers": 1},
        sets={"tiny": SetSource(query_set.revision, query_set.corpus_hash, path=str(TINY_SET), source="jsonl",
                                documents=len(query_set.documents))},
        machine={"platform": "Linux", "cpus": 2, "python": "3.11.7"})


def tiny_result(answers):
    query_set = load_set(TINY_SET)
    return evaluate_set(query_set, {qid: Answer(ids, None, ms / 1000) for qid, (ids, ms) in answers.items()},
                        query_set.k)


def tiny_baseline() -> Baseline:
    """The BASE_ANSWERS baseline, as a run reads it (never written to disk)."""
    document = build_baseline([tiny_result(BASE_ANSWERS)], provenance().to_dict())
    return Baseline.from_document(document, Path("baselines/tiny.json"))


def tiny_baseline_entries():
    return dict(tiny_baseline().sets)


# One lost query fails its category under this policy (the default holm rule only warns: one query is no
# significant drop), so the failing report below fails in a category too, as a renderer's worst case.
STRICT_CATEGORIES = GatePolicy(category_rule="discount", discount_queries=0)


def tiny_inputs(**fields) -> GateInputs:
    """The tiny set's gating inputs: the BASE_ANSWERS baseline, a 200 ms budget, STRICT_CATEGORIES."""
    return GateInputs((load_set(TINY_SET),), budgets=Budgets({"tiny": 200.0}), baseline=tiny_baseline(),
                      **{"policy": STRICT_CATEGORIES, **fields})


def gated_report(answers=None) -> Report:
    """The tiny set gated against the BASE_ANSWERS baseline (recall, latency, count and contract gates)."""
    result = tiny_result(CURRENT_ANSWERS if answers is None else answers)
    decision = decide([result], tiny_inputs())
    return Report(provenance=provenance(), sets=(result,), gates=decision.gates,
                  exit_code=exit_code_for(None, decision.gates), flips=decision.flips,
                  baseline_latency=decision.baseline_latency)


def crashed_report() -> Report:
    """A run whose backend died after three answers."""
    partial = {qid: BASE_ANSWERS[qid] for qid in ("tiny-01", "tiny-02", "tiny-03")}
    return Report(provenance=provenance(), sets=(tiny_result(partial),), complete=False,
                  error="query tiny-04: adapter exited with status 7 before answering", exit_code=3)

# The tiny set's relevant ids, as a scripted adapter's answers: every query finds its documents.
GOOD = {q.query: list(q.relevant) for q in load_set(TINY_SET).queries}
