"""`--run-file`'s answers (harness/adapter/asking.py `answers_from_run`): trec_eval's order of the run's scores,
either qid spelling, cut at k, checked against trec_eval itself (pytrec_eval)."""

import pytest

from harness.adapter.asking import answers_from_run
from harness.scoring.evaluate import Answer
from harness.sets.loader import load_set
from harness.sets.trec_input import read_run
from tests.conftest import TINY_SET

try:  # pytrec_eval embeds trec_eval 9.x; optional outside CI (pip install pytrec-eval-terrier).
    import pytrec_eval
except ImportError:
    pytrec_eval = None


def _ranking(scores):
    """The ids answers_from_run gives a one-query run (query tiny-01 of the tiny set)."""
    return list(answers_from_run({"tiny-01": scores}, load_set(TINY_SET), k=100)["tiny-01"].ids)


def test_tie_order_is_score_then_docno_descending(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("tiny-01 Q0 d-a 1 1.0 t\ntiny-01 Q0 d-c 2 2 t\ntiny-01 Q0 d-b 3 1.0 t\n"
                    "tiny-01 Q0 d-z 4 1 t\ntiny-01 Q0 d-x 5 10 t\ntiny-01 Q0 d-y 6 9.5 t\n")
    # Numbers compare as numbers (10 > 9.5 > 2), ties by docno descending (z > b > a); the rank
    # column (here in file order) is ignored, as trec_eval ignores it.
    assert _ranking(read_run(path)["tiny-01"]) == ["d-x", "d-y", "d-c", "d-z", "d-b", "d-a"]


@pytest.mark.usefixtures("pytrec_eval_required")
def test_tie_order_matches_trec_eval(tmp_path):
    # trec_eval itself: with only d-b relevant among tied d-a, d-b, d-z behind d-c, its
    # recip_rank is 1 / (position of d-b in its order); ours must put d-b at that position.
    path = tmp_path / "run.txt"
    path.write_text("q Q0 d-a 1 1.0 t\nq Q0 d-c 2 2 t\nq Q0 d-b 3 1.0 t\nq Q0 d-z 4 1 t\n")
    with open(path) as handle:
        run = pytrec_eval.parse_run(handle)
    ours = _ranking(read_run(path)["q"])
    for relevant in ("d-a", "d-b", "d-c", "d-z"):
        trec = pytrec_eval.RelevanceEvaluator({"q": {relevant: 1}}, {"recip_rank"}).evaluate(run)["q"]
        assert 1 / (ours.index(relevant) + 1) == pytest.approx(trec["recip_rank"]), relevant


def test_answers_take_either_spelling_cut_at_k_and_every_query_gets_one():
    tiny = load_set(TINY_SET)
    run = {"tiny:tiny-01": {"doc-01": 2.0, "doc-02": 1.0}, "tiny-02": {"doc-02": 5.0},
           "tiny-01": {"doc-08": 9.0}, "other:x": {"doc-01": 1.0}}
    answers = answers_from_run(run, tiny, k=1)
    assert set(answers) == {q.qid for q in tiny.queries}
    assert answers["tiny-01"] == Answer(ids=("doc-01",), scores=(2.0,), latency_seconds=0.0)  # prefixed wins, cut at k
    assert answers["tiny-02"] == Answer(ids=("doc-02",), scores=(5.0,), latency_seconds=0.0)
    assert answers["tiny-03"] == Answer(ids=(), scores=(), latency_seconds=0.0)
