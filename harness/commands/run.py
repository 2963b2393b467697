"""The run command (`python -m harness --set ...`): argv -> harness.api.run_gate -> the outputs -> the exit code."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
from pathlib import Path

from harness import api
from harness.adapter.backends import BACKENDS, DEFAULT_BACKEND, backend_argv
from harness.adapter.options import EXECUTORS
from harness.adapter.windows import DEFAULT_MAX_WINDOW
from harness.commands import crash_guard
from harness.commands.arguments import (SUBCOMMANDS, ArgumentParser, add_gating_options, add_source_options,
                                       add_timeout_options, configured_source, example_epilog, exit_codes_epilog,
                                       parse_with_adapter, program_name, resolve_layout)
from harness.commands.check_adapter import StartupProgressPrinter
from harness.commands.outputs import (add_output_options, check_gate_outputs, check_history, record_history,
                                      update_baseline, write_outputs)
from harness.errors import EXIT_INTERNAL, HarnessError, UsageError
from harness.fsutil import write_output
from harness.gating.inputs import GateInputs
from harness.layout import DEFAULT_WORKERS, Layout
from harness.report.console import render_text, render_what_if
from harness.report.document import Backend, Provenance, Report, SetSource
from harness.report.escape import terminal_block, terminal_line
from harness.report.terminal import COLOR_MODES, ProgressLine, Style, is_dumb, wants_colour
from harness.version import __version__

DEFAULT_OUT = Path(".retrieval-gate/report.json")
EXAMPLES = """\
examples:
  %(prog)s --set all                          BM25 over the baseline's sets (docs/commands.md)
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
    add_source_options(what, run_file=True)
    add_gating_options(parser)
    timing = parser.add_argument_group("timing")
    add_timeout_options(timing)
    timing.add_argument("--warmup", type=int, default=0, metavar="N", help="untimed queries before measuring (default: 0)")
    timing.add_argument("--repeats", type=int, default=1, metavar="N",
                        help="ask each query N times; its latency is the median (default: 1)")
    timing.add_argument("--workers", type=int, default=None, metavar="N",
                        help="N adapter processes answer shards of each set at once (throughput on large sets; "
                             "latency is then measured under concurrency) (default: the config's `workers`, else 1)")
    paired = timing.add_mutually_exclusive_group()
    paired.add_argument("--baseline-adapter", default=None, metavar="COMMAND",
                        help="the baseline's backend (one string, split as a shell would, never run through one), "
                             "timed beside the run's query by query, both on one CPU: a paired latency verdict "
                             "(docs/gate.md, \"Paired latency\") (default: the config's `baseline_adapter`)")
    paired.add_argument("--baseline-backend", choices=sorted(BACKENDS), default=None,
                        help="a built-in backend as the baseline's, timed as --baseline-adapter")
    timing.add_argument("--max-window", type=int, default=DEFAULT_MAX_WINDOW, metavar="CHARS",
                        help="longest passage window an answer may show, in characters; longer is a protocol "
                             f"error (default: {DEFAULT_MAX_WINDOW})")
    timing.add_argument("--condition", choices=("cold", "warm"), default=None,
                        help="record the cache condition of this run, as given (never inferred)")
    output = parser.add_argument_group("output")
    output.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"JSON report path; the adapter's stderr log goes beside it (default: {DEFAULT_OUT})")
    add_output_options(output)
    output.add_argument("--what-if-min-score", type=float, default=None, metavar="X",
                        help="report only: metrics if hits scoring below X were dropped (needs adapter scores)")
    output.add_argument("--quiet", action="store_true", help="print only gate failures and errors")
    output.add_argument("-v", "--verbose", action="store_true", help="list every passing gate, not just their count")
    output.add_argument("--color", choices=COLOR_MODES, default="auto",
                        help="colour the console output: auto (a terminal, unless NO_COLOR is set or "
                             "TERM=dumb), always or never (default: auto)")
    _add_scale_arguments(parser)
    return parser


def parse(args_list: list[str]) -> tuple[argparse.Namespace, list[str]]:
    args, adapter_argv = parse_with_adapter(build_parser(), args_list)
    if sum(bool(x) for x in (args.adapter, args.backend, args.run_file)) > 1:
        raise UsageError("--adapter, --backend and --run-file are exclusive: give one source of rankings")
    if args.update_baseline and args.no_gate:
        raise UsageError("--update-baseline and --no-gate are exclusive")
    if args.shard is not None and args.update_baseline:
        raise UsageError("--update-baseline and --shard are exclusive: merge the shards, then update from the merge")
    return args, adapter_argv


