"""`python -m harness baselines [FILE ...]`: committed baselines side by side, as a Markdown table;
`baselines diff OLD NEW`: what a re-baseline moved."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.scoring.evaluate import policy_metric_name
from harness.gating.baseline import Baseline
from harness.gating.policy import load_policy
from harness.report.baselines import render_diff, render_table
from harness.errors import EXIT_OK, UsageError
from harness.commands.arguments import HelpFormatter, command_parser, exit_codes_epilog, parse_arguments, program_name


def main(argv: list[str]) -> int:
    if argv[:1] == ["diff"]:
        return diff(argv[1:])
    parser = command_parser("baselines", "Print baselines side by side (default: baselines/**/*.json), per set; "
                                         "`baselines diff OLD NEW` prints what moved between two.")
    parser.add_argument("files", nargs="*", type=Path)
    args = parse_arguments(parser, argv)
    files = args.files or sorted(Path("baselines").rglob("*.json"))
    if not files:
        raise UsageError("no baseline files given and none in baselines/")
    print(render_table([Baseline.read(path) for path in files]), end="")
    return EXIT_OK


def diff(argv: list[str]) -> int:
    """`baselines diff OLD NEW`: identity, then per set and scope the gated metrics, p95, query counts and flips."""
    parser = argparse.ArgumentParser(
        prog=program_name("baselines") + " diff", formatter_class=HelpFormatter,
        description="What moved from baseline OLD to NEW (e.g. `git show HEAD:baselines/current.json > old.json`): "
                    "the backend's identity, and per set and scope the gated metrics, p95, query counts and the "
                    "queries whose found relevant documents changed.",
        epilog=exit_codes_epilog("baselines"))
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--policy", type=Path, default=None,
                        help="the gate policy whose metrics are shown (default: gate-policy.json when present, "
                             "else recall@10)")
    args = parse_arguments(parser, argv)
    old, new = Baseline.read(args.old), Baseline.read(args.new)
    metrics = load_policy(args.policy, policy_metric_name).metrics
    print(render_diff(old, new, metrics), end="")
    return EXIT_OK
