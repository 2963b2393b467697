"""Command line: dispatch argv to a command, and turn what escapes it into one error line and an exit code."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from harness.commands import crash_guard, run
from harness.commands.arguments import SUBCOMMANDS
from harness.errors import EXIT_CONFIG, EXIT_INTERNAL, HarnessError
from harness.interrupts import signals_raise_interrupted
from harness.report.escape import terminal_block
from harness.version import foreign_package


def main(argv: list[str] | None = None) -> int:
    """Every command's entry point: argv in, exit code out; no traceback ever reaches the user.

    A HarnessError is one `harness: error:` line and its code; SIGINT outside a command's own
    handling is 130; a reader closing stdout ends quietly (harness.commands.crash_guard); anything
    else is a bug: one line, the traceback in a file, EXIT_INTERNAL.
    """
    foreign = foreign_package()
    if foreign is not None:  # another distribution's `harness` replaced ours: say so, not an AttributeError
        print(f"harness: error: {foreign}", file=sys.stderr)
        return EXIT_CONFIG
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = args_list[0] if args_list and args_list[0] in SUBCOMMANDS else None
    with crash_guard.thread_bugs_recorded(lambda: _traceback_path(command, args_list)) as thread_bugs:
        code = _guarded(command, args_list)
    # A bug in a helper thread (stderr drain, a worker) may have cost results: never a verdict then.
    return EXIT_INTERNAL if thread_bugs and code < 128 else code


def _guarded(command: str | None, args_list: list[str]) -> int:
    try:
        # One signal policy for every command (docs/security.md): SIGINT, SIGTERM (CI cancelling a job) and
        # SIGHUP (terminal closed) unwind it, so adapter and pip groups are stopped, temp folders and an atomic
        # write's temp file removed, a run's partial report written; the exit is 128 + n.
        with signals_raise_interrupted():
            if command is None:
                return run.main(args_list)
            import importlib
            return importlib.import_module(SUBCOMMANDS[command]).main(args_list[1:])
    except HarnessError as error:
        # One line; an AdapterError's already carries argv, log path and stderr tail. It may quote an
        # adapter, a set or a report: its controls are shown escaped (terminal_block).
        message = terminal_block(str(error))
        if message:
            print(f"harness: error: {message}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("harness: error: interrupted by SIGINT", file=sys.stderr)
        return 130
    except BrokenPipeError as error:
        if not crash_guard.stdout_is_closed():
            return crash_guard.report_internal_error(error, _traceback_path(command, args_list))
        # A subcommand's output is its result: cut short, it ends as a process killed by SIGPIPE
        # would (128 + 13), so `set -o pipefail` still sees it. The run command never gets here:
        # its verdict was decided and its report written before it printed (run.main).
        crash_guard.silence_closed_stdout()
        return 128 + signal.SIGPIPE
    except Exception as error:  # noqa: BLE001 - the one place a bug is turned into a line and a code
        refused = crash_guard.stdout_refused(error) or crash_guard.file_refused(error)
        if refused is not None:  # stdout or a file read-only, closed or full: the environment, exit 2
            print(f"harness: error: {refused}", file=sys.stderr)
            return EXIT_CONFIG
        return crash_guard.report_internal_error(error, _traceback_path(command, args_list))


def _traceback_path(command: str | None, args_list: list[str]) -> Path:
    """`.retrieval-gate/<command>.traceback.txt` for a subcommand; beside --out for the run command."""
    if command is not None:
        return crash_guard.TRACEBACK_FOLDER / f"{command}.traceback.txt"
    try:
        out = run.parse(args_list)[0].out
    except Exception:  # noqa: BLE001 - the bug may be in parsing itself: use the default place
        out = run.DEFAULT_OUT
    return crash_guard.run_traceback_path(out)
