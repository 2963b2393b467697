"""A TREC run read as an input (harness/sets/trec_input.py): scores per query, the qid spellings, and
malformed lines named by file, line and field."""

from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.sets.loader import load_set
from harness.sets.trec_input import missing_from_run, read_run, run_scores, unknown_in_run
from tests.conftest import TINY_SET


def test_a_run_is_the_scores_as_written_per_query_rank_q0_and_tag_ignored(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q Q0 d-a 1 1.0 t\nq Q0 d-c 2 2 t\nq2 X d-b 9 -0.5 other\nq Q0 d-x 5 10 t\n")
    assert read_run(path) == {"q": {"d-a": 1.0, "d-c": 2.0, "d-x": 10.0}, "q2": {"d-b": -0.5}}


@pytest.mark.parametrize("text, message", [
    ("q Q0 d1 1 1.0\n", "run.txt:2: expected 6 fields 'qid Q0 docid rank score tag', got 5"),
    ("q Q0 d1 1 high t\n", "run.txt:2: score: 'high' is not a number"),
    ("q Q0 d1 1 nan t\n", "run.txt:2: score: 'nan' is not finite"),
    ("q Q0 d1 1 inf t\n", "run.txt:2: score: 'inf' is not finite"),
    ("q Q0 d1 first 1.0 t\n", "run.txt:2: rank: 'first' is not an integer"),
    ("q Q0 d0 2 1.0 t\n", "run.txt:2: docid: 'd0' already listed for query 'q' on line 1"),
    (b"q Q0 d\xff 2 1.0 t\n", "run.txt:2: line is not valid UTF-8"),
])
def test_malformed_run_lines_name_file_line_and_field(tmp_path, monkeypatch, text, message):
    monkeypatch.chdir(tmp_path)
    body = b"q Q0 d0 1 2.0 t\n" + (text if isinstance(text, bytes) else text.encode())
    (tmp_path / "run.txt").write_bytes(body)
    with pytest.raises(UsageError) as error:
        read_run(Path("run.txt"))
    assert str(error.value) == message


def test_blank_lines_and_tabs_are_whitespace_like_any_other(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("\nq\tQ0\td1\t1\t0.5\tt\n\n  q Q0 d2 2 0.25 t  \n")
    assert read_run(path) == {"q": {"d1": 0.5, "d2": 0.25}}


def test_a_query_is_found_as_set_colon_qid_first_then_bare_and_the_rest_are_named():
    tiny = load_set(TINY_SET)
    run = {"tiny:tiny-01": {"doc-01": 2.0}, "tiny-01": {"doc-08": 9.0}, "tiny-02": {"doc-02": 5.0},
           "other:x": {"doc-01": 1.0}, "stray": {"doc-01": 1.0}}
    assert run_scores(run, "tiny", "tiny-01") == {"doc-01": 2.0}  # the prefixed spelling wins
    assert run_scores(run, "tiny", "tiny-02") == {"doc-02": 5.0}
    assert run_scores(run, "tiny", "tiny-03") is None
    assert missing_from_run(run, tiny) == ["tiny-03", "tiny-04", "tiny-05", "tiny-06", "tiny-07"]
    assert unknown_in_run(run, [tiny]) == ["other:x", "stray"]
