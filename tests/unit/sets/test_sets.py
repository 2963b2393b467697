"""Set loading (format 1): valid sets load; each defect is one SetError naming file, line and field."""

import json

import pytest

from harness.sets.corpus import corpus_hash, content_sha256
from harness.errors import SetError
from harness.sets.loader import find_sets, load_set
from tests.conftest import TINY_SET
from tests.builders import rewrite_query


def test_tiny_set_loads_with_its_contracts():
    loaded = load_set(TINY_SET)
    assert (loaded.name, loaded.kind, loaded.revision, loaded.k) == ("tiny", "tiny", 1, 10)
    assert len(loaded.queries) == 7 and len(loaded.documents) == 8
    by_qid = {q.qid: q for q in loaded.queries}
    assert by_qid["tiny-04"].rank_before[0].before == "doc-04"
    assert by_qid["tiny-05"].forbid == ("doc-08",)
    assert by_qid["tiny-06"].xfail and not by_qid["tiny-06"].scored
    assert by_qid["tiny-07"].no_relevant and not by_qid["tiny-07"].scored
    assert by_qid["tiny-03"].line == 3
    # content hash is sha256 of the UTF-8 text, independent of our helper
    import hashlib
    doc = loaded.documents[0]
    assert doc.sha256 == hashlib.sha256(doc.text.encode("utf-8")).hexdigest()


def test_corpus_hash_changes_with_any_document():
    loaded = load_set(TINY_SET)
    documents = list(loaded.documents)
    assert corpus_hash(documents) == corpus_hash(list(reversed(documents)))
    changed = documents[:-1] + [type(documents[-1])(id=documents[-1].id, text="x", sha256=content_sha256("x"))]
    assert corpus_hash(changed) != corpus_hash(documents)


def test_malformed_line_names_file_and_line(tiny_copy):
    path = tiny_copy / "queries.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = '{"qid": "tiny-03", "query": '
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SetError, match=r"queries.jsonl:3: not valid JSON"):
        load_set(tiny_copy)


def test_duplicate_qid(tiny_copy):
    rewrite_query(tiny_copy, "tiny-02", qid="tiny-01")
    with pytest.raises(SetError, match=r"queries.jsonl:2: qid: 'tiny-01' already used on line 1"):
        load_set(tiny_copy)


def test_relevant_id_not_in_corpus(tiny_copy):
    rewrite_query(tiny_copy, "tiny-03", relevant={"doc-99": 1})
    with pytest.raises(SetError, match=r"queries.jsonl:3: relevant: id 'doc-99' is not in the corpus"):
        load_set(tiny_copy)


def test_forbid_id_not_in_corpus(tiny_copy):
    rewrite_query(tiny_copy, "tiny-05", forbid=["doc-77"])
    with pytest.raises(SetError, match=r"queries.jsonl:5: forbid: id 'doc-77'"):
        load_set(tiny_copy)


def test_unknown_split(tiny_copy):
    rewrite_query(tiny_copy, "tiny-01", split="test")
    with pytest.raises(SetError, match=r"queries.jsonl:1: split: 'test' is not one of development, held-out"):
        load_set(tiny_copy)


@pytest.mark.parametrize("field", ["qid", "query", "relevant", "category", "split", "source"])
def test_missing_field(tiny_copy, field):
    rewrite_query(tiny_copy, "tiny-02", **{field: None})
    with pytest.raises(SetError, match=rf"queries.jsonl:2: {field}: missing"):
        load_set(tiny_copy)


@pytest.mark.parametrize("changes, message", [
    ({"relevant": {"doc-01": 0}}, "relevant: only grade 0 \\(judged non-relevant\\); a query needs a grade >= 1"),
    ({"relevant": {"doc-01": -1}}, "grade of 'doc-01' must be an integer from 0 to 1000"),
    ({"relevant": {}}, "negative probe needs"),
    ({"outcome": "skip"}, "outcome: 'skip'"),
    ({"rank_before": {"before": "doc-01"}}, "rank_before: must be"),
    ({"max_score": "high"}, "max_score: must be a finite number"),
    ({"measure_only": "yes"}, "measure_only: must be true or false"),
    ({"colour": "red"}, "colour: unknown field"),
    ({"query": "caf\ud800"}, "query: holds a lone surrogate"),
])
def test_bad_query_fields(tiny_copy, changes, message):
    rewrite_query(tiny_copy, "tiny-01", **changes)
    with pytest.raises(SetError, match=message):
        load_set(tiny_copy)


def test_drifted_relevant_document_is_rejected_not_scored(tiny_copy):
    path = tiny_copy / "corpus.jsonl"
    path.write_text(path.read_text().replace("merges environment overrides", "ignores the environment"))
    with pytest.raises(SetError, match=r"set.json: pins: 'doc-01' changed since the gold was written"):
        load_set(tiny_copy)


def test_unpinned_reference_is_rejected(tiny_copy):
    meta = json.loads((tiny_copy / "set.json").read_text())
    del meta["pins"]["doc-08"]
    (tiny_copy / "set.json").write_text(json.dumps(meta))
    with pytest.raises(SetError, match=r"pins: 'doc-08' \(named by query tiny-05\) is not pinned; run "
                                       rf"`python -m harness sets pin {tiny_copy.name}` to record it$"):
        load_set(tiny_copy)


@pytest.mark.parametrize("changes, message", [
    ({"format": 2}, "format: expected 1"),
    ({"k": 0}, "k: must be between 1 and 10000"),
    ({"k": 10_001}, "k: must be between 1 and 10000"),
    ({"kind": ""}, "kind: missing"),
    ({"corpus": {"source": "ftp"}}, "corpus.source: 'ftp' is not one of"),
])
def test_bad_set_json(tiny_copy, changes, message):
    meta = json.loads((tiny_copy / "set.json").read_text())
    meta.update(changes)
    (tiny_copy / "set.json").write_text(json.dumps(meta))
    with pytest.raises(SetError, match=message):
        load_set(tiny_copy)


def test_duplicate_corpus_id(tiny_copy):
    path = tiny_copy / "corpus.jsonl"
    path.write_text(path.read_text() + json.dumps({"id": "doc-01", "text": "again"}) + "\n")
    with pytest.raises(SetError, match=r"corpus.jsonl:9: id: 'doc-01' appears twice"):
        load_set(tiny_copy)


def test_find_sets_all_and_unknown(tmp_path, tiny_copy):
    sets_dir = tiny_copy.parent
    assert find_sets(["all"], sets_dir) == [tiny_copy]
    assert find_sets(["tiny", str(tiny_copy)], sets_dir) == [tiny_copy]
    with pytest.raises(SetError, match=r"set 'nope': no .* \(available: tiny\)"):
        find_sets(["nope"], sets_dir)
