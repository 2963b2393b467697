"""`python -m harness sets list | show NAME | verify [NAME] | pin NAME`: inspect and check query sets."""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

from harness.errors import EXIT_OK, SetError, UsageError
from harness.gating.baseline import DEFAULT_BASELINE_PATH
from harness.commands.arguments import (SETS_DIR_HELP, WORKED_EXAMPLES, HelpFormatter, example_epilog, example_line,
                                       exit_codes_epilog, parse_arguments, program_name, resolve_layout)
from harness.layout import Layout
from harness.measured import SetNumbers
from harness.report.escape import terminal_line
from harness.sets.loader import check_sets_dir, load_set, read_set_metadata, sets_in
from harness.sets.materialise import write_corpus_files
from harness.sets.pins import repin_set
from harness.sets.statistics import contract_counts, overlap_statistics
from harness.text import plural, shortlist

# The general forms of a scope's `unreachable` reason, each printed once under the detectability table.
TOO_FEW_UNITS = "5 or fewer units: the sign-flip test's smallest p, 2/2^m, is above alpha 0.05"
BEYOND_RANGE = "the change it would need is beyond the metric's range of 100 points"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=program_name("sets"), description="Inspect and verify query sets.",
                                     formatter_class=HelpFormatter, epilog=_examples() + "\n" + exit_codes_epilog("sets"))
    parser.add_argument("--sets-dir", type=Path, default=None, help=SETS_DIR_HELP)
    parser.add_argument("--offline", action="store_true", help="never fetch corpus archives")
    actions = parser.add_subparsers(dest="action", required=True)

    def add_action(name: str, **kwargs) -> argparse.ArgumentParser:
        return actions.add_parser(name, formatter_class=HelpFormatter, epilog=example_epilog(f"sets {name}"), **kwargs)
    add_action("list", help="one line per set, without loading corpora")
    show = add_action("show", help="counts per category, split and source; lexical-overlap statistics")
    show.add_argument("name")
    show.add_argument("--baseline", type=Path, default=None,
                      help=f"the baseline whose per-query values tell what the set can detect "
                           f"(default: the layout's, as a run's: {DEFAULT_BASELINE_PATH} of the team's folder)")
    show.add_argument("--paired", type=Path, metavar="REPORT_OR_BASELINE",
                      help="a second run of the set (a report or a baseline, e.g. one backend with one setting "
                           "changed): per scope, how many units moved and the detectable drop of a change of that "
                           "kind (sized only from 10 or more moved units)")
    verify = add_action("verify", help="fetch corpora, check every hash, pin and relevant id (exit 2 on a problem)")
    verify.add_argument("name", nargs="?", default="all")
    beir = add_action("import-beir", help="turn a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) into a set")
    beir.add_argument("folder", type=Path)
    beir.add_argument("--name", required=True, help="the new set's name (a folder in the team's sets folder; "
                                                     "never overwritten, never the shipped folder)")
    beir.add_argument("--split", default="test", help="which qrels/<split>.tsv to import (default: test)")
    # Also accepted after the action (`sets import-beir DIR --name X --sets-dir D`); SUPPRESS keeps
    # the subparser from resetting a --sets-dir given before the action to the default.
    beir.add_argument("--sets-dir", dest="sets_dir", type=Path, default=argparse.SUPPRESS,
                      help="where the new set is written (also accepted before the action; default: the "
                           "config's `sets`, else sets/)")
    pin = add_action("pin", help="record the content hash of every document the queries name, in set.json")
    pin.add_argument("name")
    export = add_action("export-corpus", help="write <kind>.jsonl exactly as an adapter sees it, for a "
                                                      "backend that indexes outside the harness")
    export.add_argument("name")
    export.add_argument("folder", type=Path, help="where to write <kind>.jsonl (created; an existing file is kept)")
    return parser


