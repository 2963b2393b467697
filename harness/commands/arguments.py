"""What every command shares when reading its argv: argparse without exits, and the split at `--`."""

from __future__ import annotations

import argparse

from harness.errors import HarnessError


class ArgumentsExit(HarnessError):
    """argparse has already printed its message (or --help): only its exit status is left to return."""

    def __init__(self, code: int) -> None:
        super().__init__("")
        self.exit_code = code


def parse_arguments(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """`parser.parse_args(argv)`, with argparse's exit turned into an ArgumentsExit (main() returns, never exits)."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exit_:
        raise ArgumentsExit(int(exit_.code or 0)) from None


def split_adapter_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the options, the adapter command after the first `--`); the command is empty without `--`."""
    if "--" not in argv:
        return list(argv), []
    cut = argv.index("--")
    return list(argv[:cut]), list(argv[cut + 1:])
