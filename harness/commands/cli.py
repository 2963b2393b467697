"""Command line: parse arguments, run, print, and pick the exit code. The only module that prints errors."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from pathlib import Path

from harness import __version__, api
from harness.adapter.backends import BACKENDS, DEFAULT_BACKEND
from harness.commands.arguments import (ArgumentParser, add_timeout_options, example_epilog, exit_codes_epilog, parse_arguments,
                                       program_name, split_adapter_command)
from harness.commands import guard
from harness.commands.check_adapter import StartupProgressPrinter
from harness.errors import EXIT_CONFIG, EXIT_INTERNAL, EXIT_OK, HarnessError, UsageError
from harness.interrupts import signals_raise_interrupted
from harness.sets.loader import protected_files
from harness.fsutil import append_output, check_outputs, step_summary_target, write_output
from harness.api import EXECUTORS
from harness.adapter.windows import DEFAULT_MAX_WINDOW
from harness.report.comparison import render_pair_text
from harness.report.console import render_text, render_what_if
from harness.report.document import Backend, Provenance, Report, SetSource
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown
from harness.report.terminal import COLOR_MODES, ProgressLine, Style, is_dumb, wants_colour

DEFAULT_OUT = Path(".retrieval-gate/report.json")
SUBCOMMANDS = {
    "sets": "harness.commands.sets",
    "metrics": "harness.commands.metrics",
    "check-adapter": "harness.commands.check_adapter",
    "compare": "harness.commands.compare",
    "export": "harness.commands.export",
    "baselines": "harness.commands.baselines",
    "merge": "harness.commands.merge",
}
EXAMPLES = """\
examples:
  %(prog)s --set all                          BM25 over every shipped set, gated against baselines/current.json
  %(prog)s --set code --backend onnx --baseline baselines/onnx.json
  %(prog)s --set memory --adapter --expect-banner -- ./my-adapter --index prod
  %(prog)s --set all --update-baseline        accept the current numbers (commit the file)
  %(prog)s --set dedupe --no-gate --out run.json --summary summary.md --junit gates.xml --html report.html
  %(prog)s sets list | sets show NAME | sets verify [NAME] | sets pin NAME
  %(prog)s metrics                            list metric names
  %(prog)s baselines                          committed baselines side by side (Markdown)
  %(prog)s compare base.json cand.json [more.json ...]   verdict, Holm headline, equivalence, latency
  %(prog)s export report.json --trec-run run.txt --trec-qrels qrels.txt   for trec_eval -c -M 10
  %(prog)s --set code --run-file run.txt      evaluate a precomputed TREC run (no adapter, no latency gate)
  %(prog)s sets import-beir ./scifact --name scifact   turn a BEIR folder into a set
  %(prog)s check-adapter --kind code -- ./my-adapter   conformance suite for your adapter
