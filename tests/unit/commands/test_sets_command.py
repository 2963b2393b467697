"""`python -m harness sets ...`: list, show (with overlap statistics), verify and pin."""

import json

import pytest

from harness.commands.cli import main
from harness.sets.loader import load_set
from harness.sets.statistics import overlap_statistics
from tests.conftest import REPO_ROOT, TINY_SET


def test_overlap_statistics_hand_checked():
    # Of the 6 judged tiny queries only tiny-06 ("which log format wins" vs "Logging writes JSON
    # lines ...") shares no content word with its relevant document: "log" != "logging".
    stats = overlap_statistics(load_set(TINY_SET))
    assert stats["judged"] == 6 and stats["zero_overlap"] == 1
    assert abs(stats["zero_overlap_share"] - 1 / 6) < 1e-12


def test_overlap_counts_only_relevant_documents_not_grade_0_distractors(tiny_copy):
    # tiny-06 shares no word with doc-06; judging a distractor grade 0 that holds "format" and "wins"
    # ("log" != "logging") must leave it sharing none: still 1 of 6, coverage unchanged.
    before = overlap_statistics(load_set(tiny_copy))
    corpus = tiny_copy / "corpus.jsonl"
    corpus.write_text(corpus.read_text() + json.dumps({"id": "doc-09", "text": "Which format wins the vote"}) + "\n")
    queries = tiny_copy / "queries.jsonl"
    queries.write_text(queries.read_text().replace('"relevant": {"doc-06": 1}', '"relevant": {"doc-06": 1, "doc-09": 0}'))
    assert main(["sets", "--sets-dir", str(tiny_copy.parent), "pin", "tiny"]) == 0
    after = overlap_statistics(load_set(tiny_copy))
    assert after["judged"] == 6 and after["zero_overlap"] == 1
    assert after["mean_word_coverage"] == before["mean_word_coverage"]


