"""`python -m harness history`: the series of a history store with their change points (terminal, --html);
`history import`: reports and the baselines' git history into the store; `history drift`: the slow-drift gate."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from harness.scoring.evaluate import policy_metric_name
from harness.commands.arguments import (HelpFormatter, command_parser, exit_codes_epilog, metric_names,
                                        parse_arguments, program_name, resolve_layout)
from harness.errors import EXIT_GATE_FAILED, EXIT_OK, HarnessError, UsageError
from harness.fsutil import check_outputs, write_output
from harness.gating.policy import load_policy
from harness.history.console import render_drifts, render_trends
from harness.history.drift import DriftPolicy, drifts
from harness.history.entries import entries_from_baseline, entry_from_report, git_baseline_versions, report_problem
from harness.history.page import render_history_html
from harness.history.store import BASELINE, LATENCY_FIGURES, OVERALL, RUN, HistoryStore
from harness.history.trend import trend
from harness.report.escape import terminal_line
from harness.report.reading import read_report
from harness.text import plural

DEFAULT_HISTORY = Path(".retrieval-gate/history.sqlite")
BASELINES_PATHSPEC = "baselines/*.json"
DEFAULT_LAST = 200
HISTORY_HELP = f"the history store (default: the config's `history`, else {DEFAULT_HISTORY})"


def main(argv: list[str]) -> int:
    if argv[:1] == ["import"]:
        return import_into(argv[1:])
    if argv[:1] == ["drift"]:
        return drift(argv[1:])
    return show(argv)


def _subparser(action: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"{program_name('history')} {action}", description=description,
                                     formatter_class=HelpFormatter, epilog=exit_codes_epilog("history"))
    parser.add_argument("--history", type=Path, default=None, metavar="FILE", help=HISTORY_HELP)
    return parser


def _store_path(args: argparse.Namespace) -> Path:
    resolve_layout(args)  # the option, else the config's key
    return args.history or DEFAULT_HISTORY


def show(argv: list[str]) -> int:
    parser = command_parser(
        "history", "Show the history store's series: per backend, set and figure (the gated metrics and p95 by "
                   "default), the runs as a sparkline, every change point with its size, 95% CI and commit range, "
                   "outliers, and where the set's version changed; --html writes them as a page with trend charts. "
                   "`history import` fills the store from reports and the baselines' git history, `history drift` "
                   "is the slow-drift gate (docs/history.md).")
    parser.add_argument("--history", type=Path, default=None, metavar="FILE", help=HISTORY_HELP)
    parser.add_argument("--set", dest="sets", action="append", default=None, metavar="NAME",
                        help="only this set (repeatable; default: every set in the store)")
    parser.add_argument("--metric", action="append", default=None, metavar="NAME",
                        help="this figure (repeatable: recall@10, ndcg@10, p95, p50, ...; default: the gate policy's "
                             "metrics and p95)")
    parser.add_argument("--scope", default=OVERALL, metavar="SCOPE",
                        help="overall, category:NAME or split:NAME (default: overall)")
    parser.add_argument("--backend", action="append", default=None, metavar="LABEL",
                        help="only this backend, as runs name it (bm25, the adapter's command) (repeatable)")
    parser.add_argument("--baselines", action="store_true",
                        help="the accepted baselines' series instead of the runs'")
    parser.add_argument("--last", type=int, default=DEFAULT_LAST, metavar="N",
                        help=f"each series' last N runs (default: {DEFAULT_LAST}; the search's time grows with the "
                             f"square of N: 400 runs with one change take about 12 s)")
    parser.add_argument("--seed", type=int, default=0, help="the permutation test's seed (default: 0)")
    parser.add_argument("--policy", type=Path, default=None, help="the gate policy naming the default metrics")
    parser.add_argument("--html", type=Path, default=None, help="also write the series as a self-contained page")
    args = parse_arguments(parser, argv)
    if args.last < 1:
        raise UsageError("--last: must be >= 1")
    path = _store_path(args)
    check_outputs({"--html": args.html}, {"--history": path, "--policy": args.policy})
    metrics = _metrics(args.metric) or [*load_policy(args.policy, policy_metric_name).metrics, "p95"]
    with HistoryStore.for_reading(path) as store:
        kind = BASELINE if args.baselines else RUN
        keys = [key for key in store.series_keys(kind)
                if key.scope == args.scope and key.metric in metrics
                and (args.sets is None or key.set_name in args.sets)
                and (args.backend is None or key.backend in args.backend)]
        keys.sort(key=lambda k: (k.backend, k.set_name, metrics.index(k.metric)))
        trends = [trend(store, key, last=args.last, seed=args.seed) for key in keys]
        counts = store.run_count()
    if not trends:
        hint = " (it holds accepted baselines only: add --baselines)" if not counts.get(RUN) and counts.get(
            BASELINE) and not args.baselines else ""
        print(f"no series in {path} for {', '.join(metrics)} ({args.scope}){hint}")
    else:
        print(render_trends(trends), end="")
    if args.html:
        write_output(args.html, render_history_html(trends, source=str(path)), "--html")
    return EXIT_OK


def _metrics(names: list[str] | None) -> list[str]:
    """Metric names as the store keeps them (any accepted spelling; latency figures as they are)."""
    return metric_names(names or (), lambda name: name if name in LATENCY_FIGURES else policy_metric_name(name))


def import_into(argv: list[str]) -> int:
    parser = _subparser("import", "Append run reports and, with --from-git, every committed version of the "
                                  "baseline files to the history store (created when missing). What it already "
                                  "holds is skipped, so importing again adds only what is new.")
    parser.add_argument("reports", nargs="*", type=Path, metavar="REPORT", help="run reports (--out of a run)")
    parser.add_argument("--from-git", action="append", nargs="?", const=BASELINES_PATHSPEC, default=None,
                        metavar="PATHSPEC",
                        help=f"the baseline files' versions along this repository's branch, oldest first "
                             f"(default pathspec: {BASELINES_PATHSPEC}; repeatable)")
    args = parse_arguments(parser, argv)
    if not args.reports and not args.from_git:
        raise UsageError("history import: give run reports, --from-git, or both")
    path = _store_path(args)
    runs = baselines = skipped = 0
    reports = [(report_path, read_report(report_path)) for report_path in args.reports]  # all read before writing
    with HistoryStore.for_append(path) as store:
        for report_path, report in reports:
            problem = report_problem(report)
            if problem is not None:
                print(f"skipped {terminal_line(str(report_path))}: {problem}", file=sys.stderr)
                continue
            runs += store.append(entry_from_report(report))
        for pathspec in args.from_git or ():
            for version in git_baseline_versions(Path.cwd(), [pathspec]):
                try:
                    entries = entries_from_baseline(version.text, version.label, accepted=version.time)
                except HarnessError as exc:  # an old version no longer readable: said, and the rest imported
                    print(f"skipped {terminal_line(str(exc))}", file=sys.stderr)
                    skipped += 1
                    continue
                baselines += sum(store.append(entry) for entry in entries)
    print(f"{path}: {plural(runs, 'run')} and {plural(baselines, 'accepted baseline')} added"
          + (f"; {skipped} skipped" if skipped else ""))
    return EXIT_OK


def drift(argv: list[str]) -> int:
    parser = _subparser("drift", "The slow-drift gate: per backend, set and gated metric, how far the figure moved "
                                 "over the accepted baselines of the window (the newest against the oldest); DRIFT "
                                 "when it fell by more than the limit. Exit 0 unless --fail and a figure drifted.")
    parser.add_argument("--set", dest="sets", action="append", default=None, metavar="NAME",
                        help="only this set (repeatable)")
    parser.add_argument("--metric", action="append", default=None, metavar="NAME",
                        help="this metric (repeatable; default: the gate policy's)")
    parser.add_argument("--policy", type=Path, default=None,
                        help="the gate policy naming the metrics and the drift defaults (its `drift` section)")
    parser.add_argument("--limit", type=float, default=None, metavar="POINTS",
                        help="the largest fall allowed over the window (default: the policy's drift.limit_points, "
                             "else its drop_limit_points)")
    window = parser.add_mutually_exclusive_group()
    window.add_argument("--baselines", type=int, default=None, metavar="N",
                        help="the window: the last N accepted baselines (default: the policy's drift.baselines, 10)")
    window.add_argument("--days", type=float, default=None, metavar="D",
                        help="the window: the baselines accepted in the last D days and the one before them "
                             "(default: the policy's drift.days)")
    parser.add_argument("--fail", action="store_true", help="exit 1 when a figure drifted (default: the policy's drift.fails; else warn, exit 0)")
    args = parse_arguments(parser, argv)
    if args.baselines is not None and args.baselines < 2:
        raise UsageError("--baselines: a window needs at least 2 baselines")
    if args.days is not None and not 0 < args.days < 1e6:
        raise UsageError("--days: must be a number of days above 0")
    if args.limit is not None and not 0 <= args.limit < 100:
        raise UsageError("--limit: points from 0 to under 100")
    policy_file = load_policy(args.policy, policy_metric_name)
    metrics = _metrics(args.metric) or list(policy_file.metrics)
    policy = DriftPolicy.of(policy_file)
    if args.baselines is not None or args.days is not None:
        policy = dataclasses.replace(policy, baselines=args.baselines, days=args.days)
    if args.limit is not None or args.fail:
        policy = dataclasses.replace(policy, limit_points=policy.limit_points if args.limit is None else args.limit,
                                     fails=policy.fails or args.fail)
    with HistoryStore.for_reading(_store_path(args)) as store:
        keys = store.series_keys(BASELINE)
        pairs = sorted({(k.backend, k.set_name) for k in keys if args.sets is None or k.set_name in args.sets})
        found = [d for backend, set_name in pairs for d in drifts(store, backend, [set_name], metrics, policy)]
    if not found:
        print("no figure has two accepted baselines in the window: nothing to compare")
        return EXIT_OK
    print(render_drifts(found), end="")
    return EXIT_GATE_FAILED if policy.fails and any(d.drifted for d in found) else EXIT_OK
