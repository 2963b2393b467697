"""harness.sets.fingerprint (drift of the files a run reads) and harness.sets.pins (re-pinning a set)."""

import hashlib
import json

from harness.sets.fingerprint import changed_files, corpus_fingerprints, fingerprint_files, set_files
from harness.sets.loader import load_set
from harness.sets.pins import repin_set


def test_fingerprints_are_sha256_and_drift_is_named(tmp_path, tiny_copy):
    files = set_files([load_set(tiny_copy)])
    assert sorted(p.name for p in files) == ["corpus.jsonl", "queries.jsonl", "set.json"]
    before = fingerprint_files(files)
    queries = tiny_copy / "queries.jsonl"
    assert before[str(queries)] == hashlib.sha256(queries.read_bytes()).hexdigest()  # independent digest
    assert changed_files(before, fingerprint_files(files), "set file") == []
    queries.write_text(queries.read_text() + "\n")
    (tiny_copy / "corpus.jsonl").unlink()
    assert changed_files(before, fingerprint_files(files), "set file") == [
        f"set file {tiny_copy / 'corpus.jsonl'} is gone", f"set file {queries} changed"]


def test_corpus_fingerprints_cover_every_kind_file(tmp_path):
    (tmp_path / "a.jsonl").write_text("x")
    (tmp_path / "b.passages.json").write_text("{}")
    assert list(corpus_fingerprints(tmp_path)) == [str(tmp_path / "a.jsonl")]


def test_repin_writes_only_when_a_pin_changed(tiny_copy):
    first = repin_set(tiny_copy)
    assert first.changed == ()  # the committed tiny set is pinned
    meta = json.loads((tiny_copy / "set.json").read_text())
    some_id = sorted(meta["pins"])[0]
    meta["pins"][some_id] = "0" * 64
    (tiny_copy / "set.json").write_text(json.dumps(meta))
    again = repin_set(tiny_copy)
    assert again.changed == (some_id,) and again.pinned == len(meta["pins"])
    assert json.loads((tiny_copy / "set.json").read_text())["pins"][some_id] != "0" * 64
