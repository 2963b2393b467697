"""Sets are untrusted data: names that become paths, corpus paths, grades, and set files that are not files.

Each defect is one SetError line naming file and field (exit 2), raised at load, before
anything is written or asked; the real CLI proves nothing lands outside its folders.
"""

import json
import os
import stat
import subprocess
import sys

import pytest

from harness.errors import SetError
from harness.sets.loader import (MAX_GRADE, find_sets, judgments_hash, load_set, protected_files,
                                 safe_name, safe_name_problem)
from tests.builders import rewrite_query
from tests.conftest import REPO_ROOT

REPO = REPO_ROOT


def edit_meta(folder, **changes):
    path = folder / "set.json"
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize("value", ["/tmp/evil", "../evil", "a/b", "..", "a..b", ".hidden", "-x", "a\x00b",
                                   "a b", "x" * 101, "", "caf\u00e9", "\ud83d"])
def test_unsafe_names_are_refused(value):
    assert safe_name_problem(value) is not None
    with pytest.raises(SetError, match=r"^set\.json: kind: "):
        safe_name(value, "kind", "set.json")


@pytest.mark.parametrize("value", ["code", "beir.scifact", "a_b-1", "X" * 100, "0"])
def test_plain_names_pass(value):
    assert safe_name_problem(value) is None


@pytest.mark.parametrize("field", ["kind", "name"])
@pytest.mark.parametrize("value", ["/tmp/evil", "../../evil", "a\u0000b", 7])
def test_a_set_whose_kind_or_name_is_a_path_does_not_load(tiny_copy, field, value):
    edit_meta(tiny_copy, **{field: value})
    with pytest.raises(SetError) as caught:
        load_set(tiny_copy)
    message = str(caught.value)
    assert f"set.json: {field}: " in message
    assert "\n" not in message and "\x00" not in message


@pytest.mark.parametrize("rel, why", [
    ("../corpus.jsonl", "no absolute path, no '..'"),
    ("/etc/passwd", "no absolute path, no '..'"),
    ("a\x00b", "NUL"),
])
def test_a_corpus_path_outside_the_set_folder_is_refused(tiny_copy, rel, why):
    edit_meta(tiny_copy, corpus={"source": "jsonl", "path": rel})
    with pytest.raises(SetError, match=r"set\.json: corpus\.path: .*" + why.replace("(", r"\(").replace(")", r"\)")):
        load_set(tiny_copy)


