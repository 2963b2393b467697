"""Our ir_measures spellings mean what ir_measures means (where ir_measures has the measure); skipped without ir_measures."""

from __future__ import annotations

import random

import pytest

from harness.scoring.metrics import FAMILIES, RANKING_FAMILIES, compute_many, make_measure, parse_metric
from tests.builders import ir_measures_name

ir_measures = pytest.importorskip("ir_measures", reason="ir_measures not installed (the bench extra)")

# What ir_measures itself does not take: a cutoff on Rprec and Bpref, judged_only on Bpref
# and Judged (ours: the measure on the ranking cut at k; on the condensed ranking).
UNSUPPORTED = {("rprec", "cutoff"), ("bpref", "cutoff"), ("bpref", "condensed"), ("judged", "condensed")}


def supported_measures():
    for family in RANKING_FAMILIES.values():
        for cutoff in ((5, 10) if family.cutoff_required else (None, 5)):
            for condensed in (False, True):
                for level in ((1, 2) if family.takes_relevance_level else (1,)):
                    if cutoff is not None and (family.name, "cutoff") in UNSUPPORTED:
                        continue
                    if condensed and (family.name, "condensed") in UNSUPPORTED:
                        continue
                    yield make_measure(family.name, cutoff, condensed=condensed, relevance_level=level)


def test_every_ir_measures_spelling_parses_in_ir_measures_and_back():
    for measure in supported_measures():
        if FAMILIES[measure.family].ir_measures_differs:
            continue  # refused by design: see the next test
        theirs = ir_measures.parse_measure(ir_measures_name(measure))
        assert parse_metric(str(theirs)) == measure, measure.name


def test_ir_measures_judged_is_another_number_which_is_why_its_spelling_is_refused():
    """docs/sets.md, "Which trec_eval the measures follow": on a run shorter than k, and with a negative grade, ir_measures' Judged@10 and our
    judged@10 part: ir_measures divides by the 4 retrieved and counts the -1 as judged."""
    qrels = {"q": {"a": 1, "x": -1, "b": 0}}
    run = {"q": {"a": 4.0, "x": 3.0, "b": 2.0, "zz": 1.0}}
    theirs = next(ir_measures.iter_calc([ir_measures.parse_measure("Judged@10")], qrels, run)).value
    ours = parse_metric("judged@10").compute(list(run["q"]), qrels["q"])
    assert (theirs, ours) == (3 / 4, 2 / 10)
    with pytest.raises(ValueError, match="ir_measures' Judged@k divides by the number retrieved"):
        parse_metric("Judged@10")


def test_values_equal_ir_measures_on_runs_that_fill_k_and_grades_zero_and_up():
    # Judged is ir_measures' own code (not trec_eval's); its corners differ (see judged's docstring).
    rng = random.Random(7)
    qrels, run = {}, {}
    for number in range(40):
        pool = [f"d{index}" for index in range(40)]
        retrieved = rng.sample(pool, 20)
        run[f"q{number}"] = {doc: float(20 - position) for position, doc in enumerate(retrieved)}
        qrels[f"q{number}"] = {doc: rng.choice((0, 1, 2, 3)) for doc in pool if rng.random() < 0.4} or {"d0": 1}
    measures, theirs = [], {}
    for measure in supported_measures():
        try:  # ir_measures parses some measures none of its providers computes, e.g. RR(judged_only=True)@5
            rows = list(ir_measures.iter_calc([ir_measures.parse_measure(ir_measures_name(measure))], qrels, run))
        except ValueError as exc:
            assert "Unsupported measures" in str(exc)
            continue
        measures.append(measure)
        theirs.update({(row.query_id, measure.name): row.value for row in rows})
    assert {measure.family for measure in measures} == set(RANKING_FAMILIES) and len(measures) >= 40
    for qid, scores in run.items():
        ours = compute_many(measures, list(scores), qrels[qid])
        for measure in measures:
            assert ours[measure.name] == pytest.approx(theirs[(qid, measure.name)], abs=1e-9), (qid, measure.name)
