"""`python -m harness check-adapter [options] -- CMD ARG ...`: argv in, the conformance table out, exit code.

The checks themselves live in harness/adapter/checks.py; this module reads the options,
prepares the corpus folder given to the adapter as $HARNESS_CORPUS_DIR and prints the table.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TextIO

from harness.adapter.check_inputs import DEFAULT_KIND, PLAIN_QUERY_COUNT, prepare_corpus
from harness.adapter.checks import (CHECKS, DEFAULT_LOG, DEFAULT_QUERIES, EXIT_CHECK_FAILED, FAIL, PROG, CheckResult,
                                    Suite, run_suite)
from harness.adapter.startup import CORPUS_DIR_ENV, check_waits, describe_progress
from harness.adapter.probe import LiveAdapter
from harness.adapter.protocol import Progress
from harness.child import log_tail
from harness.commands.arguments import (SETS_DIR_HELP, HelpFormatter, add_timeout_options, example_epilog,
                                       exit_codes_epilog, parse_arguments, resolve_layout, split_adapter_command)
from harness.errors import EXIT_OK, Interrupted, UsageError
from harness.fsutil import check_outputs, names_a_stream, write_output
from harness.report.escape import terminal_line
from harness.report.terminal import CLEAR_LINE, duration_text
from harness.watchdog import guarded_temp_folder

PROGRESS_BAR_CHARS = 30
PLAIN_PROGRESS_SECONDS = 5.0  # without a terminal, at most one progress line per stage this often


def build_parser() -> argparse.ArgumentParser:
    listing = "\n".join(f"  {name:<13} {what}" for name, what in CHECKS)
    parser = argparse.ArgumentParser(
        prog=PROG, usage=f"{PROG} [options] -- CMD [ARG ...]", formatter_class=HelpFormatter,
        description="Run a conformance suite against a live adapter (its command after '--', run as an "
                    "argv, never a shell) and print a pass/fail table (exit codes below).",
        epilog=f"checks:\n{listing}\n\n" + example_epilog("check-adapter") + "\n"
               + exit_codes_epilog("check-adapter"))
    parser.add_argument("--kind", default=None,
                        help=f"the kind (corpus/index) to ask; default {DEFAULT_KIND!r}, served from a small "
                             "corpus the checker writes")
    parser.add_argument("--set", dest="set_name", default=None, metavar="NAME",
                        help="check against a query set: its kind, its corpus materialised as "
                             f"${CORPUS_DIR_ENV}, its first {PLAIN_QUERY_COUNT} queries")
    parser.add_argument("--sets-dir", type=Path, default=None, help=SETS_DIR_HELP)
    parser.add_argument("--offline", action="store_true", help="with --set: never fetch corpus archives")
    parser.add_argument("--corpus-dir", type=Path, default=None, metavar="DIR",
                        help=f"folder passed as ${CORPUS_DIR_ENV} (default: ${CORPUS_DIR_ENV} if set with "
                             "--kind, else a temp folder with the checker's corpus as <kind>.jsonl)")
    add_timeout_options(parser, answer_help="seconds allowed per answer")
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES, metavar="N",
                        help=f"queries asked in a row by the endurance check (default: {DEFAULT_QUERIES})")
    parser.add_argument("--max-rss-growth", type=float, default=None, metavar="MIB",
                        help="fail endurance when resident memory grows more than this (default: report only)")
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG,
                        help=f"file receiving the adapter's stderr (default: {DEFAULT_LOG})")
    return parser


def main(argv: list[str]) -> int:
    args_list, command = split_adapter_command(list(argv))
    args = parse_arguments(build_parser(), args_list)
    args.adapter_folder = None  # where the adapter starts: the working folder, or the config's for the config's adapter
    if not command:
        team = resolve_layout(args)
        command, args.adapter_folder = list(team.rerun.adapter), team.folder  # the config's adapter, as a run's
    if not command:
        raise UsageError(f"check-adapter: give the adapter command after '--', e.g. {PROG} -- ./my-adapter "
                         f"(or name it in the config: adapter = [...])")
    check_waits(args.timeout, args.startup_timeout, args.startup_limit, prefix="check-adapter: ")
    if args.queries < 1:
        raise UsageError(f"check-adapter: --queries: must be >= 1, got {args.queries}")
    if args.kind is not None and (not args.kind or "/" in args.kind or args.kind.startswith(".")):
        raise UsageError(f"check-adapter: --kind: {args.kind!r} cannot name a <kind>.jsonl file")
    if args.set_name is not None and args.corpus_dir is not None:
        raise UsageError("check-adapter: --set and --corpus-dir are exclusive: the set brings its corpus")
    check_outputs({"--log": args.log}, {})  # a folder, a link, an unwritable place: one line before any start
    try:
        return _check(args, command)
    except Interrupted as interrupted:
        # By now the adapter's group is killed and the temp corpus folder removed (unwinding did both).
        print(f"harness: error: {interrupted}; adapter stopped, temp folder removed", file=sys.stderr)
        return interrupted.exit_code


def render_table(results: list[CheckResult]) -> str:
    """The check-adapter table; a detail may quote the adapter (banner, error replies): shown inert."""
    width = max(len("check"), *(len(r.name) for r in results))
    lines = [f"{'check':<{width}}  result  detail"]
    lines += [f"{r.name:<{width}}  {r.result:<6}  {terminal_line(r.detail)}" for r in results]
    return "\n".join(lines)


def _check(args: argparse.Namespace, command: list[str]) -> int:
    with guarded_temp_folder("retrieval-gate-check-") as scratch:
        team = resolve_layout(args)
        kind, corpus = prepare_corpus(Path(scratch), kind=args.kind, set_name=args.set_name, sets_dir=team.sets_dir,
                                      offline=args.offline, corpus_dir=args.corpus_dir, shipped=team.shipped_sets)
        env = {CORPUS_DIR_ENV: str(corpus.folder)}
        if not names_a_stream(args.log):
            write_output(args.log, "", "--log")  # this run's log only
        printer = StartupProgressPrinter(sys.stderr)
        adapter = LiveAdapter(command, env, args.log, args.startup_timeout, args.timeout,
                              startup_limit=args.startup_limit, on_progress=printer, cwd=args.adapter_folder)
        print(f"adapter: {shlex.join(command)}")
        print(f"kind: {kind}; {CORPUS_DIR_ENV}={corpus.folder} ({corpus.note})", flush=True)
        suite = Suite(adapter, kind, corpus, args.queries, args.max_rss_growth)
        try:
            results = run_suite(suite, args.timeout)
        except BaseException:
            adapter.stop(grace_seconds=0.0)  # interrupted: no grace, kill the group now
            raise
        finally:
            printer.finish()
        adapter.stop()
    print(render_table(results))
    failed = [r for r in results if r.result == FAIL]
    restarts = f"; the adapter was started {adapter.starts} times" if adapter.starts > 1 else ""
    print(f"{len(results)} checks: {len(results) - len(failed)} passed or not judged, {len(failed)} failed{restarts}")
    print(f"adapter log (stderr): {args.log}")
    if failed:
        tail = log_tail(args.log)
        if tail:
            print("adapter stderr (last lines):")
            print("\n".join(f"  | {terminal_line(line)}" for line in tail.split("\n")))
    return EXIT_CHECK_FAILED if failed else EXIT_OK


class StartupProgressPrinter:
    """Shows an adapter's start-up progress: a bar with rate and ETA on a terminal, plain lines otherwise.

    A terminal is `stream.isatty()` with $TERM set and not "dumb". Plain lines come at most
    every PLAIN_PROGRESS_SECONDS per stage, plus each stage's first and last, so a log stays short.
    """

    def __init__(self, stream: TextIO, program: str = "check-adapter") -> None:
        self.stream = stream
        self.program = program
        term = os.environ.get("TERM", "")
        self.terminal = bool(getattr(stream, "isatty", lambda: False)()) and term not in ("", "dumb")
        self._stage: str | None = None
        self._stage_started = 0.0
        self._stage_first_done = 0
        self._printed_at = 0.0
        self._drawn = False

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        if progress.stage != self._stage:
            self._stage, self._stage_started, self._stage_first_done = progress.stage, now, progress.done
            self._printed_at = 0.0
        if self.terminal:
            self._draw(progress, now)
            return
        last = progress.total is not None and progress.done >= progress.total
        if self._printed_at == 0.0 or last or now - self._printed_at >= PLAIN_PROGRESS_SECONDS:
            self._printed_at = now
            print(f"{self.program}: starting: {terminal_line(describe_progress(progress))}", file=self.stream,
                  flush=True)

    def _draw(self, progress: Progress, now: float) -> None:
        elapsed = now - self._stage_started
        rate = (progress.done - self._stage_first_done) / elapsed if elapsed > 0 else 0.0
        stage = terminal_line(progress.stage)  # the adapter's words: never a control on our line
        text = f"{stage} {progress.done}"
        if progress.total:
            share = min(progress.done / progress.total, 1.0)
            filled = round(share * PROGRESS_BAR_CHARS)
            bar = "#" * filled + "-" * (PROGRESS_BAR_CHARS - filled)
            text = f"{stage} [{bar}] {progress.done}/{progress.total} {share:4.0%}"
            if rate > 0:
                text += f" ETA {duration_text((progress.total - progress.done) / rate)}"
        if rate > 0:
            text += f" {rate:.1f}/s"
        print(f"{CLEAR_LINE}{text}", end="", file=self.stream, flush=True)
        self._drawn = True

    def finish(self) -> None:
        """End a bar's line, so what follows starts on a fresh one."""
        if self._drawn:
            print(file=self.stream, flush=True)
            self._drawn = False