"""


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=program_name(), command_after=("--adapter",), commands=tuple(SUBCOMMANDS),
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=example_epilog("run") + "\n" + EXAMPLES + "\n" + exit_codes_epilog("run"),
        description="Measure a search backend's retrieval quality and latency on versioned query "
                    "sets, and fail when recall@10 drops, p95 latency exceeds its budget, the query "
                    "count changes or a hard contract breaks. Subcommands: "
                    + ", ".join(sorted(SUBCOMMANDS)) + ".")
    parser.add_argument("--version", action="version", version=f"retrieval-gate {__version__}")
    what = parser.add_argument_group("what to run")
    what.add_argument("--set", dest="sets", action="append", metavar="NAME", default=[],
                      help="set name under --sets-dir, a set folder, or 'all' (repeatable)")
    what.add_argument("--sets-dir", type=Path, default=Path("sets"), help="where named sets live (default: sets)")
    what.add_argument("--backend", choices=sorted(BACKENDS), default=None,
                      help=f"a built-in reference adapter (default: {DEFAULT_BACKEND})")
    what.add_argument("--adapter", action="store_true",
                      help="run your own adapter: its command follows after '--' (argv, never a shell)")
    what.add_argument("--run-file", type=Path, default=None, metavar="RUN",
                      help="evaluate a precomputed TREC run file instead of asking an adapter (latency gates skipped)")
    what.add_argument("--expect-banner", action="store_true",
                      help="fail unless the adapter prints its ready banner first (built-in backends always do)")
    what.add_argument("--k", type=int, default=None, help="ids to ask for per query (default: each set's k)")
    what.add_argument("--offline", action="store_true", help="never fetch corpus archives; fail if not cached")
    gate = parser.add_argument_group("gating")
    gate.add_argument("--baseline", type=Path, default=Path("baselines/current.json"),
                      help="baseline to gate against (default: baselines/current.json)")
    gate.add_argument("--budgets", type=Path, default=None,
                      help="latency budgets file (default: budgets.json, 300 ms p95 when absent)")
    gate.add_argument("--policy", type=Path, default=None,
                      help="gate policy file: gated metrics, drop limit, category and significance rules "
                           "(default: gate-policy.json when present, else recall@10 may drop 2.0 points)")
    gate.add_argument("--allow-backend-change", action="store_true",
                      help="gate against a baseline recorded for another backend or model (the report records it)")
    gate.add_argument("--update-baseline", action="store_true",
                      help="write this run's numbers to --baseline (atomically; complete runs only)")
    gate.add_argument("--yes", action="store_true",
                      help="with --update-baseline: write without asking (asked only when stdin is a terminal)")
    gate.add_argument("--known-contract-failures", action="store_true",
                      help="contracts the baseline already records as broken (same query) are reported, not "
                           "failed; only new breaks fail (for backends with known, tracked limitations)")
    gate.add_argument("--no-gate", action="store_true", help="measure and report only; exit 0 unless the backend fails")
    timing = parser.add_argument_group("timing")
    add_timeout_options(timing)
    timing.add_argument("--warmup", type=int, default=0, metavar="N", help="untimed queries before measuring (default: 0)")
    timing.add_argument("--repeats", type=int, default=1, metavar="N",
                        help="ask each query N times; its latency is the median (default: 1)")
    timing.add_argument("--workers", type=int, default=1, metavar="N",
                        help="N adapter processes answer shards of each set at once (throughput on large sets; "
                             "latency is then measured under concurrency) (default: 1)")
    timing.add_argument("--max-window", type=int, default=DEFAULT_MAX_WINDOW, metavar="CHARS",
                        help="longest passage window an answer may show, in characters; longer is a protocol "
                             f"error (default: {DEFAULT_MAX_WINDOW})")
    timing.add_argument("--condition", choices=("cold", "warm"), default=None,
                        help="record the cache condition of this run, as given (never inferred)")
    output = parser.add_argument_group("output")
    output.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"JSON report path; the adapter's stderr log goes beside it (default: {DEFAULT_OUT})")
    output.add_argument("--summary", type=Path, default=None,
                        help="Markdown summary path (also appended to $GITHUB_STEP_SUMMARY when set)")
    output.add_argument("--junit", type=Path, default=None, help="JUnit XML: one test case per gate per set")
    output.add_argument("--html", type=Path, default=None,
                        help="self-contained HTML report with latency and per-category charts")
    output.add_argument("--what-if-min-score", type=float, default=None, metavar="X",
                        help="report only: metrics if hits scoring below X were dropped (needs adapter scores)")
    output.add_argument("--quiet", action="store_true", help="print only gate failures and errors")
    _add_terminal_options(output)
    _add_scale_arguments(parser)
    return parser


def _add_terminal_options(output: argparse._ArgumentGroup) -> None:
    output.add_argument("-v", "--verbose", action="store_true", help="list every passing gate, not just their count")
    output.add_argument("--color", choices=COLOR_MODES, default="auto",
                        help="colour the console output: auto (a terminal, unless NO_COLOR is set or "
                             "TERM=dumb), always or never (default: auto)")


def main(argv: list[str] | None = None) -> int:
    """Every command's entry point: argv in, exit code out; no traceback ever reaches the user.

    A HarnessError is one `harness: error:` line and its code; SIGINT outside a command's own
    handling is 130; a reader closing stdout ends quietly (harness.commands.guard); anything
    else is a bug: one line, the traceback in a file, EXIT_INTERNAL.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = args_list[0] if args_list and args_list[0] in SUBCOMMANDS else None
    with guard.thread_bugs_recorded(lambda: _traceback_path(command, args_list)) as thread_bugs:
        code = _guarded(command, args_list)
    # A bug in a helper thread (stderr drain, a worker) may have cost results: never a verdict then.
    return EXIT_INTERNAL if thread_bugs and code < 128 else code


