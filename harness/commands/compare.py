"""`python -m harness compare BASE CAND [CAND ...]`: every candidate against the base, paired per query."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from harness.commands.arguments import command_parser, metric_names, parse_arguments
from harness.errors import EXIT_OK, UsageError
from harness.fsutil import STEP_SUMMARY, append_output, check_outputs, step_summary_target, write_output
from harness.strict_json import strict_json_dumps
from harness.gating.policy import load_policy
from harness.report.comparison import render_junit, render_markdown, render_text
from harness.report.views import load_run
from harness.scoring.compare import compare_many, mismatches
from harness.scoring.evaluate import report_metric_name
from harness.scoring.stats import MAX_RESAMPLES, RESAMPLES

EPILOG = """\
The headline (Holm-adjusted) is each set's overall value of each gated metric, per candidate;
each cell, and each candidate per set, is BETTER, WORSE, LOWER WITHIN MARGIN, EQUIVALENT (the
90% paired bootstrap CI inside +-the gate's drop limit: two one-sided tests at alpha 0.05), NO
WORSE (non-inferior: its lower bound above minus the limit) or INCONCLUSIVE. Exit code 0
whatever the verdict (2 on a usage error or runs that are not comparable); the --junit file
fails only a WORSE cell. See docs/compare.md.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "compare", "Compare one or more candidate reports (or baselines) with a base, query by query: verdict, "
                   "Holm-corrected paired tests on each set's overall gated metrics, an equivalence test at the "
                   "gate's margin, per-query movement and risk, latency p50/p95 with bootstrap CIs, an N-system "
                   "table, and exploratory (unadjusted) rows per category and split.", EPILOG)
    parser.add_argument("base", type=Path)
    parser.add_argument("candidates", type=Path, nargs="+", metavar="candidate")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the resampling (default: 0)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help=f"resamples (default: {RESAMPLES})")
    parser.add_argument("--policy", type=Path, default=None,
                        help="gate policy file giving the tested metrics and the margin (drop_limit_points); "
                             "default gate-policy.json when present, else recall@10 and 2.0 points")
    parser.add_argument("--metric", action="append", default=None, metavar="NAME",
                        help="metric to test instead of the policy's (repeatable; ours or ir_measures spelling: "
                             "R@10, nDCG@10, RR@10, P@10)")
    parser.add_argument("--allow-mismatch", action="store_true",
                        help="compare even when set revisions, corpora, k or metric definitions differ (labelled)")
    parser.add_argument("--label", action="append", default=None, metavar="NAME",
                        help="name the systems in outputs, in order: base, then each candidate (repeatable; "
                             "default: each backend's banner name and its file)")
    parser.add_argument("--json", type=Path, default=None, help="also write the comparison as JSON")
    parser.add_argument("--summary", type=Path, default=None,
                        help="Markdown summary (also appended to $GITHUB_STEP_SUMMARY when set)")
    parser.add_argument("--junit", type=Path, default=None,
                        help="JUnit XML: one test case per candidate, set and tested metric")
    parser.add_argument("--html", type=Path, default=None, help="also write a self-contained HTML page")
    return parser


def main(argv: list[str]) -> int:
    args = parse_arguments(build_parser(), argv)
    if not 1 <= args.resamples <= MAX_RESAMPLES:
        raise UsageError(f"--resamples: {args.resamples}: must be 1 to {MAX_RESAMPLES:,} (more adds nothing a "
                         f"p-value can show and grows without bound)")
    inputs = {"base": args.base, **{f"candidate {i}": path for i, path in enumerate(args.candidates, start=1)}}
    step_summary = step_summary_target()
    check_outputs({"--json": args.json, "--summary": args.summary, "--junit": args.junit, "--html": args.html,
                   STEP_SUMMARY: step_summary}, {**inputs, "--policy": args.policy})
    policy = load_policy(args.policy, report_metric_name)
    base = load_run(args.base)
    candidates = [load_run(path) for path in args.candidates]
    if args.label:
        if len(args.label) != 1 + len(candidates):
            raise UsageError(f"--label: give one per system, base first: {1 + len(candidates)} expected, "
                             f"{len(args.label)} given")
        base, *candidates = [dataclasses.replace(view, label=label)
                             for view, label in zip([base, *candidates], args.label)]
    for path, candidate in zip(args.candidates, candidates):
        if not set(base.sets) & set(candidate.sets):
            # nothing paired: any verdict would be about no query at all
            raise UsageError(f"{path}: no set in common with {args.base} (sets {', '.join(sorted(candidate.sets))} "
                             f"vs {', '.join(sorted(base.sets))}); nothing to compare")
        problems = mismatches(base, candidate)
        if problems and not args.allow_mismatch:
            which = f"{path}: " if len(candidates) > 1 else ""
            raise UsageError(f"runs are not comparable: {which}" + "; ".join(problems)
                             + " (use --allow-mismatch to compare anyway)")
    tested = tuple(metric_names(args.metric, report_metric_name)) if args.metric else policy.metrics
    suite = compare_many(base, candidates, seed=args.seed, resamples=args.resamples, tested=tested,
                         margin_points=policy.drop_limit_points, policy_source=policy.source)
    print(render_text(suite), end="")
    if args.json:
        write_output(args.json, strict_json_dumps(suite.to_dict(), what="comparison", indent=1,
                                                  ensure_ascii=False) + "\n", "--json")
    if args.junit:
        write_output(args.junit, render_junit(suite), "--junit")
    if args.html:
        from harness.report.html_compare import render_comparison_html
        write_output(args.html, render_comparison_html(suite, base, candidates), "--html")
    if args.summary or step_summary:
        markdown = render_markdown(suite)
        if args.summary:
            write_output(args.summary, markdown, "--summary")
        if step_summary:
            append_output(step_summary, markdown, STEP_SUMMARY)
    return EXIT_OK
