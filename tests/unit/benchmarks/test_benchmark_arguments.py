"""benchmarks/arguments.py: the benchmark scripts refuse bad numbers with argparse's one line and exit 2."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.arguments import at_least, list_of, names_from


def test_at_least_takes_the_bound_and_refuses_below_it_or_non_numbers():
    assert at_least(0)("0") == 0 and at_least(2)("7") == 7
    for text, message in (("1", "must be at least 2, got 1"), ("-3", "must be at least 2, got -3"),
                          ("2.5", "not a whole number: '2.5'"), ("", "not a whole number: ''")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            at_least(2)(text)


def test_list_of_reads_commas_and_checks_every_item():
    assert list_of(1)("20000, 100000,") == [20000, 100000]
    with pytest.raises(argparse.ArgumentTypeError, match="must be at least 1, got 0"):
        list_of(1)("5,0")
    with pytest.raises(argparse.ArgumentTypeError, match="expected a comma-separated list"):
        list_of(1)(" , ")


def test_names_from_takes_only_the_choices():
    assert names_from(("plain", "fused"))("fused, plain") == ["fused", "plain"]
    for text in ("int8", "fused,int8", " , "):
        with pytest.raises(argparse.ArgumentTypeError, match="expected a comma-separated list of plain, fused"):
            names_from(("plain", "fused"))(text)


@pytest.mark.parametrize("module, argv, message", [
    ("benchmarks.embed", ["--graphs", "fused,int8"], "argument --graphs: expected a comma-separated list of"),
    ("benchmarks.bm25", ["--sizes", "0"], "argument --sizes: must be at least 1, got 0"),
    ("benchmarks.bm25_floor", ["--rounds", "0"], "argument --rounds: must be at least 1, got 0"),
    ("benchmarks.calibrate_ann", ["--calibration-runs", "1"], "argument --calibration-runs: must be at least 2, got 1"),
    ("benchmarks.embed", ["--limit", "0"], "argument --limit: must be at least 1, got 0"),
    ("benchmarks.real_corpus", ["--docs", "10", "--queries", "10"], "must be fewer than --docs 10"),
])
def test_a_script_stops_at_parsing_with_exit_2(module, argv, message, capsys):
    import importlib

    with pytest.raises(SystemExit) as exited:
        importlib.import_module(module).main(argv)
    assert exited.value.code == 2 and message in capsys.readouterr().err