def _guarded(command: str | None, args_list: list[str]) -> int:
    try:
        if command is not None:
            import importlib
            module = importlib.import_module(SUBCOMMANDS[command])
            # One signal policy for every command (docs/security.md): SIGINT/SIGTERM/SIGHUP unwind it,
            # so an atomic write in progress removes its temp file, and the exit is 128 + n.
            with signals_raise_interrupted():
                return module.main(args_list[1:])
        return _run(args_list)
    except HarnessError as error:
        _print_error(error)
        return error.exit_code
    except KeyboardInterrupt:
        print("harness: error: interrupted by SIGINT", file=sys.stderr)
        return 130
    except BrokenPipeError as error:
        if not guard.stdout_is_closed():
            return guard.report_internal_error(error, _traceback_path(command, args_list))
        # A subcommand's output is its result: cut short, it ends as a process killed by SIGPIPE
        # would (128 + 13), so `set -o pipefail` still sees it. The run command never gets here:
        # its verdict was decided and its report written before it printed (_run_gated).
        guard.silence_closed_stdout()
        return 128 + signal.SIGPIPE
    except Exception as error:  # noqa: BLE001 - the one place a bug is turned into a line and a code
        refused = guard.stdout_refused(error)
        if refused is not None:  # stdout read-only, closed or full: the environment, exit 2
            print(f"harness: error: {refused}", file=sys.stderr)
            return EXIT_CONFIG
        return guard.report_internal_error(error, _traceback_path(command, args_list))


def _traceback_path(command: str | None, args_list: list[str]) -> Path:
    """`.retrieval-gate/<command>.traceback.txt` for a subcommand; beside --out for the run command."""
    if command is not None:
        return guard.subcommand_traceback_path(command)
    try:
        out = _parse(args_list)[0].out
    except Exception:  # noqa: BLE001 - the bug may be in parsing itself: use the default place
        out = DEFAULT_OUT
    return guard.run_traceback_path(out)


def _parse(args_list: list[str]) -> tuple[argparse.Namespace, list[str]]:
    args_list, adapter_argv = split_adapter_command(args_list)
    args = parse_arguments(build_parser(), args_list)
    if args.adapter and not adapter_argv:
        raise UsageError("--adapter: write the adapter command after '--', e.g. --adapter -- ./my-adapter --flag")
    if adapter_argv and not args.adapter:
        raise UsageError("a command after '--' needs --adapter")
    if sum(bool(x) for x in (args.adapter, args.backend, args.run_file)) > 1:
        raise UsageError("--adapter, --backend and --run-file are exclusive: give one source of rankings")
    if args.update_baseline and args.no_gate:
        raise UsageError("--update-baseline and --no-gate are exclusive")
    return args, adapter_argv


def _run(args_list: list[str]) -> int:
    """The default command: argv -> the API -> the outputs -> the report's exit code."""
    args, adapter_argv = _parse(args_list)
    # SIGINT, SIGTERM (CI cancelling a job) and SIGHUP (terminal closed) unwind the run: the
    # adapter's group is stopped, the temp corpus folder removed and a partial report written.
    with signals_raise_interrupted():
        return _run_gated(args, adapter_argv)


