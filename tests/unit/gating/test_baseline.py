"""Baselines: strict reading (corrupt or wrong-format is an error), atomic merge writes, comparability."""

import sys
import json

import pytest

from pathlib import Path

from harness.gating.baseline import Baseline, build_baseline, read_baseline, write_baseline
from harness.errors import BaselineError
from harness.scoring.evaluate import Answer, evaluate_set
from harness.sets.loader import load_set
from tests.builders import PROVENANCE
from tests.conftest import TINY_SET

TINY = load_set(TINY_SET)
ANSWERS = {q.qid: Answer(tuple(q.relevant), None, 0.002) for q in TINY.queries}


def test_round_trip_keeps_identity_and_per_query_values(tmp_path):
    result = evaluate_set(TINY, ANSWERS, k=10)
    path = tmp_path / "b.json"
    provenance = {"started": "2026-01-01", "backend": {"label": "x", "argv": [sys.executable, "-m", "adapters.x"]},
                  "adapter": {"banner": {"ready": True, "name": "x", "version": "2", "settings": {"k1": 0.9}}}}
    write_baseline(path, build_baseline([result], provenance))
    loaded = read_baseline(path)
    entry = loaded["sets"]["tiny"]
    # the identity from the banner, and the command with the interpreter written portably
    assert loaded["backend"] == {"label": "x", "name": "x", "version": "2", "model_digest": None,
                                 "settings": {"k1": 0.9}, "command": ["python", "-m", "adapters.x"]}
    assert (entry["revision"], entry["corpus_hash"], entry["k"], entry["query_count"]) == (1, TINY.corpus_hash, 10, 7)
    assert entry["queries"]["tiny-04"]["found"] == ["doc-04", "doc-05"]
    assert entry["aggregates"]["overall"]["recall@10"] == 1.0
    assert [p.name for p in tmp_path.iterdir()] == ["b.json"]  # no temp file left behind


def test_merge_keeps_sets_not_in_this_run(tmp_path):
    path = tmp_path / "b.json"
    result = evaluate_set(TINY, ANSWERS, k=10)
    document = build_baseline([result], PROVENANCE)
    other = dict(document["sets"]["tiny"])
    document["sets"] = {"other": other}
    write_baseline(path, document, merge=False)
    write_baseline(path, build_baseline([result], PROVENANCE))
    assert sorted(read_baseline(path)["sets"]) == ["other", "tiny"]


def test_incomplete_run_can_never_become_a_baseline():
    partial = evaluate_set(TINY, {"tiny-01": ANSWERS["tiny-01"]}, k=10)
    with pytest.raises(BaselineError, match="incomplete run"):
        build_baseline([partial], PROVENANCE)


@pytest.mark.parametrize("content, message", [
    ("{not json", "corrupt baseline, not valid JSON"),
    ('{"format": "other"}', "not a retrieval-gate baseline"),
    ('{"format": "retrieval-gate-baseline", "version": 9, "sets": {}}', "version: expected 1"),
    ('{"format": "retrieval-gate-baseline", "version": 1, "sets": {"x": {"revision": 1}}}', r"sets.x.corpus_hash: missing"),
])
def test_bad_baselines_are_errors(tmp_path, content, message):
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(BaselineError, match=message):
        read_baseline(path)


def test_missing_baseline_says_how_to_make_one(tmp_path):
    with pytest.raises(BaselineError, match="--update-baseline"):
        read_baseline(tmp_path / "none.json")


def test_not_comparable_when_revision_or_corpus_changed(tmp_path):
    result = evaluate_set(TINY, ANSWERS, k=10)
    document = json.loads(json.dumps(build_baseline([result], PROVENANCE)))
    baseline = Baseline.from_document(document, Path("b.json"))
    assert baseline.comparable(result) is baseline.sets["tiny"]
    document["sets"]["tiny"]["revision"] = 0
    with pytest.raises(BaselineError, match="sets.tiny.revision: baseline has 0, this run has 1"):
        Baseline.from_document(document, Path("b.json")).comparable(result)
    document["sets"] = {"other": document["sets"]["tiny"]}
    with pytest.raises(BaselineError, match="no baseline for set 'tiny'"):
        Baseline.from_document(document, Path("b.json")).comparable(result)


