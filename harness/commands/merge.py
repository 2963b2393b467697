"""`python -m harness merge REPORT... --out FILE`: the N shard reports as one report, re-scored and gated as a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import api
from harness.commands import crash_guard
from harness.commands.arguments import (SETS_DIR_HELP, add_gating_options, command_parser, parse_arguments,
                                       resolve_layout)
from harness.commands.outputs import (add_output_options, check_gate_outputs, check_history, record_history,
                                      update_baseline, write_outputs)
from harness.errors import UsageError
from harness.report.console import render_text
from harness.report.escape import terminal_line
from harness.report.reading import read_report

PROG = "python -m harness merge"


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "merge", "Combine the N shard reports of one run (--shard 1/N .. N/N, e.g. one CI matrix job each) "
                 "into the report the unsharded run writes: every query re-scored from the ids the shards "
                 "recorded against the sets loaded here (a shard whose recorded metrics disagree is refused), "
                 "latency percentiles over all queries, every shard's machine in provenance; then gate it "
                 "exactly as a run is gated (same policy, identity check and gates). Refuses missing, "
                 "repeated, incomplete or mismatched shards (docs/scale.md).", prog=PROG)
    parser.add_argument("reports", nargs="+", type=Path, metavar="REPORT", help="the shard reports (--out of each shard)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the merged JSON report")
    parser.add_argument("--sets-dir", type=Path, default=None, help=SETS_DIR_HELP + "; the shards' sets are re-scored")
    parser.add_argument("--offline", action="store_true", help="never fetch corpus archives; fail if not cached")
    add_gating_options(parser, "gating (as in a run)")
    output = parser.add_argument_group("output")
    add_output_options(output)
    output.add_argument("--quiet", action="store_true", help="print only gate failures")
    return parser


def main(argv: list[str]) -> int:
    args = parse_arguments(build_parser(), argv)
    team = resolve_layout(args)
    if args.update_baseline and args.no_gate:
        raise UsageError("--update-baseline and --no-gate are exclusive")
    check_history(args)
    gated = not args.no_gate and not args.update_baseline
    gating = api.GateOptions(known_contract_failures=args.known_contract_failures,
                             allow_backend_change=args.allow_backend_change)
    shards = {f"shard report {path}": path for path in args.reports}
    report = api.merge_gate([(str(path), read_report(path)) for path in args.reports], layout=team,
                            offline=args.offline, gated=gated, updating=args.update_baseline, gating=gating,
                            check_inputs=lambda inputs: check_gate_outputs(args, team.config, inputs, {}, shards))
    report = record_history(report, args, args.baseline if gated else None)
    write_outputs(report, args)
    if not args.quiet:
        for warning in report.warnings:
            print(f"harness: warning: {terminal_line(warning)}", file=sys.stderr)
    try:
        if not args.quiet:
            print(render_text(report), end="")
            print(f"merged {len(args.reports)} shards: {args.out}")
        else:
            for gate in report.failed_gates:
                print(f"FAIL {gate.gate} {terminal_line(gate.message)}")
    except BrokenPipeError:
        crash_guard.silence_closed_stdout()  # `| head`: the merged report is written; its verdict stays the exit code
    if args.update_baseline:
        return update_baseline(args, report)
    return report.exit_code
