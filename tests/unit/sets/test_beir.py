"""BEIR folder -> format-1 set: what is kept, skipped and dropped; the result loads; nothing is overwritten."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import harness.sets.beir
from harness.sets.beir import convert_beir
from harness.errors import SetError, UsageError
from harness.sets.loader import load_set
from tests.conftest import FIXTURES

BEIR = FIXTURES / "beir"


@pytest.fixture
def beir_copy(tmp_path: Path) -> Path:
    """A writable copy of the BEIR fixture, at tmp_path/beir."""
    target = tmp_path / "beir"
    shutil.copytree(BEIR, target)
    return target


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_import_then_load_set(tmp_path):
    result = convert_beir(BEIR, "bakery", tmp_path / "sets")
    assert result.path == tmp_path / "sets" / "bakery"
    query_set = load_set(result.path)  # pins, ids and fields all valid
    # Hand count from the fixture: d6 has neither title nor text (skipped); q1..q4 keep a
    # relevant judgment; q5 only has grade 0 and q6 only dev judgments (skipped). Rows dropped:
    # q1-d4 and q5-d7 (grade 0), q2-d6 (skipped document) and q4-d404 (not in the corpus).
    assert (result.documents, result.queries, result.judgments) == (7, 4, 5)
    assert (result.skipped_documents, result.skipped_queries) == (1, 2)
    assert (result.dropped_nonrelevant, result.dropped_unknown_documents) == (2, 2)
    assert [d.id for d in query_set.documents] == ["d1", "d2", "d3", "d4", "d5", "d7", "8"]  # int _id 8 -> "8"
    assert [(q.qid, q.relevant) for q in query_set.queries] == [
        ("q1", {"d1": 2}), ("q2", {"d3": 1}), ("q3", {"d4": 2, "d1": 1}), ("q4", {"d5": 1})]
    assert {(q.category, q.split, q.source) for q in query_set.queries} == {("beir", "held-out", "beir")}
    assert query_set.queries[0].query == "how often do you feed a sourdough starter"
    assert (query_set.name, query_set.kind, query_set.revision, query_set.k) == ("bakery", "bakery", 1, 10)
    assert result.summary() in query_set.description


def test_title_is_kept_and_prefixed_to_the_text(tmp_path):
    path = convert_beir(BEIR, "bakery", tmp_path).path
    rows = {row["id"]: row for row in map(json.loads, (path / "corpus.jsonl").read_text().splitlines())}
    d1_text = "Sourdough starter\n\nFeed the starter twice a day with equal weights of rye flour and water."
    assert rows["d1"] == {"id": "d1", "title": "Sourdough starter", "text": d1_text}
    assert rows["d2"] == {"id": "d2", "text": "The mill on Lantern Street grinds spelt every Thursday morning."}
    # Pins are the sha256 of the text as written, computed here independently.
    pins = json.loads((path / "set.json").read_text())["pins"]
    assert pins == {doc_id: _sha(rows[doc_id]["text"]) for doc_id in ("d1", "d3", "d4", "d5")}


def test_other_split_is_development(tmp_path):
    query_set = load_set(convert_beir(BEIR, "bakery-dev", tmp_path, split_name="dev").path)
    assert [(q.qid, q.relevant, q.split) for q in query_set.queries] == [("q6", {"8": 1}, "development")]


def test_refuses_to_overwrite_and_leaves_the_folder_alone(tmp_path):
    mine = tmp_path / "sets" / "bakery"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="already exists; choose another --name"):
        convert_beir(BEIR, "bakery", tmp_path / "sets")
    assert [p.name for p in (tmp_path / "sets").iterdir()] == ["bakery"]
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and (mine / "notes.txt").read_text() == "mine"


def test_a_failure_while_writing_leaves_nothing_behind(tmp_path, monkeypatch):
    def broken_load(folder, **_):
        raise SetError("simulated")
    monkeypatch.setattr(harness.sets.beir, "load_set", broken_load)
    with pytest.raises(SetError, match="simulated"):
        convert_beir(BEIR, "bakery", tmp_path)
    assert list(tmp_path.iterdir()) == []  # neither the set nor the staging folder


@pytest.mark.parametrize("name", ["", "../up", "a/b", ".hidden", "sp ace"])
def test_set_names_must_be_plain(tmp_path, name):
    with pytest.raises(UsageError, match="--name:"):
        convert_beir(BEIR, name, tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("file, edit, message", [
    ("qrels/test.tsv", lambda t: t.split("\n", 1)[1],
     "beir/qrels/test.tsv:1: expected the header 'query-id\\tcorpus-id\\tscore' (tab-separated) as the first line"),
    ("qrels/test.tsv", lambda t: t + "q1\td2\n", "beir/qrels/test.tsv:11: expected 3 tab-separated fields"),
    ("qrels/test.tsv", lambda t: t + "q1\td2\tyes\n", "beir/qrels/test.tsv:11: score: 'yes' is not an integer"),
    ("qrels/test.tsv", lambda t: t + "q9\td2\t1\n", "beir/qrels/test.tsv:11: query-id: 'q9' is not in queries.jsonl"),
    ("qrels/test.tsv", lambda t: t + "q1\td1\t1\n",
     "beir/qrels/test.tsv:11: corpus-id: 'd1' already judged for query 'q1' on line 2"),
    ("qrels/test.tsv", lambda t: "", "beir/qrels/test.tsv: empty"),
    ("corpus.jsonl", lambda t: t + '{"_id": "d1", "text": "again"}\n', "beir/corpus.jsonl:9: _id: 'd1' appears twice"),
    ("corpus.jsonl", lambda t: t + '{"_id": "d6", "text": ""}\n', "beir/corpus.jsonl:9: _id: 'd6' appears twice"),
    ("corpus.jsonl", lambda t: t + '{"title": "x", "text": "no id"}\n', "beir/corpus.jsonl:9: _id: must be a non-empty"),
    ("corpus.jsonl", lambda t: t + '{"_id": "d9", "text": 5}\n', "beir/corpus.jsonl:9: text: must be a string"),
    ("corpus.jsonl", lambda t: t + "{not json\n", "beir/corpus.jsonl:9: not valid JSON"),
    ("queries.jsonl", lambda t: t + '{"_id": "q1", "text": "dup"}\n', "beir/queries.jsonl:7: _id: 'q1' already used on line 1"),
    ("queries.jsonl", lambda t: t + '{"_id": "q7", "text": " "}\n', "beir/queries.jsonl:7: text: must be a non-empty"),
])
def test_malformed_beir_files_name_file_line_and_field(tmp_path, monkeypatch, beir_copy, file, edit, message):
    monkeypatch.chdir(tmp_path)
    path = beir_copy / file
    path.write_text(edit(path.read_text()))
    with pytest.raises(SetError) as error:
        convert_beir(Path("beir"), "bakery", tmp_path / "sets")
    assert str(error.value).startswith(message)
    assert not (tmp_path / "sets" / "bakery").exists()


def test_missing_qrels_split_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"qrels/train\.tsv: missing; a BEIR folder holds"):
        convert_beir(BEIR, "bakery", tmp_path, split_name="train")


def test_no_usable_query_is_an_error(tmp_path, beir_copy):
    (beir_copy / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t0\n")
    with pytest.raises(SetError, match="no query has a relevant judgment"):
        convert_beir(beir_copy, "bakery", tmp_path / "sets")


def test_windows_line_ends_and_a_byte_order_mark_are_read(tmp_path, beir_copy):
    qrels = beir_copy / "qrels" / "test.tsv"
    qrels.write_bytes(b"\xef\xbb\xbf" + qrels.read_bytes().replace(b"\n", b"\r\n"))
    query_set = load_set(convert_beir(beir_copy, "bakery", tmp_path / "sets").path)
    assert [(q.qid, q.relevant) for q in query_set.queries][2] == ("q3", {"d4": 2, "d1": 1})