def _examples() -> str:
    """One example per action, for `sets --help`."""
    return "examples:\n" + "\n".join(f"  {example_line(line)}" for command, (line, _) in WORKED_EXAMPLES.items()
                                      if command.startswith("sets ")) + "\n"


def main(argv: list[str]) -> int:
    args = parse_arguments(build_parser(), argv)
    team = resolve_layout(args)
    if args.action == "list":
        return list_sets(team)
    if args.action == "import-beir":
        from harness.sets.beir import convert_beir
        if team.sets_dir_is_shipped:
            raise UsageError(f"import-beir: {team.sets_dir} is the shipped sets folder; a team's sets go in "
                             f"its own folder: give --sets-dir DIR (or `sets` in retrieval-gate.toml)")
        result = convert_beir(args.folder, args.name, team.sets_dir, split_name=args.split)
        print(f"{result.path}: {result.summary()}")
        return EXIT_OK
    folders = _selected(team, args.name)
    if args.action == "show":
        return show_set(folders[0], args.offline, args.baseline, args.paired)
    if args.action == "verify":
        return verify_sets(folders, args.offline)
    if args.action == "export-corpus":
        return export_corpus(folders, args.folder, args.offline)
    if team.origin(folders[0]) == "shipped" and not team.sets_dir_is_shipped:
        raise UsageError(f"pin: set {args.name} is a shipped set ({folders[0]}), not the team's: copy it into "
                         f"{team.sets_dir} to change it")
    return pin_set(folders[0], args.offline)


def _selected(team: Layout, name: str) -> list[Path]:
    """The folders a set name (or `all`) selects, as a run selects them; the notices of `all` on stderr."""
    folders, notices = team.select([name])
    for notice in notices:
        print(f"harness: warning: {terminal_line(notice)}", file=sys.stderr)
    return folders


def export_corpus(folders: list[Path], target: Path, offline: bool) -> int:
    """Every named set's corpus (`all`: every set) into `target`, as a run lays them out; refused whole,
    before anything is written, when two sets share a kind (one `<kind>.jsonl` cannot hold both)."""
    query_sets = [load_set(folder, offline=offline) for folder in folders]
    kinds = Counter(query_set.kind for query_set in query_sets)
    shared = sorted(kind for kind, count in kinds.items() if count > 1)
    if shared:
        names = ", ".join(s.name for s in query_sets if s.kind == shared[0])
        raise UsageError(f"export-corpus: sets {names} share kind {shared[0]!r}, and one {shared[0]}.jsonl cannot "
                         f"hold both: export them one at a time into separate folders")
    # os.path.lexists: False, not OSError, for a name too long (write_corpus_files then says why)
    taken = [target / f"{s.kind}.jsonl" for s in query_sets if os.path.lexists(target / f"{s.kind}.jsonl")]
    if taken:
        raise UsageError(f"{taken[0]}: already exists; export into an empty folder (nothing is overwritten)")
    for query_set in query_sets:
        written = write_corpus_files(query_set, target)
        print(f"{written}: {len(query_set.documents)} documents of set {query_set.name} (kind {query_set.kind}, "
              f"corpus {query_set.corpus_hash[:12]}), as an adapter reads them from $HARNESS_CORPUS_DIR")
    return EXIT_OK


def list_sets(team: Layout) -> int:
    """The team's sets, then the shipped ones, each with where it comes from; a shipped set that a team's
    set of the same name shadows (a name finds the team's) is said so in its `from` column."""
    team.check_sets_dir()
    check_sets_dir(team.sets_dir)
    own = sets_in(team.sets_dir)
    shipped = [] if team.sets_dir_is_shipped else sets_in(team.shipped_sets)
    if not own and not shipped:
        raise SetError(f"{team.sets_dir}: no sets found (expected {team.sets_dir}/NAME/set.json)")
    names = {folder.name for folder in own}
    origins = [team.origin(folder) for folder in own] + [
        f"shipped, shadowed by {team.sets_dir / folder.name}" if folder.name in names else "shipped"
        for folder in shipped]
    # Every set read before the header: a bad one is the one error line, not a table cut short.
    rows = [read_set_metadata(folder) for folder in own + shipped]
    width = max(len("from"), *(len(origin) for origin in origins))
    named = max(10, *(len(meta["name"]) + 1 for meta, _ in rows))  # a set name is at most 100 safe characters
    print(f"{'set':<{named}}{'revision':>9}{'queries':>9}  {'corpus':<11} {'from':<{width}}  description")
    for (meta, queries), origin in zip(rows, origins):
        print(f"{meta['name']:<{named}}{meta['revision']:>9}{len(queries):>9}  {meta['corpus']['source']:<11} "
              f"{terminal_line(origin):<{width}}  {terminal_line(str(meta.get('description', '')))}")
    return EXIT_OK


