"""Every measure family, at many cutoffs, condensed or not, at two relevance levels, equals trec_eval (pytrec_eval) to 1e-9.

Runs are generated from fixed seeds: ties in the scores, grade-0 judgments, graded relevance,
negative grades (trec_eval: in the pool, unjudged), queries with nothing retrieved, and
rankings of 1 to 1,000 documents. The map from our measures to trec_eval's is typed here,
independently of the registry's own trec_eval spellings.
"""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.scoring.metrics import (RANKING_FAMILIES, compute_from_scores, compute_many, make_measure,
                                     parse_metric)
from harness.scoring.metrics import trec_eval_order as metrics_trec_eval_order

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec_eval not installed: pip install pytrec-eval-terrier")

TOLERANCE = 1e-9
CUTOFFS = (1, 2, 3, 5, 10, 20, 100, 1000)
LEVELS = (1, 2)

# Our family -> trec_eval's measure at a cutoff (STEM_k) and at full depth. None: trec_eval
# has no such measure; our FAMILY@k is then trec_eval's full-depth measure on the run cut
# at k (`trec_eval -M k`). judged is trec_eval's P_k on qrels where every judged document
# (grade >= 0) is made relevant.
TREC_CUT = {"precision": "P", "recall": "recall", "hit": "success", "ndcg": "ndcg_cut", "ap": "map_cut",
            "judged": "P"}
TREC_FULL = {"ndcg": "ndcg", "ap": "map", "rr": "recip_rank", "rprec": "Rprec", "bpref": "bpref"}


def every_measure():
    """Each family at each cutoff (and at full depth where it allows it), plain and condensed, rel 1 and 2."""
    measures = []
    for family in RANKING_FAMILIES.values():
        cutoffs = CUTOFFS if family.cutoff_required else (None, *CUTOFFS)
        levels = LEVELS if family.takes_relevance_level else (1,)
        for cutoff in cutoffs:
            for condensed in (False, True):
                for level in levels:
                    measures.append(make_measure(family.name, cutoff, condensed=condensed, relevance_level=level))
    return measures