def _run_gated(args: argparse.Namespace, adapter_argv: list[str]) -> int:
    log_path = guard.beside_out(args.out, ".adapter.log")
    options = api.GateOptions(
        k=args.k, expect_banner=args.expect_banner, query_timeout=args.timeout, startup_timeout=args.startup_timeout,
        warmup=args.warmup, repeats=args.repeats, workers=args.workers, condition=args.condition,
        known_contract_failures=args.known_contract_failures, what_if_min_score=args.what_if_min_score,
        log_path=log_path, allow_backend_change=args.allow_backend_change, startup_limit=args.startup_limit,
        on_startup_progress=None if args.quiet else StartupProgressPrinter(sys.stderr, "harness"),
        max_window=args.max_window, **_scale_options(args))
    gated = not args.no_gate and not args.update_baseline and args.shard is None
    inputs = api.load_inputs(args.sets or ["all"], sets_dir=args.sets_dir, offline=args.offline,
                             budgets=args.budgets, baseline=args.baseline if gated else None, k=args.k,
                             policy=args.policy)
    # Every output checked before the first query: a typo must not cost a whole run.
    check_outputs({"--out": args.out, "adapter log": log_path, "--junit": args.junit, "--html": args.html,
                   "--summary": args.summary},
                  {"--baseline": args.baseline, "--budgets": args.budgets or api.DEFAULT_BUDGETS,
                   "--policy": args.policy, "--run-file": args.run_file, **protected_files(inputs.query_sets)})
    step_summary_target()
    progress = _progress_printer(args)
    report: Report | None = None
    try:
        report = api.run_gate(inputs, backend=adapter_argv if args.adapter else args.backend,
                              run_file=args.run_file, options=options, progress=progress)
        if progress:
            progress.finish()
        _write_outputs(report, args, inputs)
    except HarnessError:
        raise
    except Exception as error:
        # A bug after the sets were loaded: CI still gets its artifact, a report saying what happened.
        _write_crash_report(error, args, inputs, adapter_argv, report)
        raise
    try:
        _print_run(report, args, inputs, log_path)
    except BrokenPipeError:
        # `... | head -1`: the reader has gone, the report is written; the run's verdict stays its exit code.
        guard.silence_closed_stdout()
    if report.error is not None:
        return report.exit_code
    if args.update_baseline:
        return _update_baseline(args, report)
    return report.exit_code


def _write_outputs(report: Report, args: argparse.Namespace, inputs: api.GateInputs) -> None:
    """Every output the options asked for, each written atomically."""
    write_output(args.out, report.to_json(), "--out")
    if args.junit:
        write_output(args.junit, render_junit(report), "--junit")
    if args.html:
        from harness.report.html import render_run_html
        write_output(args.html, render_run_html(report, inputs.baseline_entries, inputs.budgets_ms,
                                                inputs.default_budget_ms), "--html")
    markdown = render_markdown(report, inputs.baseline_entries)
    if args.summary:
        write_output(args.summary, markdown, "--summary")
    step_summary = step_summary_target()
    if step_summary:
        append_output(step_summary, markdown, "$GITHUB_STEP_SUMMARY")


def _write_crash_report(error: Exception, args: argparse.Namespace, inputs: api.GateInputs,
                        adapter_argv: list[str], report: Report | None) -> None:
    """The partial report of a run a bug stopped: its results when the run had finished (the bug was
    in an output), else the sets loaded and no results; `complete: false`, `error` the internal-error
    line, `exit_code` EXIT_INTERNAL. Best effort: it must not mask the bug."""
    line = guard.internal_error_line(error, guard.run_traceback_path(args.out))
    if report is None:
        label = (" ".join(adapter_argv) if args.adapter else f"run-file {args.run_file}" if args.run_file
                 else args.backend or DEFAULT_BACKEND)
        sources = {s.name: SetSource(revision=s.revision, corpus_hash=s.corpus_hash) for s in inputs.query_sets}
        report = Report(provenance=Provenance(harness_version=__version__, started=None,
                                              backend=Backend(str(label), tuple(adapter_argv)), sets=sources),
                        sets=())
    report = dataclasses.replace(report, complete=False, error=line, exit_code=EXIT_INTERNAL)
    try:
        write_output(args.out, report.to_json(), "--out")
    except Exception:  # noqa: BLE001 - the original bug is what the user must see
        pass


