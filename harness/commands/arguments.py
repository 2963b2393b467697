"""What every command shares when reading its argv: argparse without exits, the split at `--`, the
program name the user typed, and "did you mean" for a mistyped option."""

from __future__ import annotations

import argparse
import difflib
import os
import sys

from harness.errors import HarnessError

DEFAULT_PROGRAM = "retrieval-gate"


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


def program_name(subcommand: str | None = None) -> str:
    """What the user typed to start us: `python -m harness` or `retrieval-gate` (the console script),
    then the subcommand; `retrieval-gate` when called as a library (tests, embedding)."""
    launched = sys.argv[0] if sys.argv else ""
    path = os.path.normpath(launched)
    if os.path.basename(path) == "__main__.py" and os.path.basename(os.path.dirname(path)) == "harness":
        name = "python -m harness"
    elif os.path.basename(path).startswith(DEFAULT_PROGRAM):
        name = os.path.basename(path)
    else:
        name = DEFAULT_PROGRAM
    return f"{name} {subcommand}" if subcommand else name


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with "did you mean --baseline?" for an unknown option (or `sets` for a mistyped
    subcommand among `commands`), and the `--` hint when an option in `command_after` (e.g.
    `--adapter`) is followed by a command without `--` first."""

    def __init__(self, *args, command_after: tuple[str, ...] = (), commands: tuple[str, ...] = (),
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.command_after = command_after
        self.commands = commands
        self._argv: list[str] = []

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):  # type: ignore[override]
        hint = self.hint_for(message)
        super().error(message + (f"\n{hint}" if hint else ""))

    def option_strings(self) -> list[str]:
        return [option for action in self._actions for option in action.option_strings if option.startswith("--")]

    def hint_for(self, message: str) -> str:
        """The hint for argparse's `unrecognized arguments: ...` message, or ""."""
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            return ""
        unknown = message[len(prefix):].split()
        for option in self.command_after:
            if option in self._argv and "--" not in self._argv:
                command = " ".join(unknown)
                return (f"hint: put '--' between {option} and the adapter command: "
                        f"{option} -- {command}")
        if unknown and self._argv and unknown[0] == self._argv[0] and not unknown[0].startswith("-"):
            close = difflib.get_close_matches(unknown[0], self.commands, n=1, cutoff=0.6)
            if close:
                return f"hint: {unknown[0]}: did you mean the subcommand {close[0]}?"
        for word in unknown:
            if word.startswith("--"):
                name = word.split("=", 1)[0]
                close = difflib.get_close_matches(name, self.option_strings(), n=1, cutoff=0.6)
                if close:
                    return f"hint: {name}: did you mean {close[0]}?"
        return ""


def add_timeout_options(group, *, answer_help: str = "seconds to wait for each answer") -> None:
    """--timeout, --startup-timeout and --startup-limit, worded once for every command that starts an adapter."""
    from harness.adapter.process import QUERY_TIMEOUT_SECONDS, STARTUP_LIMIT_SECONDS, STARTUP_TIMEOUT_SECONDS

    group.add_argument("--timeout", type=float, default=QUERY_TIMEOUT_SECONDS, metavar="S",
                       help=f"{answer_help} (default: {QUERY_TIMEOUT_SECONDS:g})")
    group.add_argument("--startup-timeout", type=float, default=STARTUP_TIMEOUT_SECONDS, metavar="S",
                       help=f"longest silence allowed before the ready banner or first answer; each progress "
                            f"line the adapter prints restarts it (default: {STARTUP_TIMEOUT_SECONDS:g})")
    group.add_argument("--startup-limit", type=float, default=STARTUP_LIMIT_SECONDS, metavar="S",
                       help=f"longest start-up allowed however much progress the adapter reports "
                            f"(default: {STARTUP_LIMIT_SECONDS:g})")
