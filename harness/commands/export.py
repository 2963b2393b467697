"""`python -m harness export REPORT --trec-run run.txt --trec-qrels qrels.txt`: a report in trec_eval's formats."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from harness.errors import EXIT_OK, UsageError
from harness.fsutil import check_outputs
from harness.commands.arguments import command_parser, parse_arguments, resolve_layout
from harness.report.document import Report
from harness.report.escape import terminal_line
from harness.report.reading import read_report
from harness.report.trec import DEFAULT_RUN_TAG, report_sets, scored_rows_only, write_qrels, write_run
from harness.text import plural, shortlist


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "export", "Write a JSON report (--out of a run) as a TREC run and/or qrels file, in the formats "
                  "trec_eval reads. Several sets in one report: query ids become SET:QID. Score it with "
                  "`trec_eval -c -M 10 qrels.txt run.txt` (-c counts queries that returned nothing as 0).")
    parser.add_argument("report", type=Path, help="a JSON report written by a run (--out)")
    parser.add_argument("--trec-run", type=Path, default=None, metavar="PATH", help="write the rankings here")
    parser.add_argument("--trec-qrels", type=Path, default=None, metavar="PATH",
                        help="write the judgments here (reads each set from the path the report recorded)")
    parser.add_argument("--run-tag", default=DEFAULT_RUN_TAG,
                        help=f"the run file's last column (default: {DEFAULT_RUN_TAG})")
    parser.add_argument("--scored-only", action="store_true",
                        help="leave out negative probes, xfail and measure_only queries, so trec_eval -c means "
                             "equal the report's overall aggregates")
    parser.add_argument("--sets-dir", type=Path, default=None,
                        help="where to look for a set whose recorded path is gone (default: the config's `sets`, "
                             "else sets/; then the shipped sets)")
    parser.add_argument("--offline", action="store_true", help="never fetch corpus archives")
    return parser


def main(argv: list[str]) -> int:
    args = parse_arguments(build_parser(), argv)
    if args.trec_run is None and args.trec_qrels is None:
        raise UsageError("export: give --trec-run PATH, --trec-qrels PATH or both")
    # An output naming the report (or the other output) would replace what is being exported.
    check_outputs({"--trec-run": args.trec_run, "--trec-qrels": args.trec_qrels}, {"report": args.report})
    report = read_complete_report(args.report)
    if args.scored_only:
        report = scored_rows_only(report)
    else:
        for line in unscored_warning(report):
            print(f"harness: warning: {terminal_line(line)}", file=sys.stderr)
    if args.trec_run is not None:
        notes = write_run(report, args.trec_run, args.run_tag)
        for line in notes.lines():
            print(line)
        lines = sum(len(row.ids) for s in report.sets for row in s.queries)
        queries = sum(len(s.queries) for s in report.sets)
        print(f"run: {args.trec_run} ({plural(lines, 'line')}, {plural(queries, 'query', 'queries')}{_prefix_note(report)})")
    if args.trec_qrels is not None:
        team = resolve_layout(args)
        query_sets = report_sets(report, args.report, (team.sets_dir, team.shipped_sets), offline=args.offline)
        if args.scored_only:
            query_sets = [dataclasses.replace(s, queries=tuple(q for q in s.queries if q.scored)) for s in query_sets]
        write_qrels(query_sets, args.trec_qrels)
        judged = sum(1 for s in query_sets for q in s.queries if q.relevant)
        lines = sum(len(q.relevant) for s in query_sets for q in s.queries)
        print(f"qrels: {args.trec_qrels} ({lines} judgments, {judged} judged queries{_prefix_note(report)})")
    return EXIT_OK


def read_complete_report(path: Path) -> Report:
    """A complete JSON run report; UsageError naming the path otherwise."""
    report = read_report(path)
    if not report.complete:
        # Unanswered queries would be absent from the run, and trec_eval would score them as 0 or skip them.
        raise UsageError(f"{path}: an incomplete run (the backend failed) cannot be exported")
    shard = report.provenance.extra.get("shard")
    if isinstance(shard, dict):
        # A part of the set: trec_eval would average the shard's queries as if they were the set.
        raise UsageError(f"{path}: a shard report ({shard.get('index')}/{shard.get('count')}) holds part of each set; "
                         f"merge the shards first (python -m harness merge), then export the merged report")
    return report


def unscored_warning(report: Report) -> list[str]:
    """A warning when the files will hold queries the report's aggregates leave out (none: nothing)."""
    unscored = [f"{s.name}/{row.qid}" if len(report.sets) > 1 else row.qid
                for s in report.sets for row in s.queries if not row.scored]
    if not unscored:
        return []
    return [f"export: {plural(len(unscored), 'query', 'queries')} written that the report's aggregates "
            f"leave out (xfail, measure_only or negative probes: {shortlist(unscored)}); trec_eval averages judged "
            f"ones in, so its means differ from the report's; give --scored-only to leave them out"]


def _prefix_note(report: Report) -> str:
    return "; qids as SET:QID" if len(report.sets) > 1 else ""
