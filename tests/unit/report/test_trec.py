"""TREC run/qrels export: round trip to the same metrics (through --run-file's reading), trec_eval's own reading, errors."""

import dataclasses
import json

import pytest

from harness.commands import export as export_command
from harness.sets.beir import convert_beir
from harness.errors import UsageError
from harness.report.document import Backend, Provenance, Report, SetSource
from harness.scoring.evaluate import REPORTED_METRICS, Answer, evaluate_set
from harness.scoring.metrics import parse_metric, trec_eval_order
from harness.sets.loader import load_set
from harness.adapter.asking import answers_from_run
from harness.report.trec import write_qrels, write_run
from harness.sets.trec_input import read_run
from tests.conftest import FIXTURES, TINY_SET

try:  # pytrec_eval embeds trec_eval 9.x; optional outside CI (pip install pytrec-eval-terrier).
    import pytrec_eval
except ImportError:
    pytrec_eval = None
needs_trec_eval = pytest.mark.usefixtures("pytrec_eval_required")  # skip, or fail under CI=true

# trec_eval measure -> our reported metric. The run holds at most k = 10 ids per query, so
# recip_rank (no cutoff in trec_eval) is our mrr (cut at 10).
TREC_MEASURES = {"recall_5": "recall@5", "recall_10": "recall@10", "recip_rank": "mrr",
                 "ndcg_cut_10": "ndcg@10", "P_10": "precision@10", "success_10": "hit@10"}

# What the tiny set's backend "returned": one case per way scores can arrive.
TINY_ANSWERS = {
    "tiny-01": (("doc-03", "doc-01", "doc-02"), (3.5, 2.25, 0.5)),  # strictly decreasing: kept
    "tiny-02": (("doc-02", "doc-04"), (1.0, 1.0)),  # a tie (trec_eval would put doc-04 first): 2, 1
    "tiny-03": ((), ()),  # nothing: no run line at all
    "tiny-04": (("doc-05", "doc-01", "doc-04", "doc-06"), None),  # no scores: synthesized 4..1
    "tiny-05": (("doc-08", "doc-07"), (-0.25, -1.5)),  # negative but decreasing: kept
    "tiny-06": (("doc-06",), None),  # xfail, judged
    "tiny-07": (("doc-01",), (0.1,)),  # negative probe, no judgment
}
# The imported BEIR fixture: q1..q4 judged (see tests/unit/sets/test_beir.py).
BEIR_ANSWERS = {
    "q1": (("d4", "d1"), (2.0, 1.0)),
    "q2": (("d3",), None),
    "q3": (("d2", "d5", "d7", "8", "d1", "d3", "d4"), (0.9, 0.8, 0.8, 0.7, 0.6, 0.5, 0.4)),  # a tie
    "q4": (("d2",), None),
}


def _answers(table):
    return {qid: Answer(ids=ids, scores=scores, latency_seconds=0.001) for qid, (ids, scores) in table.items()}


def _report(query_sets_and_answers):
    """A typed report in memory, as a run would produce it, built without an adapter."""
    results = tuple(evaluate_set(s, _answers(table), s.k) for s, table in query_sets_and_answers)
    sources = {s.name: SetSource(s.revision, s.corpus_hash, path=s.path) for s, _ in query_sets_and_answers}
    return Report(provenance=Provenance(harness_version="test", started=None, backend=Backend("test"), sets=sources),
                  sets=results)


@pytest.fixture
def tiny():
    return load_set(TINY_SET)


@pytest.fixture
def two_sets(tmp_path, tiny):
    beir = load_set(convert_beir(FIXTURES / "beir", "bakery", tmp_path / "sets").path)
    return tiny, beir


