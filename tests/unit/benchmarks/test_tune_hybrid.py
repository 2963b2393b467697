"""benchmarks/tune_hybrid.py, the command a team tunes the hybrid with: bad sets are one line and exit 2, before any
model loads; the choice reads the development split only and never admits a fusion that breaks what both parts keep."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from adapters.fusion import FusionSettings
from benchmarks import tune_hybrid
from harness.records import Query


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if the embedder is built: every check below comes before it."""
    from adapters import onnx_embed

    monkeypatch.setattr(onnx_embed, "build_embedder", lambda args: pytest.fail("the model was loaded"))


def test_an_unknown_set_is_one_line_and_exit_2(no_model, capsys):
    assert tune_hybrid.main(["--set", "no-such-set"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m benchmarks.tune_hybrid: error: set 'no-such-set': no ") and err.count("\n") == 1


@pytest.mark.parametrize("missing", ["held-out", "development"])
def test_a_set_without_one_of_the_splits_is_refused_naming_it(tiny_copy, no_model, capsys, missing):
    queries = tiny_copy / "queries.jsonl"
    kept = "development" if missing == "held-out" else "held-out"
    rows = [json.loads(line) for line in queries.read_text().splitlines()]
    queries.write_text("".join(json.dumps({**row, "split": kept}) + "\n" for row in rows))
    assert tune_hybrid.main(["--set", str(tiny_copy)]) == 2
    err = capsys.readouterr().err
    assert f"set 'tiny': no scored {missing} queries" in err and err.count("\n") == 1


def test_model_options_are_the_adapters_and_checked(capsys):
    with pytest.raises(SystemExit):
        tune_hybrid.main(["--graph", "nonsense"])  # the embedder's own --graph choices
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err


# -- the choice, on rankings built by hand ---------------------------------------------------------------

DOCS = [f"d{i:02d}" for i in range(40)]


def _query(number: int, split: str) -> Query:
    return Query(qid=f"q{number:02d}", query=f"question {number}", relevant={f"d{number:02d}": 1},
                 category="c", split=split, source="synthetic")


def _ranking(answer: str, rank: int | None) -> list[tuple[str, float]]:
    """40 documents best first, the answer at `rank` (1-based; None: absent), scores falling by one a rank."""
    others = [doc for doc in DOCS if doc != answer]
    order = others[:] if rank is None else others[:rank - 1] + [answer] + others[rank - 1:]
    return [(doc, float(40 - position)) for position, doc in enumerate(order[:39])]


def _run(queries: list[Query], lexical_strong: set[str]) -> tune_hybrid.SetRuns:
    """Each query's answer first for one part and 25th for the other: BM25's where `lexical_strong` names it."""
    lexical = [_ranking(q.qid.replace("q", "d"), 1 if q.qid in lexical_strong else 25) for q in queries]
    semantic = [_ranking(q.qid.replace("q", "d"), 25 if q.qid in lexical_strong else 1) for q in queries]
    run = tune_hybrid.SetRuns("synthetic", ("synthetic", "0" * 64), queries, lexical, semantic)
    tune_hybrid.score_grid(run)
    return run


def test_the_choice_reads_the_development_split_only():
    development = [_query(n, "development") for n in range(3)]  # BM25 finds these, the embedder does not
    held_out = [_query(n, "held-out") for n in range(3, 13)]  # and the embedder these ten
    lexical_strong = {q.qid for q in development}
    chosen = tune_hybrid.choose([_run(development + held_out, lexical_strong)])
    assert chosen.weight == 0.0  # the better part on development is BM25, and nothing beats it there
    # held-out queries that favour the other part, or none at all, leave the choice as it was
    flipped = tune_hybrid.choose([_run(development + held_out, lexical_strong | {q.qid for q in held_out})])
    alone = tune_hybrid.choose([_run(development, lexical_strong)])
    assert flipped == chosen == alone
    # the same ten queries on the development split do change it: the check above could fail
    moved = [dataclasses.replace(q, split="development") for q in held_out]
    assert tune_hybrid.choose([_run(development + moved, lexical_strong)]) != chosen


def test_where_recall_ties_a_higher_development_ndcg_shown_by_the_paired_test_decides():
    # every development answer is BM25's 3rd and the embedder's 1st: both parts, and every configuration, find it
    # in the top 10 (URisk 0, recall@10 1), so the rule before nDCG kept BM25 alone (weight 0: the better part on
    # the tie, and `simplicity` prefers it). nDCG@10 asks for the answer first. By hand, the fused score puts the
    # answer above d00 (BM25's 1st, the embedder's 2nd) when, for rrf with a = 1/(k+1), b = 1/(k+2), c = 1/(k+3),
    # (1-w)c + wa > (1-w)a + wb, i.e. w > (a-c)/(2a-b-c): 0.615 at k 2, 0.636 at 5, 0.649 at 10, 0.657 at 20,
    # 0.663 at 60; for minmax and zscore (both lists' scores fall by one a rank) w > 2/3. The first grid weight
    # over a threshold is 0.65 (k 2, 5, 10); of those `simplicity` takes rrf, 20 candidates, k nearest 60: 10.
    development = [_query(n, "development") for n in range(4, 10)]
    lexical = [_ranking(q.qid.replace("q", "d"), 3) for q in development]
    semantic = [_ranking(q.qid.replace("q", "d"), 1) for q in development]
    run = tune_hybrid.SetRuns("synthetic", ("synthetic", "0" * 64), development, lexical, semantic)
    tune_hybrid.score_grid(run)
    assert run.parts["bm25"].recall == run.parts["embedder"].recall == (1.0,) * 6
    assert tune_hybrid.choose([run]) == FusionSettings("rrf", 0.65, 10.0, 20)
    # and the same lists with the answer 1st for both parts: nDCG ties too, so the better part alone stays
    tied = tune_hybrid.SetRuns("synthetic", ("synthetic", "0" * 64), development, semantic, semantic)
    tune_hybrid.score_grid(tied)
    assert tune_hybrid.choose([tied]).weight == 0.0


def test_a_higher_development_ndcg_the_paired_test_cannot_tell_from_noise_keeps_the_better_part_alone():
    # the lists of the test above on one development query of six; on the other five both parts rank the answer
    # 1st. The fusions that put that one answer first have the highest mean nDCG@10 (+0.5 / 6), but one unit
    # of six moved: its sign flipped is as likely (randomization p = 1) and a resample without it has a
    # difference of 0 (probability (5/6)^6 = 0.33 > 0.025), so the choice stays BM25 alone, the simplest.
    development = [_query(n, "development") for n in range(4, 10)]
    semantic = [_ranking(q.qid.replace("q", "d"), 1) for q in development]
    lexical = [_ranking(development[0].qid.replace("q", "d"), 3)] + semantic[1:]
    run = tune_hybrid.SetRuns("synthetic", ("synthetic", "0" * 64), development, lexical, semantic)
    tune_hybrid.score_grid(run)
    sharper = FusionSettings("rrf", 0.65, 10.0, 20)
    assert sum(run.fused[sharper].ndcg) > sum(run.fused[FusionSettings("rrf", 0.0, 60.0, 20)].ndcg)
    assert not tune_hybrid.ranks_answers_higher([run], sharper, FusionSettings("rrf", 0.0, 60.0, 20))
    assert tune_hybrid.choose([run]).weight == 0.0


def test_the_held_out_ceiling_is_reported_beside_a_choice_it_does_not_move():
    from adapters.fusion import fuse

    development = [_query(n, "development") for n in range(3)]  # BM25 finds these, the embedder does not
    held_out = [_query(n, "held-out") for n in range(3, 13)]  # and the embedder these ten
    run = _run(development + held_out, {q.qid for q in development})
    chosen = tune_hybrid.choose([run])
    assert tune_hybrid.held_out_report(run, chosen)["hybrid"] == 0.0  # BM25 alone: no held-out answer in its top 10
    ceiling, best = tune_hybrid.held_out_ceiling(run)
    assert ceiling == 1.0  # a configuration with the embedder's share finds all ten, though the choice found none
    for i, query in enumerate(run.queries):
        if query.split == "held-out":  # checked on the fused lists themselves
            assert query.qid.replace("q", "d") in [doc for doc, _ in fuse(run.lexical[i], run.semantic[i], best)[:10]]


def test_a_larger_held_out_split_is_asked_by_resampling_its_own_differences():
    development = [_query(n, "development") for n in range(3)]  # BM25 finds these, the embedder does not
    held_out = [_query(n, "held-out") for n in range(3, 13)]
    sizes = (10, 40)

    def shares(run, settings):
        return [(no_worse, better) for _, no_worse, better in
                tune_hybrid.held_out_growth(run, settings, sizes, trials=20, resamples=200)]

    # the embedder finds every held-out answer and the choice (BM25 alone) none: every difference is -1
    losing = _run(development + held_out, {q.qid for q in development})
    assert shares(losing, tune_hybrid.choose([losing])) == [(0.0, 0.0)] * 2
    # half the held-out answers are BM25's, half the embedder's: a part finds 0.5, the ceiling's fusion all ten,
    # so every difference against the better part is 0 or +1: each draw is shown no worse, and at 40 queries (about
    # 20 gains; fewer than 10 in 1 draw of 10^3) shown better; at 10 a draw of one or two gains need not be
    mixed = _run(development + held_out, {q.qid for q in development + held_out[:5]})
    ceiling, best = tune_hybrid.held_out_ceiling(mixed)
    assert ceiling == 1.0 and tune_hybrid.held_out_report(mixed, best)["embedder"]["mean"] == 0.5
    (small_no_worse, _), large = shares(mixed, best)
    assert small_no_worse == 1.0 and large == (1.0, 1.0)
    # the better part itself as the "hybrid" (weight 1: the embedder alone, 0: BM25): every query ties, shown no
    # worse and never better
    alone = 1.0 if tune_hybrid.better_part(mixed, "held-out") == "embedder" else 0.0
    assert shares(mixed, dataclasses.replace(best, weight=alone)) == [(1.0, 0.0)] * 2


def test_a_fusion_may_break_only_what_a_part_already_breaks():
    kept = tune_hybrid.Ranked(recall=(1.0, None), broken=(frozenset(), frozenset()))
    broke = tune_hybrid.Ranked(recall=(1.0, None), broken=(frozenset(), frozenset({"no_relevant"})))
    run = tune_hybrid.SetRuns("s", ("s", "0"), [_query(0, "development"), _query(1, "development")], [], [],
                              parts={"bm25": kept, "embedder": kept})
    assert tune_hybrid.keeps_contracts(run, kept, [0, 1])
    assert not tune_hybrid.keeps_contracts(run, broke, [0, 1])  # a negative probe both parts pass
    assert tune_hybrid.keeps_contracts(run, broke, [0])  # a row outside those given is not looked at
    run.parts["embedder"] = broke
    assert tune_hybrid.keeps_contracts(run, broke, [0, 1])  # one part already breaks it


def test_urisk_counts_a_loss_twice():
    base = tune_hybrid.Ranked(recall=(1.0, 0.0, 0.5, None), broken=(frozenset(),) * 4)
    candidate = tune_hybrid.Ranked(recall=(0.0, 1.0, 1.0, None), broken=(frozenset(),) * 4)
    # gains 1 + 0.5, loss 1 counted 2 times, over the 3 scored rows: (1.5 - 2) / 3
    assert tune_hybrid.urisk(candidate, base, [0, 1, 2, 3]) == pytest.approx(-0.5 / 3)
    assert tune_hybrid.urisk(candidate, base, [1]) == 1.0


def test_outcome_scores_as_a_run_does():
    negative = Query(qid="n", query="x", relevant={}, category="negative", split="development", source="s",
                     no_relevant=True, measure_only=True, max_score=0.5)
    xfail = dataclasses.replace(_query(1, "held-out"), forbid=("d02",), xfail=True)
    found = tune_hybrid.outcome([_query(1, "development"), negative, xfail],
                                [[("d09", 0.9), ("d01", 0.8)], [("d05", 0.7)], [("d02", 0.4)]])
    assert found.recall == (1.0, None, None)  # the answer in the top 10; probes are not scored
    assert found.ndcg == pytest.approx((1 / math.log2(3), None, None))  # the one answer 2nd: 1 / log2(2 + 1)
    assert found.broken == (frozenset(), frozenset({"no_relevant"}), frozenset())  # 0.7 >= 0.5; xfail never counts


def test_writing_the_table_replaces_the_kinds_tuned_and_keeps_the_rest(tmp_path):
    from adapters.fusion import read_table
    from harness.errors import UsageError

    table = tmp_path / "table.json"
    old = FusionSettings("rrf", 0.5, 60.0, 20)
    tune_hybrid.write_table(table, {("a", "1" * 64): (["a"], old), ("b", "2" * 64): (["b"], old)})
    new = FusionSettings("zscore", 0.75, 60.0, 50)
    tune_hybrid.write_table(table, {("b", "3" * 64): (["b"], new)})  # b's corpus changed and was re-tuned
    assert read_table(table) == {("a", "1" * 64): old, ("b", "3" * 64): new}
    other = tmp_path / "notes.json"
    other.write_text('{"mine": true}')
    with pytest.raises(UsageError, match="notes.json: format: expected 1; not overwritten"):
        tune_hybrid.write_table(other, {("b", "3" * 64): (["b"], new)})
    assert other.read_text() == '{"mine": true}'
