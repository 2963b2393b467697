"""`python -m harness metrics` as a real subprocess: the table lists every registered family, and every example parses."""

from __future__ import annotations

import subprocess
import sys

from harness.scoring.metrics import FAMILIES, parse_metric


def run_metrics_command():
    return subprocess.run([sys.executable, "-m", "harness", "metrics"], capture_output=True, text=True, timeout=60)


def test_lists_every_family_with_its_spellings_and_definition():
    done = run_metrics_command()
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["family", "ours", "ir_measures", "trec_eval", "cutoff", "options"]
    table = {line.split()[0]: line for line in lines[2:2 + len(FAMILIES)]}
    assert list(table) == list(FAMILIES)
    for name, family in FAMILIES.items():
        assert (family.ir_measures if family.ir_measures_differs is None and family.ir_measures else "-") \
            in table[name].split()
        assert ("required" in table[name]) == (family.cutoff_required and family.cutoffs is None)
        if family.cutoffs:  # an evidence family lists the cutoffs it is computed at
            assert ", ".join(f"@{k}" for k in family.cutoffs) in table[name]
        assert f"  {name}  " in done.stdout and family.definition in done.stdout
    assert "ndcg_cut_K, ndcg" in table["ndcg"] and "map_cut_K, map" in table["ap"]
    assert "bare mrr = @10" in table["rr"]


def test_every_listed_example_parses_to_its_family():
    lines = run_metrics_command().stdout.splitlines()
    examples = lines[lines.index("Examples (each one parses):") + 1:]
    assert len(examples) == len(FAMILIES)
    for line in examples:
        family, *spellings = line.split()
        assert spellings
        for spelling in spellings:
            assert parse_metric(spelling).family == family, spelling