def generated_queries(seed, count, tied, near_tied=False):
    """[(qid, {doc: score}, {doc: grade})]; scores strictly decreasing unless `tied`.

    `near_tied`: scores distinct as doubles but many equal in single precision, which is
    how trec_eval (and pytrec_eval) compare them.
    """
    rng = random.Random(seed)
    queries = []
    for number in range(count):
        shape = rng.random()
        length = (0 if shape < 0.06 else rng.randint(1, 12) if shape < 0.4
                  else rng.randint(13, 150) if shape < 0.85 else rng.randint(151, 1000))
        pool = [f"d{index:04d}" for index in range(length + rng.randint(1, 40))]
        retrieved = rng.sample(pool, length)
        if tied:  # few distinct scores: many ties, broken by trec_eval on docno, descending
            scores = {doc: float(rng.randint(0, max(1, length // 4))) for doc in retrieved}
        elif near_tied:  # 1 + i * 1e-9 are distinct doubles, one float (its ulp at 1 is 1.2e-7)
            scores = {doc: rng.randint(1, 4) + position * 1e-9 for position, doc in enumerate(retrieved)}
        else:
            scores = {doc: float(length - position) for position, doc in enumerate(retrieved)}
        judged_share = rng.choice((0.05, 0.3, 0.7, 1.0))
        grades = {doc: rng.choice((-1, 0, 0, 0, 1, 1, 2, 3, 4)) for doc in pool if rng.random() < judged_share}
        if all(grade < 0 for grade in grades.values()):
            # pytrec_eval drops a query without qrels, and never returned on one whose every
            # judgment is negative (test_only_negative_judgments_score_zero).
            grades[rng.choice(pool)] = rng.choice((0, 1, 2))
        queries.append((f"q{number}", scores, grades))
    return queries


def single(score):
    """The score as trec_eval's `float sim` holds it."""
    return struct.unpack("<f", struct.pack("<f", score))[0]


def trec_eval_order(scores):
    """The ranking trec_eval reads from scores: score descending in single precision, then docno descending."""
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: (single(item[1]), item[0]), reverse=True)]


def run_cut(ranked, grades, cutoff, condensed):
    """The run prefix trec_eval -M cutoff (-J: up to the cutoff-th judged document) would read."""
    if cutoff is None:
        return ranked
    if not condensed:
        return ranked[:cutoff]
    judged_seen = 0
    for position, doc in enumerate(ranked):
        judged_seen += grades.get(doc, -1) >= 0
        if judged_seen == cutoff:
            return ranked[:position + 1]
    return ranked


def trec_eval_values(queries, measures):
    """{(qid, measure name): trec_eval's value}, one pytrec_eval evaluator per (level, -J, qrels kind)."""
    requests: dict[tuple, dict] = {}  # (level, condensed, judged qrels) -> {pseudo qid: (run, qrels)}
    wanted = []
    for qid, scores, grades in queries:
        ranked = trec_eval_order(scores)
        for measure in measures:
            family, cutoff = measure.family, measure.cutoff
            level = measure.relevance_level
            qrels = grades
            if family == "judged":
                qrels = {doc: 1 if grade >= 0 else grade for doc, grade in grades.items()}
            if cutoff is not None and family in TREC_CUT:
                trec_name, pseudo, prefix = f"{TREC_CUT[family]}_{cutoff}", f"{qid}/full", ranked
            else:
                trec_name = TREC_FULL[family]
                prefix = run_cut(ranked, grades, cutoff, measure.condensed)
                pseudo = f"{qid}/{len(prefix)}"
            key = (level, measure.condensed, family == "judged")
            # trec_eval caches a query's ranking by its id across calls: no id in two evaluators.
            pseudo = f"{pseudo}/{level}/{measure.condensed:d}/{family == 'judged':d}"
            requests.setdefault(key, {})[pseudo] = ({doc: scores[doc] for doc in prefix}, qrels)
            wanted.append((qid, measure.name, key, pseudo, trec_name))
    trec_measures = {"P.1,2,3,5,10,20,100,1000", "recall.1,2,3,5,10,20,100,1000",
                     "success.1,2,3,5,10,20,100,1000", "ndcg_cut.1,2,3,5,10,20,100,1000",
                     "map_cut.1,2,3,5,10,20,100,1000", "ndcg", "map", "recip_rank", "Rprec", "bpref"}
    results = {}
    for (level, condensed, judged_qrels), pseudo_queries in requests.items():
        evaluator = pytrec_eval.RelevanceEvaluator({q: qrels for q, (_, qrels) in pseudo_queries.items()},
                                                   trec_measures, relevance_level=level,
                                                   judged_docs_only_flag=condensed)
        results[(level, condensed, judged_qrels)] = evaluator.evaluate(
            {q: run for q, (run, _) in pseudo_queries.items()})
    return {(qid, name): results[key][pseudo][trec_name] for qid, name, key, pseudo, trec_name in wanted}


def assert_equal_to_trec_eval(queries):
    measures = every_measure()
    expected = trec_eval_values(queries, measures)
    checked = set()
    for qid, scores, grades in queries:
        ours = compute_many(measures, trec_eval_order(scores), grades)
        from_scores = compute_from_scores(measures, scores, grades)  # the same, without the order
        for measure in measures:
            assert ours[measure.name] == pytest.approx(expected[(qid, measure.name)], abs=TOLERANCE), \
                (qid, measure.name, trec_eval_order(scores)[:20], grades)
            assert from_scores[measure.name] == pytest.approx(expected[(qid, measure.name)], abs=TOLERANCE), \
                ("from scores", qid, measure.name, trec_eval_order(scores)[:20], grades)
            checked.add(measure.family)
    assert checked == set(RANKING_FAMILIES)  # every registered family was proven


def test_every_family_equals_trec_eval_on_strictly_decreasing_scores():
    assert_equal_to_trec_eval(generated_queries(seed=14, count=120, tied=False))


def test_tied_scores_in_trec_evals_order_give_trec_evals_values():
    # trec_eval breaks ties by docno, descending; we take the list in that order.
    assert_equal_to_trec_eval(generated_queries(seed=41, count=80, tied=True))


def test_scores_equal_in_single_precision_are_ties_to_trec_eval():
    # The doubles differ below a float's resolution: trec_eval sees a tie, broken by docno.
    assert_equal_to_trec_eval(generated_queries(seed=7, count=60, tied=False, near_tied=True))


def test_a_near_tie_is_ordered_by_docno_as_pytrec_eval_orders_it():
    # By hand: "a" scores higher as a double, but as floats the two tie and "b" > "a" comes first.
    scores, grades = {"a": 1.0 + 1e-9, "b": 1.0}, {"a": 1, "b": 0}
    assert metrics_trec_eval_order(scores) == ["b", "a"]
    assert compute_from_scores(("rr",), scores, grades) == {"rr": 0.5}
    trec = pytrec_eval.RelevanceEvaluator({"q": grades}, {"recip_rank"}).evaluate({"q": scores})
    assert trec["q"]["recip_rank"] == 0.5


@pytest.mark.parametrize("names", [("ndcg@10", "precision@5"), ("recall@3",), ("ap@100", "bpref@20", "rr@2"),
                                   ("ndcg@5(condensed)", "judged@10")])
def test_from_scores_reads_only_the_depth_its_measures_need_and_agrees(names):
    # Cut measures only: the plan reads the top `depth`; judged documents below it drop out.
    measures = tuple(parse_metric(name) for name in names)
    queries = generated_queries(seed=3, count=80, tied=False) + generated_queries(seed=4, count=40, tied=True)
    for _, scores, grades in queries:
        assert compute_from_scores(measures, scores, grades) == compute_many(measures, trec_eval_order(scores), grades)


def test_only_negative_judgments_score_zero():
    # pytrec_eval never returned on such a query when asked for all ten trec_eval measures at
    # once (trec_eval sizes its per-grade counts by the highest grade, here negative). Ours: 0.
    values = compute_many(every_measure(), ["a", "b", "c"], {"a": -1, "z": -1})
    assert set(values.values()) == {0.0}


def test_the_generated_runs_cover_the_edge_cases():
    queries = generated_queries(seed=14, count=120, tied=False) + generated_queries(seed=41, count=80, tied=True)
    lengths = [len(scores) for _, scores, _ in queries]
    grades = [grade for _, _, judged in queries for grade in judged.values()]
    assert 0 in lengths and 1 in lengths and max(lengths) > 900
    assert {-1, 0, 1, 2, 3, 4} <= set(grades)
    assert any(all(g < 1 for g in judged.values()) for _, _, judged in queries)  # nothing relevant
    ties = sum(len(scores) - len(set(scores.values())) for _, scores, _ in queries[120:])
    assert ties > 1000


def test_trec_eval_order_breaks_ties_by_docno_descending():
    for _, scores, _ in (generated_queries(seed=41, count=80, tied=True) + generated_queries(seed=5, count=20, tied=False)
                         + generated_queries(seed=6, count=20, tied=False, near_tied=True)):
        assert metrics_trec_eval_order(scores) == trec_eval_order(scores)
    assert metrics_trec_eval_order({"b": 1.0, "a": 1.0, "c": 2.0, "d": 0.5}) == ["c", "b", "a", "d"]


def test_names_in_trec_eval_spelling_mean_the_trec_eval_measure():
    # One query, checked through the trec_eval spellings themselves.
    scores = {"a": 6.0, "x": 5.0, "b": 4.0, "e": 3.0, "c": 2.0, "d": 1.0}
    grades = {"a": 1, "b": 2, "c": 0, "d": 3, "e": -1, "f": 1}
    names = ["P_5", "recall_2", "success_1", "ndcg_cut_3", "map_cut_2", "ndcg", "map", "recip_rank", "Rprec", "bpref"]
    trec = pytrec_eval.RelevanceEvaluator({"q": grades}, set(names)).evaluate({"q": scores})["q"]
    ranked = trec_eval_order(scores)
    for name in names:
        assert parse_metric(name).compute(ranked, grades) == pytest.approx(trec[name], abs=TOLERANCE), name


DOC_IDS = [f"d{index:02d}" for index in range(30)]


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(st.sampled_from(DOC_IDS), unique=True, max_size=30),
       st.dictionaries(st.sampled_from(DOC_IDS), st.integers(min_value=-1, max_value=4), min_size=1, max_size=30),
       st.lists(st.integers(min_value=0, max_value=3), min_size=30, max_size=30), st.booleans())
def test_small_generated_runs_equal_trec_eval(ranked, grades, tie_scores, tied):
    # Small runs find the corners (R above the run length, nothing judged retrieved, ...).
    if tied:
        scores = {doc: float(tie_scores[index]) for index, doc in enumerate(ranked)}
    else:
        scores = {doc: float(len(ranked) - index) for index, doc in enumerate(ranked)}
    assume(any(grade >= 0 for grade in grades.values()))  # see trec_eval's hang, above
    assert_equal_to_trec_eval([("q", scores, grades)])
