"""`python -m harness compare BASE.json CAND.json`: per-query comparison with paired significance."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.report.views import load_run
from harness.scoring.compare import TESTED_METRICS, compare, mismatches, render_text
from harness.scoring.evaluate import report_metric_name
from harness.errors import EXIT_OK, UsageError
from harness.commands.arguments import HelpFormatter, exit_codes_epilog, parse_arguments, program_name
from harness.fsutil import atomic_write_text, check_outputs, strict_json_dumps
from harness.scoring.stats import RESAMPLES


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog=program_name("compare"),
        description="Compare two reports (or baselines) set by set: metric deltas per category and split, "
                    "flipped queries, paired bootstrap 95%% CI and randomization p-values (Holm-corrected) "
                    "for recall@10 and nDCG@10.",
        formatter_class=HelpFormatter, epilog=exit_codes_epilog("compare"))
    parser.add_argument("base", type=Path)
    parser.add_argument("candidate", type=Path)
    parser.add_argument("--seed", type=int, default=0, help="random seed for the resampling (default: 0)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help=f"resamples (default: {RESAMPLES})")
    parser.add_argument("--metric", action="append", default=None, metavar="NAME",
                        help="metric to test for significance (repeatable; ours or ir_measures spelling: "
                             "R@10, nDCG@10, RR@10, P@10; default recall@10 and ndcg@10)")
    parser.add_argument("--allow-mismatch", action="store_true",
                        help="compare even when set revisions, corpora, k or metric definitions differ (labelled)")
    parser.add_argument("--json", type=Path, default=None, help="also write the comparison as JSON")
    parser.add_argument("--html", type=Path, default=None, help="also write a self-contained HTML page")
    args = parse_arguments(parser, argv)
    if args.resamples < 1:
        raise UsageError("--resamples: must be >= 1")
    # Found by tests/test_fuzz.py: `--json BASE` silently replaced an input with the comparison.
    check_outputs({"--json": args.json, "--html": args.html}, {"base": args.base, "candidate": args.candidate})
    base, candidate = load_run(args.base), load_run(args.candidate)
    problems = mismatches(base, candidate)
    if problems and not args.allow_mismatch:
        raise UsageError("runs are not comparable: " + "; ".join(problems) + " (use --allow-mismatch to compare anyway)")
    tested = TESTED_METRICS
    if args.metric:
        try:
            tested = tuple(dict.fromkeys(report_metric_name(name) for name in args.metric))
        except ValueError as exc:
            raise UsageError(f"--metric: {exc}") from None
    comparison = compare(base, candidate, seed=args.seed, resamples=args.resamples, tested=tested)
    print(render_text(comparison), end="")
    if args.json:
        atomic_write_text(args.json, strict_json_dumps(comparison.to_dict(), what="comparison", indent=1, ensure_ascii=False) + "\n")
    if args.html:
        from harness.report.html import render_comparison_html
        atomic_write_text(args.html, render_comparison_html(comparison, base, candidate))
    return EXIT_OK
