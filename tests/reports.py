"""Typed reports built in memory, for renderer and command tests that need no adapter process.

The sets come from the tiny committed set (tests/fixtures/sets/tiny) evaluated on fixed
answers, gated against a baseline built from other fixed answers, so every number is real
harness output for a known input, and the expected values in the tests are worked by hand.
"""

from __future__ import annotations

from harness.gating.baseline import build_baseline
from harness.gating.gates import check
from harness.report.document import AdapterStart, Backend, Provenance, Report, SetSource, verdict
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


def tiny_baseline_entries():
    base = tiny_result(BASE_ANSWERS)
    return build_baseline([base], provenance().to_dict())["sets"]


def gated_report(answers=None) -> Report:
    """The tiny set gated against the BASE_ANSWERS baseline (recall, latency, count and contract gates)."""
    result = tiny_result(CURRENT_ANSWERS if answers is None else answers)
    gates = check([result], tiny_baseline_entries(), {"tiny": 200.0})
    return Report(provenance=provenance(), sets=(result,), gates=tuple(gates), exit_code=verdict(None, gates))


def crashed_report() -> Report:
    """A run whose backend died after three answers."""
    partial = {qid: BASE_ANSWERS[qid] for qid in ("tiny-01", "tiny-02", "tiny-03")}
    return Report(provenance=provenance(), sets=(tiny_result(partial),), complete=False,
                  error="query tiny-04: adapter exited with status 7 before answering", exit_code=3)

# The tiny set's relevant ids, as a scripted adapter's answers: every query finds its documents.
GOOD = {q.query: list(q.relevant) for q in load_set(TINY_SET).queries}
