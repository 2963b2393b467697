"""Reports read back by compare and export: a real report passes; each defect is one UsageError line
naming file and field, never a KeyError/TypeError traceback (checked through the real CLI too)."""

import json
import os
import subprocess
import sys

import pytest

from harness.errors import UsageError
from harness.report.document import Report, ReportError
from harness.report.reading import read_document, read_report, report_from_json
from harness.report.views import load_run
from harness.report.trec import run_lines
from tests.conftest import TINY_SET, REPO_ROOT

REPO = REPO_ROOT


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    """A report written by a real run of the bm25 backend over the tiny set."""
    folder = tmp_path_factory.mktemp("run")
    out = folder / "report.json"
    done = subprocess.run([sys.executable, "-m", "harness", "--set", str(TINY_SET), "--no-gate", "--out", str(out),
                           "--quiet"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_a_real_report_and_the_committed_baselines_pass(real_report, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(real_report))
    assert json.loads(read_report(path).to_json()) == real_report
    for name in ("current", "hybrid", "onnx"):
        assert load_run(REPO / "baselines" / f"{name}.json").sets


def _set(document, dotted, value):
    """Set a field by a dotted path like sets.0.queries.1.ids; the value `...` deletes it."""
    keys = [int(k) if k.isdigit() else k for k in dotted.split(".")]
    target = document
    for key in keys[:-1]:
        target = target[key]
    if value is ...:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value


@pytest.mark.parametrize("dotted, value, message", [
    ("sets.0.queries.1.ids", "doc-01", 'sets[0].queries[1].ids: must be a list, got "doc-01"'),
    ("sets.0.queries.1.ids", ["doc-01", 7], "sets[0].queries[1].ids[1]: must be a string, got 7"),
    ("sets.0.queries.1.ids", ["doc-01", "doc-01"], "sets[0].queries[1].ids: repeats a document id"),
    ("sets.0.queries.1.ids", ["doc-01", ""], "sets[0].queries[1].ids: holds an empty document id"),
    ("sets.0.queries.1.qid", ..., "sets[0].queries[1].qid: missing"),
    ("sets.0.queries.1.qid", "tiny-01", 'sets[0].queries[1].qid: "tiny-01" appears twice'),
    ("sets.0.queries.1.scores", [1.0] * 11, "sets[0].queries[1].scores: has 11 entries for"),
    ("sets.0.queries.1.metrics", {"recall@10": "high"}, "sets[0].queries[1].metrics.recall@10: must be a finite number"),
    ("sets.0.queries.1.found", "doc", 'sets[0].queries[1].found: must be a list, got "doc"'),
    ("sets.0.queries.1.scored", 1, "sets[0].queries[1].scored: must be true or false, got 1"),
    ("sets.0.queries.1.outcome", "maybe", 'sets[0].queries[1].outcome: "maybe" is not one of pass, fail, xfail, xpass'),
    ("sets.0.queries", {}, "sets[0].queries: must be a list, got dict"),
    ("sets.0.revision", "1", 'sets[0].revision: must be an integer, got "1"'),
    ("sets.0.aggregates", ..., "sets[0].aggregates: missing"),
    ("sets.0.latency_ms.p95", None, "sets[0].latency_ms.p95: must be a finite number, got null"),
    ("sets", {}, "sets: must be a list, got dict"),
    ("provenance.backend", "bm25", 'provenance.backend: must be an object, got "bm25"'),
    ("provenance.sets.tiny.path", 3, "provenance.sets.tiny.path: must be a string, got 3"),
    ("gates", [{"set": "tiny"}], "gates[0].gate: missing"),
    ("report_format", 3, "report_format: 3 is not a report format this harness reads (1, 2)"),
    ("complete", "yes", 'complete: must be true or false, got "yes"'),
])
def test_each_defect_is_one_line_naming_the_field(real_report, tmp_path, dotted, value, message):
    document = json.loads(json.dumps(real_report))
    _set(document, dotted, value)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document))
    with pytest.raises(UsageError) as caught:
        read_report(path)
    assert str(caught.value).startswith(f"{path}: {message}")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("old, new, why", [
    ('"ids": ["doc-02"', '"ids": ["doc-\\ud800"', "holds a lone surrogate, not text"),
    ('"revision": 1', '"revision": ' + "7" * 400, "not valid strict JSON (an integer of 400 digits is too large)"),
    ('"revision": 1', '"revision": NaN', "not valid strict JSON (NaN is not a JSON number)"),
])
def test_surrogates_huge_integers_and_nan_literals(real_report, tmp_path, old, new, why):
    text = json.dumps(real_report)
    assert old in text
    path = tmp_path / "r.json"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(UsageError) as caught:
        read_report(path)
    assert why in str(caught.value)


def test_not_a_report_at_all(tmp_path):
    for document in ([], {"format": "x"}, {"sets": []}):
        with pytest.raises(UsageError, match="not a retrieval-gate run report"):
            read_document(document, "r.json")
    (tmp_path / "x.json").write_text("[1]")
    with pytest.raises(UsageError, match="neither a retrieval-gate report nor a baseline"):
        load_run(tmp_path / "x.json")
    (tmp_path / "b.json").write_text('{"format": "retrieval-gate-baseline", "version": 1, "sets": {"s": {}}}')
    with pytest.raises(UsageError, match=r"b\.json: sets\.s\.revision: missing"):
        load_run(tmp_path / "b.json")


def test_a_fifo_report_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "r.json")
    code = "import sys; from pathlib import Path; from harness.report.reading import read_report; read_report(Path(sys.argv[1]))"
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r.json")], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert done.returncode != 0 and "r.json: is a FIFO, not a regular file" in done.stderr


def test_export_never_splits_a_string_ids_into_characters(real_report):
    document = json.loads(json.dumps(real_report))
    document["sets"][0]["queries"][0]["ids"] = "doc-01"
    with pytest.raises(UsageError, match=r"sets\[0\].queries\[0\].ids: must be a list, got \"doc-01\""):
        run_lines(read_document(document, "r.json"))
    good = run_lines(read_document(real_report))[0]
    assert all(len(line.split()[2]) > 1 for line in good)


def test_export_of_a_broken_report_through_the_cli_is_exit_2_without_traceback(real_report, tmp_path):
    document = json.loads(json.dumps(real_report))
    del document["sets"][0]["queries"][0]["ids"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document))
    done = subprocess.run([sys.executable, "-m", "harness", "export", str(path), "--trec-run", str(tmp_path / "run.txt")],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1


def test_a_400_digit_number_given_to_from_json_is_a_report_error_not_an_overflow(real_report):
    """report_from_json (a Python caller's reader, json.loads underneath) reaches the field checks
    with the huge integer itself: it must be named there, not crash float() with OverflowError."""
    document = json.loads(json.dumps(real_report))
    document["sets"][0]["latency_ms"]["p95"] = 10 ** 399
    with pytest.raises(ReportError) as caught:
        report_from_json(json.dumps(document), "r.json")
    assert str(caught.value).startswith("r.json: sets[0].latency_ms.p95: must be a finite number, got 1000")
