"""`python -m harness merge REPORT... --out FILE`: the N shard reports as one report, gated like a run."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import api
from harness.commands import guard
from harness.commands.arguments import HelpFormatter, example_epilog, exit_codes_epilog, parse_arguments
from harness.commands.cli import _update_baseline, _write_outputs
from harness.errors import UsageError
from harness.fsutil import check_outputs
from harness.report.console import render_text
from harness.report.document import read_report
from harness.report.merge import gate_merged, merge_reports

PROG = "python -m harness merge"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Combine the N shard reports of one run (--shard 1/N .. N/N, e.g. one CI matrix job each) "
                    "into the report the unsharded run writes: the same per-query records and aggregates, "
                    "latency percentiles over all queries, every shard's machine in provenance; then gate it "
                    "as a run is gated. Refuses missing, repeated, incomplete or mismatched shards "
                    "(docs/scale.md).",
        formatter_class=HelpFormatter, epilog=example_epilog("merge") + "\n" + exit_codes_epilog("merge"))
    parser.add_argument("reports", nargs="+", type=Path, metavar="REPORT", help="the shard reports (--out of each shard)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the merged JSON report")
    gate = parser.add_argument_group("gating (as in a run)")
    gate.add_argument("--baseline", type=Path, default=api.DEFAULT_BASELINE,
                      help=f"baseline to gate against (default: {api.DEFAULT_BASELINE})")
    gate.add_argument("--budgets", type=Path, default=None,
                      help=f"latency budgets file (default: {api.DEFAULT_BUDGETS}, 300 ms p95 when absent)")
    gate.add_argument("--update-baseline", action="store_true",
                      help="write the merged numbers to --baseline (atomically)")
    gate.add_argument("--yes", action="store_true", help="with --update-baseline: write without asking")
    gate.add_argument("--known-contract-failures", action="store_true",
                      help="contracts the baseline already records as broken are reported, not failed")
    gate.add_argument("--no-gate", action="store_true", help="merge and report only")
    output = parser.add_argument_group("output")
    output.add_argument("--summary", type=Path, default=None, help="Markdown summary path")
    output.add_argument("--junit", type=Path, default=None, help="JUnit XML: one test case per gate per set")
    output.add_argument("--html", type=Path, default=None, help="self-contained HTML report")
    output.add_argument("--quiet", action="store_true", help="print only gate failures")
    return parser


def main(argv: list[str]) -> int:
    args = parse_arguments(build_parser(), argv)
    if args.update_baseline and args.no_gate:
        raise UsageError("--update-baseline and --no-gate are exclusive")
    # An output naming a shard report (or the budgets, or the baseline gated against) would replace it.
    check_outputs({"--out": args.out, "--summary": args.summary, "--junit": args.junit, "--html": args.html},
                  {**{f"shard report {path}": path for path in args.reports}, "--budgets": args.budgets,
                   "--baseline": None if args.update_baseline else args.baseline})
    merged = merge_reports([(str(path), read_report(path)) for path in args.reports])
    gated = not args.no_gate and not args.update_baseline
    result = gate_merged(merged, baseline=args.baseline if gated else None,
                         budgets=args.budgets if args.budgets is not None else api.DEFAULT_BUDGETS,
                         budgets_required=args.budgets is not None,
                         known_contract_failures=args.known_contract_failures)
    report = result.report
    _write_outputs(report, args, result)
    try:
        if not args.quiet:
            print(render_text(report), end="")
            print(f"merged {len(args.reports)} shards: {args.out}")
        else:
            for gate in report.failed_gates:
                print(f"FAIL {gate.gate} {gate.message}")
    except BrokenPipeError:
        guard.silence_closed_stdout()  # `| head`: the merged report is written; its verdict stays the exit code
    if args.update_baseline:
        return _update_baseline(args, report)
    return report.exit_code