def test_list_show_verify(capsys, tiny_copy, monkeypatch):
    monkeypatch.chdir(tiny_copy.parent.parent)  # a team's folder: no baseline file, so `all` is every set found
    sets_dir = str(tiny_copy.parent)
    assert main(["sets", "--sets-dir", sets_dir, "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:4] == ["tiny", "1", "7", "jsonl"]
    end = lines[0].index("revision") + len("revision")  # every row's revision ends under the header's,
    assert all(line[end - 1].isdigit() and line[end] == " " for line in lines[1:])  # however long a set's name
    assert main(["sets", "--sets-dir", sets_dir, "show", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "by split: development 5, held-out 2" in out and "1 of 6 judged queries (17%)" in out
    assert main(["sets", "--sets-dir", sets_dir, "verify"]) == 0
    assert capsys.readouterr().out.startswith("ok  tiny: revision 1, 8 documents verified")


def test_verify_fails_on_drift_and_pin_repairs_it(capsys, tiny_copy):
    sets_dir = str(tiny_copy.parent)
    corpus = tiny_copy / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("capped at sixty seconds", "capped at two minutes"))
    assert main(["sets", "--sets-dir", sets_dir, "verify", "tiny"]) == 2
    assert "pins: 'doc-02' changed since the gold was written" in capsys.readouterr().err
    assert main(["sets", "--sets-dir", sets_dir, "pin", "tiny"]) == 0
    assert "1 pin(s) written: doc-02" in capsys.readouterr().out
    assert main(["sets", "--sets-dir", sets_dir, "verify", "tiny"]) == 0
    meta = json.loads((tiny_copy / "set.json").read_text())
    assert meta["name"] == "tiny" and len(meta["pins"]) == 8


def test_unknown_set_is_exit_2(capsys, tiny_copy):
    assert main(["sets", "--sets-dir", str(tiny_copy.parent), "show", "nope"]) == 2
    assert "set 'nope'" in capsys.readouterr().err


def test_metrics_lists_both_spellings(capsys):
    assert main(["metrics"]) == 0
    names = capsys.readouterr().out.split()
    assert {"recall@10", "R@10", "nDCG@10", "mrr", "RR@10", "P@10"} <= set(names)


def test_import_beir_via_the_cli_and_never_overwrite(tmp_path, capsys):
    from tests.conftest import FIXTURES
    sets_dir = tmp_path / "sets"
    assert main(["sets", "--sets-dir", str(sets_dir), "import-beir", str(FIXTURES / "beir"), "--name", "bakery"]) == 0
    assert "bakery: 4 queries, 7 documents" in capsys.readouterr().out
    assert main(["sets", "--sets-dir", str(sets_dir), "verify", "bakery"]) == 0
    before = (sets_dir / "bakery" / "set.json").read_text()
    assert main(["sets", "--sets-dir", str(sets_dir), "import-beir", str(FIXTURES / "beir"), "--name", "bakery"]) == 2
    assert (sets_dir / "bakery" / "set.json").read_text() == before


def test_export_corpus_writes_what_an_adapter_reads_and_never_overwrites(tmp_path, capsys):
    import json as _json

    from harness.commands.sets import main as sets_main
    from harness.errors import UsageError
    from harness.sets.loader import load_set as _load
    out = tmp_path / "corpus"
    assert sets_main(["--sets-dir", str(TINY_SET.parent), "export-corpus", "tiny", str(out)]) == 0
    rows = [_json.loads(line) for line in (out / "tiny.jsonl").read_text().splitlines()]
    tiny = _load(TINY_SET)
    # the documents of the set, in its order, under its ids, with the very text a run materialises
    assert [(r["id"], r["text"]) for r in rows] == [(d.id, d.text) for d in tiny.documents]
    assert f"{len(tiny.documents)} documents of set tiny (kind tiny" in capsys.readouterr().out
    before = (out / "tiny.jsonl").read_bytes()
    with pytest.raises(UsageError, match="already exists"):
        sets_main(["--sets-dir", str(TINY_SET.parent), "export-corpus", "tiny", str(out)])
    assert (out / "tiny.jsonl").read_bytes() == before


def test_export_corpus_refuses_a_file_in_the_way_with_one_line_and_exit_2(tmp_path, capsys):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("mine\n")
    for target in (in_the_way, in_the_way / "below"):  # the folder itself, or a parent, is a file
        assert main(["sets", "--sets-dir", str(TINY_SET.parent), "export-corpus", "tiny", str(target)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"harness: error: {target}: ") and "not a folder" in err and err.count("\n") == 1
    assert in_the_way.read_text() == "mine\n"


def test_export_corpus_keeps_an_existing_passages_hint(tmp_path, capsys):
    # the wiki set asks for windows: its export writes wiki.passages.json beside wiki.jsonl
    out = tmp_path / "corpus"
    assert main(["sets", "--sets-dir", str(REPO_ROOT / "sets"), "export-corpus", "wiki", str(out)]) == 0
    assert json.loads((out / "wiki.passages.json").read_text()) == {"window": 600, "overlap": 150}
    (out / "wiki.jsonl").unlink()
    (out / "wiki.passages.json").write_text("my own hint\n")
    assert main(["sets", "--sets-dir", str(REPO_ROOT / "sets"), "export-corpus", "wiki", str(out)]) == 2
    assert "wiki.passages.json: already exists" in capsys.readouterr().err
    assert (out / "wiki.passages.json").read_text() == "my own hint\n" and not (out / "wiki.jsonl").exists()


def test_import_beir_takes_sets_dir_after_the_action_too(tmp_path, capsys, monkeypatch):
    from tests.conftest import FIXTURES
    monkeypatch.chdir(tmp_path)  # the default `sets` folder, were --sets-dir ignored, would land here
    after, before = tmp_path / "after", tmp_path / "before"
    assert main(["sets", "import-beir", str(FIXTURES / "beir"), "--name", "bakery", "--sets-dir", str(after)]) == 0
    assert (after / "bakery" / "set.json").is_file() and not (tmp_path / "sets").exists()
    # before the action still works, and is not reset to the default by the subparser
    assert main(["sets", "--sets-dir", str(before), "import-beir", str(FIXTURES / "beir"), "--name", "bakery"]) == 0
    assert (before / "bakery" / "set.json").is_file() and not (tmp_path / "sets").exists()
    # given in both places, the later (after the action) wins, as argparse reads left to right
    both = tmp_path / "both"
    assert main(["sets", "--sets-dir", str(before), "import-beir", str(FIXTURES / "beir"), "--name", "other",
                 "--sets-dir", str(both)]) == 0
    assert (both / "other" / "set.json").is_file() and not (before / "other").exists()
    capsys.readouterr()


def test_export_corpus_all_writes_every_set_or_nothing(tmp_path, capsys, monkeypatch):
    import shutil
    monkeypatch.chdir(tmp_path)  # a team's folder without a baseline file: `all` is every set found
    sets = tmp_path / "sets"
    for name, kind in (("one", "code"), ("two", "notes")):
        shutil.copytree(TINY_SET, sets / name)
        meta = json.loads((sets / name / "set.json").read_text())
        (sets / name / "set.json").write_text(json.dumps({**meta, "name": name, "kind": kind}))
    assert main(["sets", "--sets-dir", str(sets), "export-corpus", "all", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["code.jsonl", "notes.jsonl"]
    # two sets of one kind cannot share one <kind>.jsonl: refused before anything is written
    meta = json.loads((sets / "two" / "set.json").read_text())
    (sets / "two" / "set.json").write_text(json.dumps({**meta, "kind": "code"}))
    capsys.readouterr()
    assert main(["sets", "--sets-dir", str(sets), "export-corpus", "all", str(tmp_path / "again")]) == 2
    assert "sets one, two share kind 'code'" in capsys.readouterr().err
    assert not (tmp_path / "again").exists()


def _tiny_baseline_with(path, values):
    """Rewrite a recorded tiny baseline's per-query recall@10 to the given values (what --paired pairs)."""
    document = json.loads(path.read_text())
    entry = document["sets"]["tiny"]
    for qid, value in values.items():
        entry["queries"][qid]["metrics"]["recall@10"] = value
    scored = [row for row in entry["queries"].values() if row["scored"]]  # the aggregates follow the rows
    for group, scopes in [("overall", {"": entry["aggregates"]["overall"]}),
                          ("category", entry["aggregates"]["category"]), ("split", entry["aggregates"]["split"])]:
        for name, scope in scopes.items():
            rows = [row["metrics"]["recall@10"] for row in scored if group == "overall" or row[group] == name]
            scope["recall@10"] = sum(rows) / len(rows)
    path.write_text(json.dumps(document))


def test_show_paired_prints_the_detectable_drop_of_a_small_change(tmp_path, capsys, tiny_copy):
    base, paired = tmp_path / "base.json", tmp_path / "paired.json"
    assert main(["--set", str(tiny_copy), "--baseline", str(base), "--update-baseline", "--yes",
                 "--out", str(tmp_path / "run.json")]) == 0
    paired.write_text(base.read_text())
    # the 5 scored tiny queries (06 is xfail, 07 measure_only), no groups: 5 units
    _tiny_baseline_with(base, {"tiny-01": 1.0, "tiny-02": 1.0, "tiny-03": 1.0, "tiny-04": 1.0, "tiny-05": 1.0})
    _tiny_baseline_with(paired, {"tiny-01": 1.0, "tiny-02": 1.0, "tiny-03": 0.0, "tiny-04": 1.0, "tiny-05": 0.5})
    capsys.readouterr()
    assert main(["sets", "--sets-dir", str(tiny_copy.parent), "show", "tiny", "--baseline", str(base),
                 "--paired", str(paired)]) == 0
    out = capsys.readouterr().out
    # By hand: differences 0, 0, -1, 0, -0.5: 2 of the 5 units moved, fewer than the 10 a change is sized from
    # (sized from 2 moves, the figure would be the circular one: this change's own noise)
    assert f"a small change like {paired}'s" in out
    assert "  overall              5    20.0 pts      2 of 5 units moved            -                   -" in out
    assert "  a                    3    33.3 pts      1 of 3 units moved            -" in out
    assert "  -: too few moved units to size a change (fewer than 10 moved)" in out
    # Without --paired: 5 units, whose sign-flip test's smallest p is 2/2^5 = 0.0625: no change is detectable.
    # Units for 2 points: all 1.0, so sigma_d^2 = 0 + 0.02 x 0.98 (the other system 2 points lower), and
    # m >= ((t[0.975;m-1] + t[0.8;m-1]) x 0.14 / 0.02)^2 = 2.80874^2 x 49 = 386.55 at m near 387 (the t
    # quantiles from scipy.stats.t.ppf): 387.
    assert main(["sets", "--sets-dir", str(tiny_copy.parent), "show", "tiny", "--baseline", str(base)]) == 0
    out = capsys.readouterr().out
    assert "  overall              5    20.0 pts         none                 387" in out
    assert "  none: 5 or fewer units: the sign-flip test's smallest p, 2/2^m, is above alpha 0.05" in out
    assert "the bound for a change of system: the other system independent of the baseline" in out


def test_show_paired_refuses_a_run_of_another_revision(tmp_path, capsys, tiny_copy):
    base, paired = tmp_path / "base.json", tmp_path / "paired.json"
    assert main(["--set", str(tiny_copy), "--baseline", str(base), "--update-baseline", "--yes",
                 "--out", str(tmp_path / "run.json")]) == 0
    document = json.loads(base.read_text())
    document["sets"]["tiny"]["revision"] = 2
    paired.write_text(json.dumps(document))
    capsys.readouterr()
    assert main(["sets", "--sets-dir", str(tiny_copy.parent), "show", "tiny", "--baseline", str(base),
                 "--paired", str(paired)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{paired}: set tiny: revision 2, the baseline has 1: not two runs of one set" in err[0]