def test_a_corpus_path_leading_out_through_a_symlink_is_refused(tiny_copy, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (tiny_copy / "corpus.jsonl").rename(outside / "corpus.jsonl")
    (tiny_copy / "link").symlink_to(outside)
    edit_meta(tiny_copy, corpus={"source": "jsonl", "path": "link/corpus.jsonl"})
    with pytest.raises(SetError, match=r"corpus\.path: 'link/corpus\.jsonl' leads outside the set folder"):
        load_set(tiny_copy)


@pytest.mark.parametrize("grade", [MAX_GRADE + 1, 10 ** 400, -1, 2.5, True])
def test_grades_outside_0_to_1000_are_refused(tiny_copy, grade):
    rewrite_query(tiny_copy, "tiny-01", relevant={"doc-01": grade})
    with pytest.raises(SetError, match=r"queries\.jsonl:1: relevant: grade of 'doc-01' must be an integer from 0 to 1000"):
        load_set(tiny_copy)


def test_the_largest_grade_loads(tiny_copy):
    rewrite_query(tiny_copy, "tiny-01", relevant={"doc-01": MAX_GRADE})
    assert load_set(tiny_copy).queries[0].relevant == {"doc-01": MAX_GRADE}


@pytest.mark.parametrize("bound", [1e13, -1e13, 10 ** 400])
def test_max_score_must_be_bounded(tiny_copy, bound):
    rewrite_query(tiny_copy, "tiny-01", max_score=bound)
    with pytest.raises(SetError, match=r"queries\.jsonl:1: max_score: must be a finite number between -1e\+12 and 1e\+12"):
        load_set(tiny_copy)


def test_a_nan_literal_in_set_json_is_refused(tiny_copy):
    text = (tiny_copy / "set.json").read_text().replace('"revision": 1', '"revision": NaN')
    (tiny_copy / "set.json").write_text(text)
    with pytest.raises(SetError, match=r"set\.json: set\.json, not valid strict JSON \(NaN is not a JSON number\)"):
        load_set(tiny_copy)


def test_a_fifo_queries_file_is_refused_without_blocking(tiny_copy):
    # In a child with a timeout: a loader that opened the FIFO for a blocking read would hang forever.
    (tiny_copy / "queries.jsonl").unlink()
    os.mkfifo(tiny_copy / "queries.jsonl")
    code = "from harness.sets.loader import load_set; import sys; load_set(__import__('pathlib').Path(sys.argv[1]))"
    done = subprocess.run([sys.executable, "-c", code, str(tiny_copy)], capture_output=True, text=True, timeout=60,
                          cwd=REPO)
    assert done.returncode != 0
    assert "queries.jsonl: is a FIFO, not a regular file" in done.stderr


def test_a_fifo_set_json_is_refused_without_blocking(tiny_copy):
    (tiny_copy / "set.json").rename(tiny_copy / "real.json")
    os.mkfifo(tiny_copy / "set.json")
    done = subprocess.run([sys.executable, "-m", "harness", "--set", str(tiny_copy), "--no-gate", "--backend", "bm25",
                           "--out", str(tiny_copy.parent / "r.json")],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    # find_sets sees no regular set.json there: exit 2, one line, nothing hangs.
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "set.json" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
def test_a_device_corpus_is_refused(tiny_copy):
    # A private copy of /dev/zero (char 1,5) inside the temp folder; the real /dev is never touched.
    (tiny_copy / "corpus.jsonl").unlink()
    os.mknod(tiny_copy / "corpus.jsonl", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    with pytest.raises(SetError, match=r"corpus\.jsonl: is a device, not a regular file"):
        load_set(tiny_copy)


def test_two_sets_with_one_name_are_refused_naming_both_folders(tiny_copy, tmp_path):
    other = tmp_path / "other" / "copy"
    other.parent.mkdir()
    import shutil
    shutil.copytree(tiny_copy, other)
    with pytest.raises(SetError) as caught:
        find_sets([str(tiny_copy), str(other)], tmp_path / "no-sets")
    assert str(other) in str(caught.value) and str(tiny_copy) in str(caught.value)
    assert "name: 'tiny'" in str(caught.value)
    assert find_sets([str(tiny_copy)], tmp_path / "no-sets") == [tiny_copy]


def test_judgments_hash_changes_with_the_gold_not_with_the_wording(tiny_copy):
    before = load_set(tiny_copy).judgments_hash
    assert len(before) == 64 and before == judgments_hash(load_set(tiny_copy).queries)
    rewrite_query(tiny_copy, "tiny-01", query="a reworded query")
    assert load_set(tiny_copy).judgments_hash == before
    for change in ({"relevant": {"doc-01": 2}}, {"category": "other"}, {"split": "held-out"},
                   {"outcome": "xfail"}, {"max_score": 3.0}, {"forbid": ["doc-08"]}):
        original = [json.loads(line) for line in (tiny_copy / "queries.jsonl").read_text().splitlines()]
        rewrite_query(tiny_copy, "tiny-01", **change)
        assert load_set(tiny_copy).judgments_hash != before, change
        (tiny_copy / "queries.jsonl").write_text("".join(json.dumps(row) + "\n" for row in original))
    assert load_set(tiny_copy).judgments_hash == before


def test_protected_files_name_the_set_files(tiny_copy):
    files = protected_files([load_set(tiny_copy)])
    assert files == {"set tiny: set.json": tiny_copy / "set.json", "set tiny: queries.jsonl": tiny_copy / "queries.jsonl",
                     "set tiny: corpus": tiny_copy / "corpus.jsonl"}


def test_the_cli_with_an_escaping_kind_writes_nothing_outside(tiny_copy, tmp_path):
    victim = tmp_path / "victim.jsonl"
    victim.write_text("keep\n")
    edit_meta(tiny_copy, kind=str(tmp_path / "victim"))
    for argv in (["--set", str(tiny_copy), "--no-gate", "--out", str(tmp_path / "r.json")],
                 ["check-adapter", "--set", str(tiny_copy), "--", sys.executable, "-c", "pass"]):
        done = subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True, text=True, timeout=120,
                              cwd=REPO)
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert done.stderr.startswith("harness: error: ") and done.stderr.count("\n") == 1
        assert "set.json: kind: " in done.stderr and "it becomes a file name" in done.stderr
        assert victim.read_text() == "keep\n"


def test_corpus_ids_refuse_deep_json_and_fifos_as_set_errors(tmp_path):
    from harness.sets.corpus import corpus_ids
    path = tmp_path / "code.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(SetError, match=r"code\.jsonl:2: not valid JSON"):
        corpus_ids(path)
    path.write_text('{"id": "a", "text": "x"}\n{"text": "no id"}\n')
    with pytest.raises(SetError, match=r"code\.jsonl:2: id: must be a non-empty string"):
        corpus_ids(path)
    path.write_text('{"id": "a", "text": "x"}\n\n{"id": "b", "text": "y"}\n')
    assert corpus_ids(path) == ["a", "b"]
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(SetError, match=r"code\.jsonl: is a FIFO, not a regular file"):
        corpus_ids(path)


def test_a_beir_grade_above_the_bound_is_refused_at_its_qrels_line(tmp_path):
    import shutil
    from harness.sets.beir import convert_beir
    from tests.conftest import FIXTURES
    folder = tmp_path / "beir"
    shutil.copytree(FIXTURES / "beir", folder)
    qrels = folder / "qrels" / "test.tsv"
    lines = qrels.read_text().splitlines()
    fields = lines[1].split("\t")
    lines[1] = "\t".join(fields[:2] + ["1001"])
    qrels.write_text("\n".join(lines) + "\n")
    with pytest.raises(SetError, match=r"test\.tsv:2: score: 1001 is above the largest grade a set may hold \(1000\)"):
        convert_beir(folder, "bakery", tmp_path / "sets")
    assert not (tmp_path / "sets" / "bakery").exists()


def test_a_fifo_run_file_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "run.txt")
    code = "import sys; from pathlib import Path; from harness.sets.trec_input import read_run; read_run(Path(sys.argv[1]))"
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run.txt")], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert done.returncode != 0 and "run.txt: is a FIFO, not a regular file" in done.stderr