def test_run_file_lines_keep_adapter_scores_and_nudge_only_a_tie_trec_eval_would_reorder(tmp_path, tiny):
    path = tmp_path / "run.txt"
    notes = write_run(_report([(tiny, TINY_ANSWERS)]), path)
    lines = path.read_text().splitlines()
    assert lines[:3] == ["tiny-01 Q0 doc-03 1 3.5 retrieval-gate", "tiny-01 Q0 doc-01 2 2.25 retrieval-gate",
                         "tiny-01 Q0 doc-02 3 0.5 retrieval-gate"]
    # Tied 1.0, 1.0 with doc-04 > doc-02 (trec_eval would put doc-04 first): the real 1.0 kept for
    # doc-02, doc-04 moved to the next single-precision float below 1.0, 1 - 2**-24 (trec_eval reads floats).
    assert 1 - 2 ** -24 == 0.9999999403953552
    assert lines[3:5] == ["tiny-02 Q0 doc-02 1 1 retrieval-gate", "tiny-02 Q0 doc-04 2 0.9999999403953552 retrieval-gate"]
    # tiny-04 and tiny-06 have no scores (n..1); tiny-02 alone needed a nudge of 1 ulp.
    assert (notes.nudged_queries, notes.nudged_scores, notes.max_ulps, notes.synthetic_queries) == (1, 1, 1, 2)
    assert notes.lines()[0] == ("export: 1 query had tied scores in an order trec_eval would not keep; "
                                "1 score nudged by at most 1 ulp")
    # tiny-03 returned nothing: no line. tiny-04 had no scores: 4, 3, 2, 1.
    assert [line.split()[4] for line in lines if line.startswith("tiny-04 ")] == ["4", "3", "2", "1"]
    assert [line.split()[4] for line in lines if line.startswith("tiny-05 ")] == ["-0.25", "-1.5"]
    assert not any(line.startswith("tiny-03 ") for line in lines)
    # 3 + 2 + 0 + 4 + 2 + 1 + 1 ids in all.
    assert len(lines) == 13


def test_qrels_lines(tmp_path, tiny):
    path = tmp_path / "qrels.txt"
    write_qrels([tiny], path)
    lines = path.read_text().splitlines()
    # One line per relevant judgment of tiny's queries.jsonl, in file order; tiny-07 has none.
    assert lines == ["tiny-01 0 doc-01 1", "tiny-02 0 doc-02 2", "tiny-03 0 doc-03 1", "tiny-04 0 doc-04 2",
                     "tiny-04 0 doc-05 1", "tiny-05 0 doc-07 1", "tiny-06 0 doc-06 1"]


def read_qrels(path):
    """qid -> {docid: grade} of a qrels file, read here: the harness writes qrels, it never reads them."""
    qrels = {}
    for line in path.read_text().splitlines():
        qid, _, doc_id, grade = line.split()
        qrels.setdefault(qid, {})[doc_id] = int(grade)
    return qrels


def _round_trip(tmp_path, report, query_sets):
    write_run(report, tmp_path / "run.txt")
    write_qrels(query_sets, tmp_path / "qrels.txt")
    return read_run(tmp_path / "run.txt"), read_qrels(tmp_path / "qrels.txt")


def _trec_qid(report, set_name, qid):
    return f"{set_name}:{qid}" if len(report.sets) > 1 else qid


@pytest.mark.parametrize("with_beir", [False, True], ids=["one set", "two sets"])
def test_round_trip_recomputes_the_reports_metrics(tmp_path, tiny, two_sets, with_beir):
    pairs = [(tiny, TINY_ANSWERS)] + ([(two_sets[1], BEIR_ANSWERS)] if with_beir else [])
    report = _report(pairs)
    run, qrels = _round_trip(tmp_path, report, [s for s, _ in pairs])
    checked = 0
    for set_report in report.to_dict()["sets"]:
        for row in set_report["queries"]:
            qid = _trec_qid(report, set_report["name"], row["qid"])
            ranked = trec_eval_order(run.get(qid, {}))
            if row["scores"] is None or all(a > b for a, b in zip(row["scores"], row["scores"][1:])):
                assert ranked == row["ids"]  # the order survived the file
            for name in REPORTED_METRICS if "recall@10" in row["metrics"] else ():  # a judged query
                assert parse_metric(name).compute(ranked, qrels[qid]) == row["metrics"][name], (qid, name)
                checked += 1
    assert checked == len(REPORTED_METRICS) * (6 + (4 if with_beir else 0))  # every judged query


def test_run_file_answers_evaluate_to_the_same_report(tmp_path, two_sets):
    # The --run-file path: read_run -> answers_from_run -> evaluate_set gives the report's rows back.
    pairs = [(two_sets[0], TINY_ANSWERS), (two_sets[1], BEIR_ANSWERS)]
    report = _report(pairs)
    run, _ = _round_trip(tmp_path, report, [s for s, _ in pairs])
    for (query_set, _), set_report in zip(pairs, report.to_dict()["sets"]):
        again = evaluate_set(query_set, answers_from_run(run, query_set, query_set.k), query_set.k).to_dict()
        assert [r["metrics"] for r in again["queries"]] == [r["metrics"] for r in set_report["queries"]]
        assert [r["outcome"] for r in again["queries"]] == [r["outcome"] for r in set_report["queries"]]
        assert again["aggregates"] == set_report["aggregates"]