def show_set(folder: Path, offline: bool, baseline: Path | None = None, paired: Path | None = None) -> int:
    query_set = load_set(folder, offline=offline)
    print(f"set {query_set.name} (kind {query_set.kind}, revision {query_set.revision}, k={query_set.k})")
    if query_set.description:
        print(f"  {terminal_line(query_set.description)}")
    print(f"corpus: {len(query_set.documents)} documents from {query_set.corpus_source}, hash {query_set.corpus_hash[:16]}")
    print(f"queries: {len(query_set.queries)} ({sum(q.scored for q in query_set.queries)} scored)")
    for title, counter in (("category", Counter(q.category for q in query_set.queries)),
                           ("split", Counter(q.split for q in query_set.queries)),
                           ("source", Counter(q.source for q in query_set.queries))):
        print(f"  by {title}: "
              + ", ".join(f"{terminal_line(str(name))} {count}" for name, count in sorted(counter.items())))
    print("  contracts: " + ", ".join(f"{name} {count}" for name, count in contract_counts(query_set).items()))
    stats = overlap_statistics(query_set)
    print(f"lexical overlap: {stats['zero_overlap']} of {stats['judged']} judged queries "
          f"({stats['zero_overlap_share']:.0%}) share no content word with any relevant document; "
          f"mean share of query words found in relevant documents {stats['mean_word_coverage']:.0%}")
    for line in detectability_lines(query_set, baseline, paired):
        print(line)
    return EXIT_OK