def test_baselines_command_prints_the_overall_row(tmp_path, capsys):
    from harness.commands.cli import main
    result = evaluate_set(TINY, ANSWERS, k=10)
    path = tmp_path / "current.json"
    write_baseline(path, build_baseline([result], {"backend": {"label": "bm25", "argv": ["python", "-m", "adapters.bm25"]}}))
    assert main(["baselines", str(path)]) == 0
    # every scored tiny query answered with all its relevant docs: all 1.000; latency 2 ms each
    assert "| tiny | bm25 (current.json) | 5 | 1.000 | 1.000 | 1.000 | 1.000 | 2.0 |" in capsys.readouterr().out


def test_deeply_nested_baseline_is_a_clear_error(tmp_path):
    path = tmp_path / "b.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(BaselineError, match="nested too deeply|not valid JSON"):
        read_baseline(path)


def test_shipped_baselines_are_in_the_reviewable_layout():
    """One line per query row and per aggregate scope: what write_baseline writes, parsed back the same."""
    from pathlib import Path
    from harness.gating.baseline import baseline_text
    from tests.conftest import REPO_ROOT
    for path in sorted((REPO_ROOT / "baselines").glob("*.json")):
        text = path.read_text(encoding="utf-8")
        document = json.loads(text)
        assert baseline_text(document) == text, path
        assert json.loads(baseline_text(document)) == document
        queries = sum(len(entry["queries"]) for entry in document["sets"].values())
        assert len(text.splitlines()) < queries + 60 * len(document["sets"]), Path(path).name


def test_a_moved_query_changes_its_own_line_only(tmp_path):
    path = tmp_path / "b.json"
    result = evaluate_set(TINY, ANSWERS, k=10)
    write_baseline(path, build_baseline([result], PROVENANCE))
    before = path.read_text(encoding="utf-8").splitlines()
    document = read_baseline(path)
    row = document["sets"]["tiny"]["queries"]["tiny-04"]
    row["found"] = row["found"][::-1]
    write_baseline(path, document, merge=False)
    after = path.read_text(encoding="utf-8").splitlines()
    changed = [(old, new) for old, new in zip(before, after) if old != new]
    assert len(before) == len(after) and len(changed) == 1
    assert changed[0][1].strip().startswith('"tiny-04": {') and '"found": ["doc-05", "doc-04"]' in changed[0][1]


def test_a_baseline_that_is_not_strict_json_is_never_written(tmp_path):
    document = build_baseline([evaluate_set(TINY, ANSWERS, k=10)], PROVENANCE)
    document["sets"]["tiny"]["aggregates"]["overall"]["recall@10"] = float("nan")
    with pytest.raises(BaselineError, match="strict JSON"):
        write_baseline(tmp_path / "b.json", document)
    assert not (tmp_path / "b.json").exists()


def test_the_backend_records_are_read_once_each_set_its_own_else_the_file_s():
    document = json.loads(json.dumps(build_baseline([evaluate_set(TINY, ANSWERS, k=10)], PROVENANCE)))
    document["sets"]["other"] = {key: value for key, value in document["sets"]["tiny"].items() if key != "backend"}
    document["sets"]["tiny"]["backend"] = {"label": "fts", "name": "fts5", "argv": ["/usr/bin/python3", "-m", "f"]}
    baseline = Baseline.from_document(document, Path("b.json"))
    assert baseline.backend.label == PROVENANCE["backend"]["label"]
    tiny, other = baseline.backends["tiny"], baseline.backends["other"]
    assert (tiny.label, tiny.identity.name, tiny.identity.command) == ("fts", "fts5", ("python", "-m", "f"))
    assert other is baseline.backend  # an older entry without its own record: the file's
    assert baseline.identity_for("tiny") is tiny.identity
