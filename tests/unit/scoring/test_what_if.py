"""harness.scoring.what_if: metrics with low-scoring hits dropped, by hand on the tiny set (report only)."""

from harness.scoring.evaluate import Answer, evaluate_set
from harness.scoring.what_if import what_if_min_score
from harness.sets.loader import load_set
from tests.conftest import TINY_SET


def test_dropping_hits_below_the_threshold_by_hand():
    tiny = load_set(TINY_SET)
    answers = {q.qid: Answer((), (), 0.001) for q in tiny.queries}
    answers["tiny-01"] = Answer(("doc-01", "doc-02"), (0.9, 0.1), 0.001)  # relevant doc-01 survives 0.5
    answers["tiny-02"] = Answer(("doc-02",), (0.2,), 0.001)              # relevant doc-02 is cut at 0.5
    answers["tiny-03"] = Answer(("doc-03",), None, 0.001)                # no scores: kept, counted
    result = evaluate_set(tiny, answers, 10)
    what_if = what_if_min_score(result, tiny, 0.5)
    # 5 scored queries; recall@10 now: tiny-01 1, tiny-02 1, tiny-03 1, others 0 -> 3/5;
    # after the cut tiny-02 loses its document -> 2/5
    assert what_if["queries"] == 5 and what_if["queries_without_scores"] >= 1
    assert what_if["real_metrics"]["recall@10"] == 3 / 5
    assert what_if["metrics"]["recall@10"] == 2 / 5
    assert what_if["rows_dropped_per_query"]["tiny-01"] == 1 and what_if["rows_dropped_per_query"]["tiny-02"] == 1