def _baseline_adapter(args: argparse.Namespace, team: Layout) -> tuple[tuple[str, ...], Path | None]:
    """The baseline's backend to time beside the run's and the folder it starts in: --baseline-backend's or
    --baseline-adapter's argv (the working folder), else the config's `baseline_adapter` (the config's folder);
    () for none (latency compared across runs)."""
    if args.baseline_backend is not None:
        return tuple(backend_argv(args.baseline_backend)), None
    if args.baseline_adapter is not None:
        try:
            argv = shlex.split(args.baseline_adapter)
        except ValueError as exc:
            raise UsageError(f"--baseline-adapter: {exc}") from None
        if not argv:
            raise UsageError("--baseline-adapter: the command is empty")
        return tuple(argv), None
    return team.baseline_adapter, team.folder if team.baseline_adapter else None


def main(args_list: list[str]) -> int:
    """The default command: argv -> the API -> the outputs -> the report's exit code."""
    args, adapter_argv = parse(args_list)
    log_path = crash_guard.beside_out(args.out, ".adapter.log")
    team = resolve_layout(args, adapter_argv)
    adapter_argv = configured_source(args, team, adapter_argv)
    if args.workers is None:
        args.workers = team.workers or DEFAULT_WORKERS
    baseline_adapter, baseline_folder = _baseline_adapter(args, team)
    options = api.RunOptions(
        k=args.k, expect_banner=args.expect_banner, query_timeout=args.timeout, startup_timeout=args.startup_timeout,
        warmup=args.warmup, repeats=args.repeats, workers=args.workers, log_path=log_path,
        startup_limit=args.startup_limit,
        on_startup_progress=None if args.quiet else StartupProgressPrinter(sys.stderr, "harness"),
        max_window=args.max_window, executor=args.executor, ray_address=args.ray_address,
        worker_cpus=args.worker_cpus, worker_gpus=args.worker_gpus, adapter_folder=args.adapter_folder,
        baseline_adapter=baseline_adapter, baseline_adapter_folder=baseline_folder)
    gating = api.GateOptions(known_contract_failures=args.known_contract_failures,
                             allow_backend_change=args.allow_backend_change, condition=args.condition,
                             what_if_min_score=args.what_if_min_score, shard=args.shard)
    gated = not args.no_gate and not args.update_baseline and args.shard is None
    inputs = api.load_inputs(args.sets or ["all"], layout=team, offline=args.offline, k=args.k, gated=gated,
                             updating=args.update_baseline)
    check_gate_outputs(args, team.config, inputs, {"adapter log": log_path}, {"--run-file": args.run_file})
    check_history(args)
    # Queries done, rate and ETA on stderr, when it is a terminal and not --quiet (plain lines on TERM=dumb).
    progress = None if args.quiet or not sys.stderr.isatty() else ProgressLine(sys.stderr, dumb=is_dumb(os.environ))
    report: Report | None = None
    try:
        report = api.run_gate(inputs, backend=adapter_argv if args.adapter else args.backend,
                              run_file=args.run_file, options=options, gating=gating, progress=progress)
        if progress:
            progress.finish()
        report = record_history(report, args, args.baseline if gated else None)
        write_outputs(report, args)
    except HarnessError:
        raise
    except Exception as error:
        # A bug after the sets were loaded: CI still gets its artifact, a report saying what happened.
        _write_crash_report(error, args, inputs, adapter_argv, report)
        raise
    try:
        _print_run(report, args, log_path)
    except BrokenPipeError:
        # `... | head -1`: the reader has gone, the report is written; the run's verdict stays its exit code.
        crash_guard.silence_closed_stdout()
    if report.error is not None:
        return report.exit_code
    if args.update_baseline:
        return update_baseline(args, report)
    return report.exit_code


def _write_crash_report(error: Exception, args: argparse.Namespace, inputs: GateInputs,
                        adapter_argv: list[str], report: Report | None) -> None:
    """The partial report of a run a bug stopped: its results when the run had finished (the bug was
    in an output), else the sets loaded and no results; `complete: false`, `error` the internal-error
    line, `exit_code` EXIT_INTERNAL. Best effort: it must not mask the bug."""
    line = crash_guard.internal_error_line(error, crash_guard.run_traceback_path(args.out))
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


# -- what the run prints (console text, progress, warnings, errors) --------------------------------

def _print_run(report: Report, args: argparse.Namespace, log_path: Path) -> None:
    """The console report, then warnings and the error on stderr, then the verdict as the last line.

    --quiet: only the failed gates (and the error) are printed.
    """
    if args.quiet:
        _print_problems(report, args)
        for gate in report.failed_gates:
            print(f"FAIL {gate.gate} {terminal_line(gate.message)}")
        return
    written = [("partial report" if report.error is not None else "report", str(args.out))]
    if report.provenance.run_file is None:
        written.append(("adapter log", str(log_path)))
    style = Style(wants_colour(args.color, sys.stdout, os.environ))
    text = render_text(report, verbose=args.verbose, style=style, written=written)
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
            print(f"harness: {style.paint('warn', 'warning:')} {terminal_line(warning)}", file=sys.stderr)
    if report.error is not None:
        # the error's first line may quote the adapter, the rest is its stderr tail: shown inert
        print(f"harness: {style.paint('fail', 'error:')} {terminal_block(report.error)}", file=sys.stderr)
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
