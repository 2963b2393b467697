"""Ties are visible (docs/adapters.md, "Scores and ties"): tied positions per query, `--repeats`
telling a tied-order change from a real one, and TREC export keeping the adapter's real scores
(nudging only what trec_eval would reorder), proved against pytrec_eval on generated runs with many
ties."""

from __future__ import annotations

import random

import pytest

from harness.adapter.asking import _answer, tied_warning
from harness.adapter.protocol import Response
from harness.report.reading import report_from_json
from harness.report.document import Backend, Provenance, Report
from harness.report.trec import _strict_scores, write_qrels, write_run
from harness.sets.trec_input import read_run
from harness.scoring.evaluate import Answer, evaluate_query, evaluate_set, ranking_change, tied_positions
from harness.scoring.metrics import trec_eval_order, trec_eval_score
from harness.sets.loader import load_set
from tests.conftest import FIXTURES, TINY_SET

try:
    import pytrec_eval
except ImportError:
    pytrec_eval = None

TINY = load_set(TINY_SET)


def test_tied_positions_count_scores_equal_to_the_previous_one():
    assert tied_positions([3.0, 2.0, 1.0]) == 0
    assert tied_positions([3.0, 3.0, 3.0, 1.0, 1.0]) == 3  # positions 2, 3 and 5
    assert tied_positions([]) == 0
    row = evaluate_query(TINY.queries[0], Answer(("doc-01", "doc-02", "doc-03"), (1.0, 1.0, 0.5), 0.0), k=10)
    assert row.tied == 1 and row.to_dict()["tied"] == 1
    untied = evaluate_query(TINY.queries[0], Answer(("doc-01",), None, 0.0), k=10)
    assert untied.tied == 0 and "tied" not in untied.to_dict()


def test_tied_positions_survive_the_report_json():
    result = evaluate_set(TINY, {"tiny-01": Answer(("doc-01", "doc-02"), (2.0, 2.0), 0.0)}, k=10)
    report = Report(provenance=Provenance(harness_version="t", started=None, backend=Backend("t")), sets=(result,))
    again = report_from_json(report.to_json())
    assert again.sets[0].queries[0].tied == 1 and again == report


@pytest.mark.parametrize("again, expected", [
    (("a", "b", "c", "d"), None),
    (("b", "a", "c", "d"), "tied"),      # a, b tied at 2.0
    (("a", "b", "d", "c"), "ranking"),   # c (1.0) and d (0.5) are not tied
    (("a", "c", "b", "d"), "ranking"),
    (("a", "b", "c"), "ranking"),
])
def test_a_second_answer_is_the_same_a_tied_reorder_or_a_ranking_change(again, expected):
    assert ranking_change(("a", "b", "c", "d"), (2.0, 2.0, 1.0, 0.5), again) == expected
    # without scores nothing is known to be tied
    assert ranking_change(("a", "b", "c", "d"), None, again) == (None if expected is None else "ranking")


def replies(*responses):
    """One query's repeated replies: the given responses in turn, 1 ms each."""
    return [(response, 0.001) for response in responses]


def test_repeats_flag_a_tied_order_change_apart_from_a_real_one():
    first = Response(("a", "b", "c"), (1.0, 1.0, 0.5))
    answer, change = _answer(replies(first, Response(("b", "a", "c"), (1.0, 1.0, 0.5))))
    assert change == "tied" and answer.ids == ("a", "b", "c")  # metrics use the first answer
    _, change = _answer(replies(first, Response(("b", "a", "c")), Response(("a", "c", "b"))))
    assert change == "ranking"  # a real change wins over a tied one
    _, change = _answer(replies(first, first))
    assert change is None
    assert tied_warning([]) == []
    assert tied_warning(["tiny/tiny-01"])[0].startswith("--repeats: 1 query came back with tied documents")


def test_export_keeps_real_scores_and_nudges_within_ties_only():
    # c > b > a: trec_eval would order the 2.0 tie c, b, a; the adapter said a, b, c.
    written, nudged, ulps = _strict_scores(["a", "b", "c", "d"], [2.0, 2.0, 2.0, 1.0])
    assert written[0] == 2.0 and written[3] == 1.0  # untied scores as the adapter gave them
    assert written[0] > written[1] > written[2] > written[3]
    assert (nudged, ulps) == (2, 2)  # c goes 2 single-precision steps below 2.0
    # a tie trec_eval already keeps (docno descending) is written as it is
    assert _strict_scores(["c", "b", "a"], [1.0, 1.0, 1.0]) == ([1.0, 1.0, 1.0], 0, 0)
    # increasing or missing scores: n, n-1, ..., 1
    assert _strict_scores(["a", "b"], [1.0, 2.0]) == ([2.0, 1.0], -1, 0)
    assert _strict_scores(["a", "b"], None) == ([2.0, 1.0], -1, 0)
    # doubles equal in single precision are a tie to trec_eval
    assert trec_eval_score(1.0) == trec_eval_score(1.0 - 1e-12)
    written, nudged, _ = _strict_scores(["a", "b"], [1.0, 1.0 - 1e-12])
    assert nudged == 1 and trec_eval_score(written[1]) < 1.0


def _reciprocal_rank(order: list[str], relevant: str) -> float:
    return 1 / (order.index(relevant) + 1)


