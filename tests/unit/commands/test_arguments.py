"""harness.commands.arguments: argparse without exits, and the one split of argv at `--`."""

import argparse

import pytest

from harness.commands.arguments import ArgumentsExit, parse_arguments, split_adapter_command


def test_split_at_the_first_double_dash_only():
    assert split_adapter_command(["--set", "x", "--", "./a", "--", "b"]) == (["--set", "x"], ["./a", "--", "b"])
    assert split_adapter_command(["--set", "x"]) == (["--set", "x"], [])
    assert split_adapter_command(["--"]) == ([], [])


def test_argparse_exits_become_a_returned_status(capsys):
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--k", type=int)
    assert parse_arguments(parser, ["--k", "3"]).k == 3
    with pytest.raises(ArgumentsExit) as error:
        parse_arguments(parser, ["--k", "x"])
    assert error.value.exit_code == 2 and "invalid int value" in capsys.readouterr().err
    with pytest.raises(ArgumentsExit) as error:
        parse_arguments(parser, ["--help"])
    assert error.value.exit_code == 0