def _update_baseline(args: argparse.Namespace, report: Report) -> int:
    """Show what the new baseline changes against the old one, then write it (asked on a terminal)."""
    update = api.prepare_baseline_update(report, args.baseline)
    if update.comparison is not None:
        if not args.quiet:
            print(f"\nchanges against {args.baseline}:")
            print(render_pair_text(update.comparison), end="")
        write_output(args.out, update.report_with_previous(report).to_json(), "--out")
    if not args.yes and sys.stdin.isatty():
        answer = input(f"write {args.baseline}? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("baseline not written")
            return EXIT_OK
    api.write_baseline_update(update)
    if not args.quiet:
        print(f"baseline written: {args.baseline} (sets: {', '.join(r.name for r in report.sets)}); "
              f"review and commit it to accept these numbers"
              + (f"; the replaced values are kept in {args.out} under previous_baseline" if update.previous else ""))
    return EXIT_OK


# -- what the run prints (console text, progress, warnings, errors) --------------------------------

def _console_style(args: argparse.Namespace) -> Style:
    return Style(wants_colour(args.color, sys.stdout, os.environ))


def _progress_printer(args: argparse.Namespace) -> ProgressLine | None:
    """Queries done, rate and ETA on stderr, when it is a terminal and not --quiet (plain lines on TERM=dumb)."""
    if args.quiet or not sys.stderr.isatty():
        return None
    return ProgressLine(sys.stderr, dumb=is_dumb(os.environ))


def _print_run(report: Report, args: argparse.Namespace, inputs: api.GateInputs, log_path: Path) -> None:
    """The console report, then warnings and the error on stderr, then the verdict as the last line.

    --quiet: only the failed gates (and the error) are printed.
    """
    if args.quiet:
        _print_problems(report, args)
        for gate in report.failed_gates:
            print(f"FAIL {gate.gate} {gate.message}")
        return
    written = [("partial report" if report.error is not None else "report", str(args.out))]
    if report.provenance.run_file is None:
        written.append(("adapter log", str(log_path)))
    text = render_text(report, inputs.baseline_entries, verbose=args.verbose, style=_console_style(args),
                       written=written)
    body, _, closing = text.rstrip("\n").rpartition("\n")
    print(body)
    for name, what_if in (report.what_if or {}).items():
        print(render_what_if(name, what_if))  # type: ignore[arg-type]
    sys.stdout.flush()  # on a terminal the warnings and error land between the tables and the verdict
    _print_problems(report, args)
    print(closing, flush=True)


def _print_problems(report: Report, args: argparse.Namespace) -> None:
    style = Style(wants_colour(args.color, sys.stderr, os.environ))
    if not args.quiet:
        for warning in report.warnings:
            print(f"harness: {style.paint('warn', 'warning:')} {warning}", file=sys.stderr)
    if report.error is not None:
        print(f"harness: {style.paint('fail', 'error:')} {report.error}", file=sys.stderr)
        print(f"harness: partial report written to {args.out} (complete: false)", file=sys.stderr)
    sys.stderr.flush()


# -- scale-out options (docs/scale.md) ------------------------------------------------------------

def _add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    scale = parser.add_argument_group("scale out (docs/scale.md)")
    scale.add_argument("--shard", default=None, metavar="I/N",
                       help="ask only shard I of N of every set (stable hash of the group or qid); the report is "
                            "not gated: combine and gate the N reports with `merge`")
    scale.add_argument("--executor", choices=EXECUTORS, default="local",
                       help="where the --workers adapter workers run: this machine, or Ray actors across a "
                            "cluster (extra [ray]) (default: local)")
    scale.add_argument("--ray-address", default=None, metavar="ADDR",
                       help="with --executor ray: the cluster to join (default: start a local Ray instance)")
    scale.add_argument("--worker-cpus", type=float, default=1.0, metavar="N",
                       help="with --executor ray: CPUs each worker reserves (default: 1)")
    scale.add_argument("--worker-gpus", type=float, default=0.0, metavar="N",
                       help="with --executor ray: GPUs each worker reserves, so GPU adapters land on GPU nodes "
                            "(default: 0)")


def _scale_options(args: argparse.Namespace) -> dict[str, object]:
    if args.shard is not None and args.update_baseline:
        raise UsageError("--update-baseline and --shard are exclusive: merge the shards, then update from the merge")
    return {"shard": args.shard, "executor": args.executor, "ray_address": args.ray_address,
            "worker_cpus": args.worker_cpus, "worker_gpus": args.worker_gpus}




def _print_error(error: HarnessError) -> None:
    """One `harness: error:` line; an AdapterError's message already carries argv, log path and stderr tail."""
    message = str(error)
    if message:
        print(f"harness: error: {message}", file=sys.stderr)
