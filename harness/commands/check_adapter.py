"""`python -m harness check-adapter [options] -- CMD ARG ...`: argv in, the conformance table out, exit code.

The checks themselves live in harness/adapter/checks.py; this module reads the options,
prepares the corpus folder given to the adapter as $HARNESS_CORPUS_DIR and prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import tempfile
from pathlib import Path

from harness.adapter.checks import (CHECKS, CORPUS_DIR_ENV, CORPUS_TEXTS, DEFAULT_KIND, DEFAULT_LOG, DEFAULT_QUERIES,
                                    EXIT_CHECK_FAILED, FAIL, PLAIN_QUERIES, PLAIN_QUERY_COUNT, PROG, Corpus, Suite,
                                    render_table, run_suite)
from harness.adapter.driver import QUERY_TIMEOUT_SECONDS, STARTUP_TIMEOUT_SECONDS
from harness.adapter.probe import LiveAdapter
from harness.commands.arguments import parse_arguments, split_adapter_command
from harness.errors import EXIT_OK, UsageError


def build_parser() -> argparse.ArgumentParser:
    listing = "\n".join(f"  {name:<13} {what}" for name, what in CHECKS)
    parser = argparse.ArgumentParser(
        prog=PROG, usage=f"{PROG} [options] -- CMD [ARG ...]", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a conformance suite against a live adapter (its command after '--', run as an "
                    "argv, never a shell) and print a pass/fail table. Exit 0 when nothing fails, 1 on "
                    "any failure, 2 on usage errors.",
        epilog=f"checks:\n{listing}\n\nexample:\n  {PROG} --kind code -- ./my-adapter --index prod")
    parser.add_argument("--kind", default=None,
                        help=f"the kind (corpus/index) to ask; default {DEFAULT_KIND!r}, served from a small "
                             "corpus the checker writes")
    parser.add_argument("--set", dest="set_name", default=None, metavar="NAME",
                        help="check against a query set: its kind, its corpus materialised as "
                             f"${CORPUS_DIR_ENV}, its first {PLAIN_QUERY_COUNT} queries")
    parser.add_argument("--sets-dir", type=Path, default=Path("sets"), help="where named sets live (default: sets)")
    parser.add_argument("--offline", action="store_true", help="with --set: never fetch corpus archives")
    parser.add_argument("--corpus-dir", type=Path, default=None, metavar="DIR",
                        help=f"folder passed as ${CORPUS_DIR_ENV} (default: ${CORPUS_DIR_ENV} if set with "
                             "--kind, else a temp folder with the checker's corpus as <kind>.jsonl)")
    parser.add_argument("--timeout", type=float, default=QUERY_TIMEOUT_SECONDS, metavar="S",
                        help=f"seconds allowed per answer (default: {QUERY_TIMEOUT_SECONDS:g})")
    parser.add_argument("--startup-timeout", type=float, default=STARTUP_TIMEOUT_SECONDS, metavar="S",
                        help=f"extra seconds allowed for the first line after a start "
                             f"(default: {STARTUP_TIMEOUT_SECONDS:g})")
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES, metavar="N",
                        help=f"queries asked in a row by the endurance check (default: {DEFAULT_QUERIES})")
    parser.add_argument("--max-rss-growth", type=float, default=None, metavar="MIB",
                        help="fail endurance when resident memory grows more than this (default: report only)")
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG,
                        help=f"file receiving the adapter's stderr (default: {DEFAULT_LOG})")
    return parser


def main(argv: list[str]) -> int:
    args_list, command = split_adapter_command(list(argv))
    args = parse_arguments(build_parser(), args_list)
    if not command:
        raise UsageError(f"check-adapter: give the adapter command after '--', e.g. {PROG} -- ./my-adapter")
    for name, value in (("--timeout", args.timeout), ("--startup-timeout", args.startup_timeout)):
        if not (value > 0 and math.isfinite(value)):
            raise UsageError(f"check-adapter: {name}: must be a positive number of seconds, got {value}")
    if args.queries < 1:
        raise UsageError(f"check-adapter: --queries: must be >= 1, got {args.queries}")
    if args.kind is not None and (not args.kind or "/" in args.kind or args.kind.startswith(".")):
        raise UsageError(f"check-adapter: --kind: {args.kind!r} cannot name a <kind>.jsonl file")
    if args.set_name is not None and args.corpus_dir is not None:
        raise UsageError("check-adapter: --set and --corpus-dir are exclusive: the set brings its corpus")
    with tempfile.TemporaryDirectory(prefix="retrieval-gate-check-") as scratch:
        kind, corpus = _corpus(args, Path(scratch))
        env = {**os.environ, CORPUS_DIR_ENV: str(corpus.folder)}
        args.log.parent.mkdir(parents=True, exist_ok=True)
        args.log.write_bytes(b"")  # this run's log only
        adapter = LiveAdapter(command, env, args.log, args.startup_timeout, args.timeout)
        print(f"adapter: {shlex.join(command)}")
        print(f"kind: {kind}; {CORPUS_DIR_ENV}={corpus.folder} ({corpus.note})")
        suite = Suite(adapter, kind, corpus, args.queries, args.max_rss_growth)
        try:
            results = run_suite(suite, args.timeout)
        finally:
            adapter.stop()
    print(render_table(results))
    failed = [r for r in results if r.result == FAIL]
    restarts = f"; the adapter was started {adapter.starts} times" if adapter.starts > 1 else ""
    print(f"{len(results)} checks: {len(results) - len(failed)} passed or not judged, {len(failed)} failed{restarts}")
    print(f"adapter log (stderr): {args.log}")
    if failed:
        tail = _tail(args.log)
        if tail:
            print("adapter stderr (last lines):")
            print("\n".join(f"  | {line}" for line in tail))
    return EXIT_CHECK_FAILED if failed else EXIT_OK


def _corpus(args: argparse.Namespace, scratch: Path) -> tuple[str, Corpus]:
    """The kind to ask and the corpus folder given as HARNESS_CORPUS_DIR, with a note saying where it came from."""
    if args.set_name is not None:
        return _set_corpus(args, scratch)
    kind = args.kind or DEFAULT_KIND
    if args.corpus_dir is not None:
        if not args.corpus_dir.is_dir():
            raise UsageError(f"check-adapter: --corpus-dir {args.corpus_dir}: not a folder")
        return kind, _given_corpus(args.corpus_dir.resolve(), kind, "from --corpus-dir")
    inherited = os.environ.get(CORPUS_DIR_ENV)
    if args.kind is not None and inherited:
        return kind, _given_corpus(Path(inherited), kind, f"inherited from ${CORPUS_DIR_ENV}")
    path = scratch / f"{kind}.jsonl"
    ids = [f"{kind}-{n:02d}" for n in range(1, len(CORPUS_TEXTS) + 1)]
    lines = [json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) for doc_id, text in zip(ids, CORPUS_TEXTS)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    note = f"written by check-adapter: {path.name}, {len(lines)} documents, deleted afterwards"
    if args.kind is not None:
        # A stand-in for the user's kind: an adapter serving its own index for it rightly ignores it.
        return kind, Corpus(scratch, note, None, f"{path.name} is the checker's stand-in; use --set NAME or "
                                                 "--corpus-dir DIR to check ids against a real corpus")
    return kind, Corpus(scratch, note, frozenset(ids))


def _given_corpus(folder: Path, kind: str, note: str) -> Corpus:
    path = folder / f"{kind}.jsonl"
    if not path.is_file():
        return Corpus(folder, note, None, f"no {path.name} in {folder}")
    return Corpus(folder, note, frozenset(_corpus_ids(path)))


def _set_corpus(args: argparse.Namespace, scratch: Path) -> tuple[str, Corpus]:
    """Materialise a query set's corpus, as the harness does for a run, and take its kind and queries."""
    from harness.sets.materialise import materialise_corpora
    from harness.sets.loader import find_sets, load_set

    query_set = load_set(find_sets([args.set_name], args.sets_dir)[0], offline=args.offline)
    if args.kind is not None and args.kind != query_set.kind:
        raise UsageError(f"check-adapter: --kind {args.kind!r} differs from set {query_set.name}'s kind "
                         f"{query_set.kind!r}; drop --kind")
    materialise_corpora([query_set], scratch)
    queries = tuple(q.query for q in query_set.queries[:PLAIN_QUERY_COUNT]) or PLAIN_QUERIES
    note = (f"set {query_set.name} revision {query_set.revision}: {query_set.kind}.jsonl, "
            f"{len(query_set.documents)} documents, deleted afterwards")
    return query_set.kind, Corpus(scratch, note, frozenset(doc.id for doc in query_set.documents), queries=queries,
                                  lengths={doc.id: len(doc.text) for doc in query_set.documents})


def _corpus_ids(path: Path) -> list[str]:
    ids = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                doc_id = json.loads(line).get("id")
            except (ValueError, AttributeError):
                doc_id = None
            if not isinstance(doc_id, str):
                raise UsageError(f"check-adapter: {path}:{number}: id: not a JSON object with a string 'id'")
            ids.append(doc_id)
    return ids


def _tail(path: Path, lines: int = 10) -> list[str]:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - 16 * 1024))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line[:300] for line in text.splitlines()[-lines:]]