@needs_trec_eval
@pytest.mark.parametrize("with_beir", [False, True], ids=["one set", "two sets"])
def test_trec_eval_reads_our_files_and_agrees(tmp_path, tiny, two_sets, with_beir):
    pairs = [(tiny, TINY_ANSWERS)] + ([(two_sets[1], BEIR_ANSWERS)] if with_beir else [])
    report = _report(pairs)
    write_run(report, tmp_path / "run.txt")
    write_qrels([s for s, _ in pairs], tmp_path / "qrels.txt")
    with open(tmp_path / "run.txt") as run_file, open(tmp_path / "qrels.txt") as qrels_file:
        run, qrels = pytrec_eval.parse_run(run_file), pytrec_eval.parse_qrel(qrels_file)
    trec = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES)).evaluate(run)
    compared = 0
    for set_report in report.to_dict()["sets"]:
        for row in set_report["queries"]:
            qid = _trec_qid(report, set_report["name"], row["qid"])
            if "recall@10" not in row["metrics"]:  # only judged coverage: a negative probe
                assert qid not in trec  # a negative probe has no qrels: trec_eval skips it
                continue
            # A query that returned nothing is absent from the run, so trec_eval skips it (its -c
            # would count it as 0): the report has it at 0 everywhere.
            expected = trec.get(qid, dict.fromkeys(TREC_MEASURES, 0.0))
            for measure, ours in TREC_MEASURES.items():
                assert row["metrics"][ours] == pytest.approx(expected[measure], abs=1e-12), (qid, measure)
                compared += 1
    assert compared == len(TREC_MEASURES) * (6 + (4 if with_beir else 0))
    assert "tiny-03" not in trec and "tiny:tiny-03" not in trec  # the empty answer


@pytest.mark.parametrize("field, value", [("ids", ["doc 01"]), ("qid", "tiny 01"), ("ids", [""])])
def test_ids_the_format_cannot_hold_are_refused(tmp_path, tiny, field, value):
    report = _report([(tiny, {"tiny-01": (("doc-01",), None)})])
    row = report.sets[0].queries[0]
    row = dataclasses.replace(row, **{field: tuple(value) if field == "ids" else value})
    report = dataclasses.replace(report, sets=(dataclasses.replace(report.sets[0], queries=(row,)),))
    with pytest.raises(UsageError, match="empty or contains whitespace"):
        write_run(report, tmp_path / "run.txt")
    assert not (tmp_path / "run.txt").exists()


def test_run_tag_must_be_one_token(tmp_path, tiny):
    with pytest.raises(UsageError, match="run tag: 'my run'"):
        write_run(_report([(tiny, TINY_ANSWERS)]), tmp_path / "run.txt", run_tag="my run")


# ---------------------------------------------------------------- export command

def _write_report(tmp_path, pairs):
    path = tmp_path / "report.json"
    path.write_text(_report(pairs).to_json())
    return path


def test_export_writes_both_files_with_set_prefixes(tmp_path, two_sets, capsys):
    report = _write_report(tmp_path, [(two_sets[0], TINY_ANSWERS), (two_sets[1], BEIR_ANSWERS)])
    run_path, qrels_path = tmp_path / "out" / "run.txt", tmp_path / "out" / "qrels.txt"
    assert export_command.main([str(report), "--trec-run", str(run_path), "--trec-qrels", str(qrels_path),
                                "--run-tag", "bm25"]) == 0
    out = capsys.readouterr().out
    # 13 tiny ids + 2 + 1 + 7 + 1 bakery ids; 7 tiny + 4 bakery queries; 7 + 5 judgments in 6 + 4 queries.
    assert f"run: {run_path} (24 lines, 11 queries; qids as SET:QID)" in out
    assert f"qrels: {qrels_path} (12 judgments, 10 judged queries; qids as SET:QID)" in out
    assert run_path.read_text().splitlines()[0] == "tiny:tiny-01 Q0 doc-03 1 3.5 bm25"
    assert sorted(read_qrels(qrels_path)) == sorted([f"tiny:tiny-0{i}" for i in range(1, 7)]
                                                    + [f"bakery:q{i}" for i in range(1, 5)])


