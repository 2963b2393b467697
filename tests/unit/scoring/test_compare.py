"""`compare`: deltas, flips with text, paired tests, and refusal of runs that are not comparable."""

import json

import pytest

from harness.commands.cli import main
from tests.builders import make_report, make_revised_report, record_baseline_and_report
from tests.reports import GOOD
from tests.conftest import TINY_SET

from harness.sets.loader import load_set

TINY = load_set(TINY_SET)


def test_identical_reports(tmp_path, monkeypatch, capsys):
    a = make_report(tmp_path, monkeypatch, "a", GOOD)
    b = make_report(tmp_path, monkeypatch, "b", GOOD)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--resamples", "500", "--json", str(tmp_path / "c.json")]) == 0
    result = json.loads((tmp_path / "c.json").read_text())
    (pair,) = result["candidates"]
    overall = pair["scopes"][0]
    assert overall["scope"] == "overall" and overall["n"] == 5 and overall["headline"]
    # identical runs: no difference, nothing to resample, shown within the default 2.0-point margin
    assert overall["tests"]["recall@10"] == {"mean_difference": 0.0, "ci95": [0.0, 0.0], "p_value": 1.0,
                                             "p_holm": 1.0, "groups": 5, "ci90": [0.0, 0.0],
                                             "no_worse_than_margin": True, "status": "equivalent",
                                             "resamples": 500}
    # both 90% bounds (0, 0) inside +-2.0 points: equivalent, per set and for the candidate
    assert pair["flips"] == [] and result["verdict"] == pair["verdict"] == "EQUIVALENT"
    assert pair["set_verdicts"] == {"tiny": "EQUIVALENT"}
    assert result["margin_points"] == 2.0 and result["tested"] == ["recall@10"] and result["holm_family"] == 1


def test_flips_are_listed_with_text_and_deltas(tmp_path, monkeypatch, capsys):
    a = make_report(tmp_path, monkeypatch, "a", GOOD)
    worse = dict(GOOD)
    worse["how is the config file parsed"] = ["doc-02"]
    worse["do migrations roll back"] = ["doc-01", "doc-03"]
    b = make_report(tmp_path, monkeypatch, "b", worse)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert 'tiny/tiny-01 lost doc-01  "how is the config file parsed"' in out
    # recall@10 over 5 queries: 1.0 -> 0.8; MRR: tiny-03 now at rank 2 -> (1+1+0.5+1+0... ) see below
    overall = next(line for line in out.splitlines() if line.startswith("overall"))
    assert "1.000 (-0.200)" in overall  # recall@5 and recall@10 columns: the value, then its change
    # MRR: 1 -> (0 + 1 + 0.5 + 1 + 1) / 5 = 0.7
    assert "1.000 (-0.300)" in overall


def test_mismatched_revisions_are_refused_unless_allowed(tmp_path, monkeypatch, capsys, tiny_copy):
    a = make_report(tmp_path, monkeypatch, "a", GOOD)
    b = make_revised_report(tmp_path, monkeypatch, "b", GOOD, tiny_copy)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--resamples", "100"]) == 2
    assert "not comparable: set tiny: revision 1 vs 2" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--resamples", "100", "--allow-mismatch"]) == 0
    assert "NOT COMPARABLE (--allow-mismatch): set tiny: revision 1 vs 2" in capsys.readouterr().out


def test_a_shard_against_the_whole_set_is_refused_unless_allowed(tmp_path, monkeypatch, capsys):
    import sys

    from tests.conftest import SCRIPTED_ADAPTER
    whole = make_report(tmp_path, monkeypatch, "whole", GOOD)  # sets SCRIPTED_ANSWERS
    shard = tmp_path / "shard.json"
    assert main(["--set", str(TINY_SET), "--no-gate", "--quiet", "--shard", "1/2", "--out", str(shard),
                 "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)]) == 0
    asked = len(json.loads(shard.read_text())["sets"][0]["queries"])
    assert 0 < asked < len(TINY.queries)
    capsys.readouterr()
    assert main(["compare", str(whole), str(shard), "--resamples", "100"]) == 2
    err = capsys.readouterr().err
    assert f"set tiny: {len(TINY.queries)} vs {asked} queries, {asked} in both (a shard? merge the shards first)" in err
    assert main(["compare", str(whole), str(shard), "--resamples", "100", "--allow-mismatch"]) == 0
    assert f"NOT COMPARABLE (--allow-mismatch): set tiny: {len(TINY.queries)} vs {asked}" in capsys.readouterr().out


def test_reports_with_no_set_in_common_are_refused_even_when_mismatches_are_allowed(tmp_path, monkeypatch, capsys):
    tiny = make_report(tmp_path, monkeypatch, "tiny", GOOD)
    other = json.loads(tiny.read_text())
    other["sets"][0]["name"] = "renamed"
    other["provenance"]["sets"] = {"renamed": other["provenance"]["sets"]["tiny"]}
    (tmp_path / "other.json").write_text(json.dumps(other))
    for extra in ([], ["--allow-mismatch"]):
        capsys.readouterr()
        assert main(["compare", str(tiny), str(tmp_path / "other.json"), "--resamples", "100", *extra]) == 2
        err = capsys.readouterr().err
        assert "other.json: no set in common with" in err and "(sets renamed vs tiny); nothing to compare" in err


def test_a_baseline_compares_like_a_report(tmp_path, monkeypatch, capsys):
    baseline, report = record_baseline_and_report(tmp_path, monkeypatch, GOOD)
    capsys.readouterr()
    assert main(["compare", str(baseline), str(report), "--resamples", "100"]) == 0
    assert "overall                     5" in capsys.readouterr().out


def test_incomplete_or_foreign_files_are_usage_errors(tmp_path, capsys):
    foreign = tmp_path / "x.json"
    foreign.write_text("{}")
    assert main(["compare", str(foreign), str(foreign)]) == 2
    assert "neither a retrieval-gate report nor a baseline" in capsys.readouterr().err


def test_metric_names_in_ir_measures_spelling_choose_the_tests(tmp_path, monkeypatch, capsys):
    a = make_report(tmp_path, monkeypatch, "a", GOOD)
    worse = dict(GOOD)
    worse["how is the config file parsed"] = ["doc-02", "doc-01"]  # MRR drops, recall holds
    b = make_report(tmp_path, monkeypatch, "b", worse)
    capsys.readouterr()
    out_json = tmp_path / "c.json"
    assert main(["compare", str(a), str(b), "--resamples", "200", "--metric", "RR@10", "--metric", "P@10",
                 "--json", str(out_json)]) == 0
    overall = json.loads(out_json.read_text())["candidates"][0]["scopes"][0]
    assert sorted(overall["tests"]) == ["mrr", "precision@10"]
    # MRR over 5 queries: 1.0 -> (0.5 + 4) / 5 = 0.9
    assert overall["tests"]["mrr"]["mean_difference"] == pytest.approx(-0.1)
    assert "mrr change, 95% CI" in capsys.readouterr().out
    assert main(["compare", str(a), str(b), "--metric", "MAP"]) == 2
    assert "--metric:" in capsys.readouterr().err