def detectability_lines(query_set, baseline: Path | None, paired: Path | None = None) -> list[str]:
    """What the set can detect (docs/sets.md, "What a set can detect"), from a baseline's per-query
    recall@10 of it: per scope, one query's worth, the smallest detectable change, the units a 2-point
    change would need. Nothing when no baseline records the set (a line says so). Without `paired`, the
    bound for a change of system (its assumption stated); with `paired` (a second run of the set), a
    small change like that one, sized from its moved units only when enough of them moved."""
    from harness.gating.baseline import Baseline
    from harness.gating.policy import FOUNDING_METRIC
    from harness.scoring.detectability import (MIN_MOVED_UNITS, bound_sigma_d, detectability, queries_needed,
                                               small_change)

    if baseline is None or not baseline.exists():
        return [f"detectability: no baseline ({baseline}) to read per-query values from (--baseline FILE)"]
    entry = Baseline.read(baseline).sets.get(query_set.name)
    if entry is None:
        return [f"detectability: {baseline} has no entry for set {terminal_line(query_set.name)}"]
    rows = {row.qid: row for row in entry.rows() if FOUNDING_METRIC in row.metrics}
    units = {q.qid: q.resampling_unit for q in query_set.queries}
    categories = sorted({row.category for row in rows.values() if row.category is not None})
    scopes = [("overall", list(rows))] + [(category, [qid for qid, row in rows.items() if row.category == category])
                                          for category in categories]
    other = _paired_values(query_set.name, entry, paired) if paired is not None else None
    what = (f"a small change like {paired}'s: its moves as noise, the change made of moves like them; sized "
            f"only from {MIN_MOVED_UNITS} or more moved units" if other is not None else
            "the bound for a change of system: the other system independent of the baseline and as spread as a "
            "[0, 1] value with its mean can be")
    lines = [f"detectability of {FOUNDING_METRIC} ({baseline}; paired test, alpha 0.05, power 0.8, t quantiles; "
             f"{what}):",
             f"  {'scope':<16}{'n':>6}{'one query':>12}"
             + (f"{'moved':>24}" if other is not None else "") + f"{'detectable':>13}{'units for 2 points':>20}"]
    notes: dict[str, None] = {}
    for name, qids in scopes:
        values = {qid: rows[qid].metrics[FOUNDING_METRIC] for qid in qids}
        head = f"  {terminal_line(name):<16}{len(qids):>6}{100 / len(qids) if qids else 0:>8.1f} pts"
        if other is not None:
            change = small_change({qid: other[qid] for qid in qids if qid in other}, values, units)
            figure = f"{change.detectable * 100:.1f} pts" if change.detectable is not None else "none"
            sigma = change.sigma_d(0.02) if change.detectable is not None else None
            needed = f"{queries_needed(sigma, 0.02):,}" if sigma else "-"
            if change.reason:
                too_few = change.detectable is None and change.moved < MIN_MOVED_UNITS
                figure = "-" if too_few else figure
                notes[f"-: too few moved units to size a change (fewer than {MIN_MOVED_UNITS} moved)" if too_few
                      else change.reason] = None
            lines.append(f"{head}{change.moved_words():>24}{figure:>13}{needed:>20}")
            continue
        found = detectability(values, units)
        sigma = bound_sigma_d(values, units, 0.02)
        figure = f"{found.detectable * 100:.1f} pts" if found.detectable is not None else (
            "none" if found.unreachable else "-")
        if found.unreachable:
            notes["none: " + (TOO_FEW_UNITS if found.too_few_units else BEYOND_RANGE)] = None
        needed = f"{queries_needed(sigma, 0.02):,}" if sigma else "-"
        lines.append(f"{head}{figure:>13}{needed:>20}")
    lines.extend(f"  {note}" for note in notes)
    return lines


def _paired_values(name: str, entry: SetNumbers, paired: Path) -> dict[str, float]:
    """The per-query recall@10 of set `name` in a second run (report or baseline), refused (exit 2) unless it
    measured the same revision, corpus and queries as the baseline entry."""
    from harness.gating.policy import FOUNDING_METRIC
    from harness.report.views import load_run

    measured = load_run(paired).sets.get(name)
    if measured is None:
        raise UsageError(f"{paired}: has no set {name!r} to pair with the baseline")
    for field in ("revision", "corpus_hash"):
        now, recorded = getattr(measured, field), getattr(entry, field)
        if now != recorded:
            raise UsageError(f"{paired}: set {name}: {field} {now!r}, the baseline has {recorded!r}: "
                             f"not two runs of one set")
    if set(measured.queries) != set(entry.queries):
        raise UsageError(f"{paired}: set {name}: other queries than the baseline's (a shard? merge it first)")
    return {row.qid: row.metrics[FOUNDING_METRIC] for row in measured.rows() if FOUNDING_METRIC in row.metrics}


def verify_sets(folders: list[Path], offline: bool) -> int:
    for folder in folders:
        query_set = load_set(folder, offline=offline)
        print(f"ok  {query_set.name}: revision {query_set.revision}, {len(query_set.documents)} documents "
              f"verified, {plural(len(query_set.queries), 'query', 'queries')}, every named id present and pinned")
    return EXIT_OK


def pin_set(folder: Path, offline: bool) -> int:
    update = repin_set(folder, offline=offline)
    if not update.changed:
        print(f"{update.meta_path}: pins already current ({update.pinned} documents)")
        return EXIT_OK
    print(f"{update.meta_path}: {len(update.changed)} pin(s) written: {shortlist(update.changed, 10)}; bump "
          f"'revision' if the gold changed")
    return EXIT_OK