@needs_trec_eval
def test_export_scored_only_makes_trec_eval_means_the_reports_aggregates(tmp_path, tiny):
    report_path = _write_report(tmp_path, [(tiny, TINY_ANSWERS)])
    report = json.loads(report_path.read_text())
    run_path, qrels_path = tmp_path / "run.txt", tmp_path / "qrels.txt"
    assert export_command.main([str(report_path), "--trec-run", str(run_path), "--trec-qrels", str(qrels_path),
                                "--scored-only"]) == 0
    with open(run_path) as run_file, open(qrels_path) as qrels_file:
        run, qrels = pytrec_eval.parse_run(run_file), pytrec_eval.parse_qrel(qrels_file)
    assert sorted(qrels) == ["tiny-01", "tiny-02", "tiny-03", "tiny-04", "tiny-05"]  # no xfail, no probe
    trec = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES)).evaluate(run)
    overall = report["sets"][0]["aggregates"]["overall"]
    for measure, ours in TREC_MEASURES.items():
        # trec_eval -c: the mean over every judged query, 0 for one absent from the run (tiny-03).
        mean = sum(trec.get(qid, {}).get(measure, 0.0) for qid in qrels) / len(qrels)
        assert overall[ours] == pytest.approx(mean, abs=1e-12), measure


def test_export_needs_an_output(tmp_path, tiny):
    with pytest.raises(UsageError, match="give --trec-run PATH, --trec-qrels PATH or both"):
        export_command.main([str(_write_report(tmp_path, [(tiny, TINY_ANSWERS)]))])


def test_export_refuses_an_incomplete_report(tmp_path, tiny):
    path = _write_report(tmp_path, [(tiny, TINY_ANSWERS)])
    path.write_text(path.read_text().replace('"complete": true', '"complete": false', 1))
    with pytest.raises(UsageError, match="incomplete run"):
        export_command.main([str(path), "--trec-run", str(tmp_path / "run.txt")])
    assert not (tmp_path / "run.txt").exists()


def test_export_refuses_a_shard_report_alone(tmp_path, tiny):
    path = _write_report(tmp_path, [(tiny, TINY_ANSWERS)])
    shard = json.loads(path.read_text())
    shard["provenance"]["shard"] = {"index": 1, "count": 2, "sets": {}}
    path.write_text(json.dumps(shard))
    with pytest.raises(UsageError, match=r"a shard report \(1/2\) holds part of each set; merge the shards first"):
        export_command.main([str(path), "--trec-run", str(tmp_path / "run.txt")])
    assert not (tmp_path / "run.txt").exists()


def test_export_refuses_qrels_from_a_changed_set(tmp_path, tiny_copy):
    query_set = load_set(tiny_copy)
    path = _write_report(tmp_path, [(query_set, TINY_ANSWERS)])
    meta = json.loads((tiny_copy / "set.json").read_text())
    (tiny_copy / "set.json").write_text(json.dumps(dict(meta, revision=2)))
    with pytest.raises(UsageError, match="set tiny: revision is 1 in the report but 2 in"):
        export_command.main([str(path), "--trec-qrels", str(tmp_path / "qrels.txt")])
    assert not (tmp_path / "qrels.txt").exists()


def test_export_finds_a_moved_set_under_sets_dir(tmp_path, tiny_copy):
    report = _report([(load_set(tiny_copy), TINY_ANSWERS)])
    moved = dataclasses.replace(report.provenance.sets["tiny"], path=str(tmp_path / "gone"))
    report = dataclasses.replace(report, provenance=dataclasses.replace(report.provenance, sets={"tiny": moved}))
    path = tmp_path / "report.json"
    path.write_text(report.to_json())
    with pytest.raises(UsageError, match="set tiny: no set.json at"):
        export_command.main([str(path), "--trec-qrels", str(tmp_path / "q.txt")])
    assert export_command.main([str(path), "--trec-qrels", str(tmp_path / "q.txt"),
                                "--sets-dir", str(tiny_copy.parent)]) == 0
    assert len(read_qrels(tmp_path / "q.txt")) == 6


def test_export_warns_about_unscored_queries_and_says_what_it_nudged(tmp_path, tiny, capsys):
    report = _write_report(tmp_path, [(tiny, TINY_ANSWERS)])
    assert export_command.main([str(report), "--trec-run", str(tmp_path / "run.txt")]) == 0
    captured = capsys.readouterr()
    # tiny-06 is xfail, tiny-07 a measure_only negative probe: both left out of the report's aggregates
    assert captured.err == ("harness: warning: export: 2 queries written that the report's aggregates leave out "
                            "(xfail, measure_only or negative probes: tiny-06, tiny-07); trec_eval averages judged "
                            "ones in, so its means differ from the report's; give --scored-only to leave them out\n")
    assert ("export: 1 query had tied scores in an order trec_eval would not keep; 1 score nudged by at most 1 ulp"
            in captured.out)
    assert export_command.main([str(report), "--trec-run", str(tmp_path / "run.txt"), "--scored-only"]) == 0
    assert capsys.readouterr().err == ""