def test_a_nudged_tie_reads_in_one_order_under_double_and_single_precision_comparison(tmp_path):
    """The constructed case (docs/sets.md, "Which trec_eval the measures follow"): x 1.0, y 1.0, z 0.99999996 (single precision: 1 - 2**-24,
    equal to where y is nudged). Written unrounded, trec_eval 10's double comparison put z above
    the nudged y (RR of y 1/3) while trec_eval 9 and pytrec_eval (single precision, ties by docno
    descending) kept the adapter's order (RR 1/2). Rounded first, both read RR 1/2."""
    ids, scores = ["doc-a", "doc-c", "doc-b"], [1.0, 1.0, 0.99999996]
    assert trec_eval_score(scores[2]) == 1 - 2 ** -24 < scores[2]
    result = evaluate_set(TINY, {"tiny-01": Answer(tuple(ids), tuple(scores), 0.0)}, k=10)
    report = Report(provenance=Provenance(harness_version="t", started=None, backend=Backend("t")), sets=(result,))
    write_run(report, tmp_path / "run.txt")
    written = {line.split()[2]: line.split()[4] for line in (tmp_path / "run.txt").read_text().splitlines()
               if line.startswith("tiny-01 ")}
    assert written == {"doc-a": "1", "doc-c": "0.9999999403953552", "doc-b": "0.9999999403953552"}
    # trec_eval 10.x: doubles, ties by docno descending
    as_doubles = sorted(written, key=lambda doc: (-float(written[doc]), [-ord(ch) for ch in doc]))
    # trec_eval 9.0.8 and pytrec_eval: single precision, ties by docno descending (--run-file's order)
    as_singles = trec_eval_order(read_run(tmp_path / "run.txt")["tiny-01"])
    assert as_doubles == as_singles == ids
    assert _reciprocal_rank(as_doubles, "doc-c") == _reciprocal_rank(as_singles, "doc-c") == 0.5
    if pytrec_eval is not None:
        with open(tmp_path / "run.txt") as run_file:
            run = pytrec_eval.parse_run(run_file)
        trec = pytrec_eval.RelevanceEvaluator({"tiny-01": {"doc-c": 1}}, {"recip_rank"}).evaluate(
            {"tiny-01": run["tiny-01"]})
        assert trec["tiny-01"]["recip_rank"] == 0.5


def _random_answers(rng):
    answers = {}
    for query in TINY.queries:
        ids = rng.sample([f"doc-0{n}" for n in range(1, 9)], rng.randint(0, 8))
        levels = sorted((rng.choice([3.0, 2.0, 2.0, 1.0, 0.0, -1.5]) for _ in ids), reverse=True)
        answers[query.qid] = Answer(tuple(ids), tuple(levels) if rng.random() < 0.9 else None, 0.0)
    return answers


@pytest.mark.usefixtures("pytrec_eval_required")
@pytest.mark.parametrize("seed", range(25))
def test_trec_eval_scores_the_exported_run_as_the_report_did(tmp_path, seed):
    rng = random.Random(seed)
    result = evaluate_set(TINY, _random_answers(rng), k=10)
    report = Report(provenance=Provenance(harness_version="t", started=None, backend=Backend("t")), sets=(result,))
    notes = write_run(report, tmp_path / "run.txt")
    write_qrels([TINY], tmp_path / "qrels.txt")
    with open(tmp_path / "run.txt") as run_file, open(tmp_path / "qrels.txt") as qrels_file:
        run, qrels = pytrec_eval.parse_run(run_file), pytrec_eval.parse_qrel(qrels_file)
    measures = {"recip_rank": "mrr", "ndcg_cut_10": "ndcg@10", "P_10": "precision@10", "recall_5": "recall@5"}
    trec = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
    for row in result.queries:
        if "recall@10" not in row.metrics or not row.ids:
            continue
        for measure, ours in measures.items():
            assert row.metrics[ours] == pytest.approx(trec[row.qid][measure], abs=1e-12), (seed, row.qid, measure)
    # our own reader gives the adapter's order back too, with the written (real or nudged) scores
    again = read_run(tmp_path / "run.txt")
    for row in result.queries:
        if row.ids:
            assert tuple(trec_eval_order(again[row.qid])) == row.ids
    assert notes.nudged_scores >= 0


@pytest.mark.parametrize("ranking", [False, True], ids=["tied", "ranking"])
def test_a_real_run_with_repeats_records_tied_order_changes_apart(tmp_path, ranking):
    import sys

    import harness
    adapter = [sys.executable, str(FIXTURES / "adapters" / "tied_order.py")]
    report = harness.gate([str(TINY_SET)], backend=adapter + (["--ranking"] if ranking else []), baseline=None,
                          repeats=2, log_path=tmp_path / "adapter.log")
    qids = [f"tiny/{q.qid}" for q in TINY.queries]
    document = report.to_dict()["provenance"]
    if ranking:
        assert document["nondeterministic_queries"] == qids and "tied_order_changed" not in document
    else:
        assert document["tied_order_changed"] == qids and document["nondeterministic_queries"] == []
        assert any(w.startswith("--repeats: 7 queries came back with tied documents") for w in report.warnings)
    assert all(row.tied == 1 and row.ids == ("doc-01", "doc-02", "doc-03") for row in report.sets[0].queries)
