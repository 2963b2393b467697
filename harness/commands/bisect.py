"""`python -m harness bisect GOOD BAD --set NAME -- COMMAND`: the first commit that moved a gated figure."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import api
from harness.commands.arguments import (SETS_DIR_HELP, add_timeout_options, command_parser, metric_names,
                                        parse_arguments, resolve_layout, split_adapter_command)
from harness.errors import EXIT_OK, UsageError
from harness.fsutil import check_outputs, write_output
from harness.gating.policy import FOUNDING_METRIC
from harness.scoring.evaluate import policy_metric_name
from harness.history.bisect import MAX_RUNS, bisect
from harness.history.console import bisect_step_line, bisect_text
from harness.history.worktree import WorktreeMeasure, describe_commit, first_parent_commits
from harness.strict_json import strict_json_dumps

EPILOG = """\
Each step checks out one commit in a git worktree of its own (removed after the step, whatever
ends it), starts COMMAND there (its working folder: build and serve the commit's adapter) and asks
the sets. GOOD and BAD are measured on every set given; only the sets whose figure moved between
them are asked again. Each commit is good, bad or undecided by a paired test per query against
both ends; an undecided one is measured again (--max-runs), then skipped. See docs/history.md,
"Bisect".
"""


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "bisect", "Find the first commit between GOOD and BAD (along BAD's first parents) that moved a gated "
                  "figure: a paired test per step, three-valued, in about log2(commits) + 2 gate runs; names the "
                  "commit and the queries it flipped, or says no change is detectable and how large one must be.",
        EPILOG)
    parser.add_argument("good", metavar="GOOD", help="a commit where the figure is as it should be")
    parser.add_argument("bad", metavar="BAD", help="a later commit where it moved")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME",
                        help="set name, set folder or 'all' (repeatable; the sets of the working folder's layout)")
    parser.add_argument("--sets-dir", type=Path, default=None, help=SETS_DIR_HELP)
    parser.add_argument("--repo", type=Path, default=Path("."), help="the git repository (default: the working folder)")
    parser.add_argument("--metric", default=FOUNDING_METRIC, help=f"the figure to bisect (default: {FOUNDING_METRIC})")
    parser.add_argument("--max-runs", type=int, default=MAX_RUNS, metavar="N",
                        help=f"measurements of an undecided commit at most (default: {MAX_RUNS})")
    parser.add_argument("--k", type=int, default=None, help="ids to ask for per query (default: each set's k)")
    parser.add_argument("--offline", action="store_true", help="never fetch corpus archives; fail if not cached")
    parser.add_argument("--json", type=Path, default=None, help="also write the steps and the answer as JSON")
    add_timeout_options(parser)
    return parser


def main(argv: list[str]) -> int:
    args_list, command = split_adapter_command(argv)
    args = parse_arguments(build_parser(), args_list)
    if not command:
        raise UsageError("bisect: give the adapter command after '--', e.g. -- python -m mypackage.adapter")
    if args.max_runs < 1:
        raise UsageError("--max-runs: must be >= 1")
    check_outputs({"--json": args.json}, {})
    metric, = metric_names([args.metric], policy_metric_name)
    inputs = api.load_inputs(args.sets or ["all"], layout=resolve_layout(args), offline=args.offline, k=args.k,
                             gated=False)
    commits = first_parent_commits(args.repo, args.good, args.bad)
    names = [s.name for s in inputs.query_sets]
    print(f"bisect: {len(commits) - 1} commits after {commits[0][:12]} up to {commits[-1][:12]}; {metric} on "
          f"{', '.join(names)}", flush=True)
    options = api.RunOptions(k=args.k, query_timeout=args.timeout, startup_timeout=args.startup_timeout,
                             startup_limit=args.startup_limit)
    measure = WorktreeMeasure(args.repo, command, inputs, options, metric)
    outcome = bisect(commits, measure, names, metric, max_runs=args.max_runs,
                     on_step=lambda step: print(bisect_step_line(step, metric), flush=True))
    print(bisect_text(outcome, lambda commit: describe_commit(args.repo, commit)), end="")
    if args.json:
        write_output(args.json, strict_json_dumps(outcome.to_dict(), what="bisect", indent=1) + "\n", "--json")
    return EXIT_OK
