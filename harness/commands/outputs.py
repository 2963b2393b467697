"""What a run and `merge` write: the output options and their writers, one table, and the baseline when asked.

A new format is its renderer plus one row of OUTPUTS. Every file is written atomically
(harness.fsutil.write_output); the Markdown summary is also appended to $GITHUB_STEP_SUMMARY
when that is set. Renderers read the report alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from harness import api
from harness.errors import EXIT_OK
from harness.fsutil import STEP_SUMMARY, append_output, check_outputs, step_summary_target, write_output
from harness.gating.budgets import DEFAULT_BUDGETS_PATH
from harness.gating.inputs import GateInputs
from harness.history.recording import record_baseline, record_run
from harness.history.store import HistoryStore
from harness.report.comparison import render_pair_text
from harness.report.document import Report
from harness.report.escape import terminal_line
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown
from harness.sets.loader import protected_files


def _html(report: Report) -> str:
    from harness.report.html import render_run_html  # the largest renderer: imported only when asked for
    return render_run_html(report)


# (option, args attribute, help, renderer); --out is the JSON report every run writes.
OUTPUTS: tuple[tuple[str, str, str, Callable[[Report], str]], ...] = (
    ("--summary", "summary", "Markdown summary path (also appended to $GITHUB_STEP_SUMMARY when set)",
     render_markdown),
    ("--junit", "junit", "JUnit XML: one test case per gate per set", render_junit),
    ("--html", "html", "self-contained HTML report with latency and per-category charts", _html),
)


def add_output_options(group: argparse._ArgumentGroup) -> None:
    """--summary, --junit, --html and --history, as every command writing a run report offers them."""
    for option, dest, help_text, _ in OUTPUTS:
        group.add_argument(option, dest=dest, type=Path, default=None, help=help_text)
    group.add_argument("--history", type=Path, default=None, metavar="FILE",
                       help="append this run (and the baseline it is gated against, or writes) to the history store "
                            "FILE, created when missing, and warn when a gated figure drifted over the accepted "
                            "baselines (docs/history.md) (default: the config's `history`, else none)")


def check_history(args: argparse.Namespace) -> None:
    """The history store is checked (or created) before the first query: a damaged one stops the run now."""
    if args.history is not None:
        HistoryStore.for_append(args.history).close()


def record_history(report: Report, args: argparse.Namespace, baseline: Path | None) -> Report:
    """With --history: the run appended with the baseline it was gated against; the report with its drift gates."""
    if args.history is None:
        return report
    recorded = record_run(args.history, report, baseline=baseline)
    if not args.quiet:
        for note in recorded.notes:
            print(f"harness: {terminal_line(note)}", file=sys.stderr)
    return recorded.report


def check_gate_outputs(args: argparse.Namespace, config: Path | None, inputs: GateInputs,
                       outputs: Mapping[str, Path | None], reads: Mapping[str, Path | None]) -> None:
    """Every output of a run or `merge` ($GITHUB_STEP_SUMMARY included) checked before any work (a typo must not
    cost a whole run): none may name another, a file the command reads (`reads`, the budgets, the policy, the
    config, the sets' files) nor the baseline, an input, or with --update-baseline an output (never the shipped
    data, a link, a folder)."""
    baseline = {"--baseline": args.baseline}
    check_outputs({"--out": args.out, **{option: getattr(args, dest) for option, dest, _, _ in OUTPUTS},
                   STEP_SUMMARY: step_summary_target(), **outputs, **(baseline if args.update_baseline else {})},
                  {**reads, **({} if args.update_baseline else baseline),
                   "--budgets": args.budgets or DEFAULT_BUDGETS_PATH, "--policy": args.policy, "config": config,
                   **protected_files(inputs.query_sets)})


def write_outputs(report: Report, args: argparse.Namespace) -> None:
    """The JSON report, then every output the options asked for, each written atomically."""
    write_output(args.out, report.to_json(), "--out")
    for option, dest, _, render in OUTPUTS:
        if getattr(args, dest):
            write_output(getattr(args, dest), render(report), option)
    step_summary = step_summary_target()
    if step_summary:
        append_output(step_summary, render_markdown(report), STEP_SUMMARY)


def update_baseline(args: argparse.Namespace, report: Report) -> int:
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
    if args.history is not None:
        recorded = record_baseline(args.history, Path(args.baseline), [r.name for r in report.sets], report)
        for note in () if args.quiet else recorded.notes:
            print(f"harness: {terminal_line(note)}", file=sys.stderr)
        for warning in recorded.warnings:  # a drift this re-baseline made is said even with --quiet
            print(f"harness: warning: {terminal_line(warning)}", file=sys.stderr)
    return EXIT_OK
