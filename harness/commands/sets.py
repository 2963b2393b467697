"""`python -m harness sets list | show NAME | verify [NAME] | pin NAME`: inspect and check query sets."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from harness.errors import EXIT_OK
from harness.commands.arguments import parse_arguments
from harness.fsutil import atomic_write_text
from harness.interrupts import signals_raise_interrupted
from harness.records import QuerySet
from harness.sets.loader import compute_pins, find_sets, load_set, read_set_metadata
from harness.text import content_words


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness sets", description="Inspect and verify query sets.")
    parser.add_argument("--sets-dir", type=Path, default=Path("sets"), help="where named sets live (default: sets)")
    parser.add_argument("--offline", action="store_true", help="never fetch corpus archives")
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="one line per set, without loading corpora")
    show = actions.add_parser("show", help="counts per category, split and source; lexical-overlap statistics")
    show.add_argument("name")
    verify = actions.add_parser("verify", help="fetch corpora, check every hash, pin and relevant id (exit 2 on a problem)")
    verify.add_argument("name", nargs="?", default="all")
    beir = actions.add_parser("import-beir", help="turn a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) into a set")
    beir.add_argument("folder", type=Path)
    beir.add_argument("--name", required=True, help="the new set's name (a folder under --sets-dir; never overwritten)")
    beir.add_argument("--split", default="test", help="which qrels/<split>.tsv to import (default: test)")
    pin = actions.add_parser("pin", help="record the content hash of every document the queries name, in set.json")
    pin.add_argument("name")
    return parser


def main(argv: list[str]) -> int:
    args = parse_arguments(build_parser(), argv)
    # verify and import-beir may run pip or write a new set: a signal must unwind them cleanly.
    with signals_raise_interrupted():
        if args.action == "list":
            return list_sets(args.sets_dir)
        if args.action == "show":
            return show_set(find_sets([args.name], args.sets_dir)[0], args.offline)
        if args.action == "import-beir":
            from harness.sets.beir import convert_beir
            result = convert_beir(args.folder, args.name, args.sets_dir, split_name=args.split)
            print(f"{result.path}: {result.summary()}")
            return EXIT_OK
        if args.action == "verify":
            return verify_sets(find_sets([args.name], args.sets_dir), args.offline)
        return pin_set(find_sets([args.name], args.sets_dir)[0], args.offline)


def list_sets(sets_dir: Path) -> int:
    print(f"{'set':<10}{'revision':>9}{'queries':>9}  {'corpus':<11} description")
    for folder in find_sets(["all"], sets_dir):
        meta, queries = read_set_metadata(folder)
        print(f"{meta['name']:<10}{meta['revision']:>9}{len(queries):>9}  {meta['corpus']['source']:<11} "
              f"{meta.get('description', '')}")
    return EXIT_OK


def overlap_statistics(query_set: QuerySet) -> dict[str, float]:
    """Share of judged queries sharing no content word with any relevant document (headroom for
    semantic backends), and the mean share of query content words found in the relevant documents."""
    texts = {doc.id: doc.text for doc in query_set.documents}
    judged = [q for q in query_set.queries if q.relevant]
    zero = 0
    covered = []
    for query in judged:
        query_words = content_words(query.query)
        relevant_words = set().union(*(content_words(texts[doc_id]) for doc_id in query.relevant))
        shared = query_words & relevant_words
        zero += not shared
        covered.append(len(shared) / len(query_words) if query_words else 0.0)
    return {"judged": len(judged), "zero_overlap": zero,
            "zero_overlap_share": zero / len(judged) if judged else 0.0,
            "mean_word_coverage": sum(covered) / len(covered) if covered else 0.0}


def show_set(folder: Path, offline: bool) -> int:
    query_set = load_set(folder, offline=offline)
    print(f"set {query_set.name} (kind {query_set.kind}, revision {query_set.revision}, k={query_set.k})")
    if query_set.description:
        print(f"  {query_set.description}")
    print(f"corpus: {len(query_set.documents)} documents from {query_set.corpus_source}, hash {query_set.corpus_hash[:16]}")
    print(f"queries: {len(query_set.queries)} ({sum(q.scored for q in query_set.queries)} scored)")
    for title, counter in (("category", Counter(q.category for q in query_set.queries)),
                           ("split", Counter(q.split for q in query_set.queries)),
                           ("source", Counter(q.source for q in query_set.queries))):
        print(f"  by {title}: " + ", ".join(f"{name} {count}" for name, count in sorted(counter.items())))
    contracts = Counter()
    for query in query_set.queries:
        contracts["forbid"] += bool(query.forbid)
        contracts["rank_before"] += bool(query.rank_before)
        contracts["no_relevant"] += query.no_relevant
        contracts["xfail"] += query.xfail
        contracts["measure_only"] += query.measure_only
        contracts["grouped"] += query.group is not None
    print("  contracts: " + ", ".join(f"{name} {count}" for name, count in contracts.items()))
    stats = overlap_statistics(query_set)
    print(f"lexical overlap: {stats['zero_overlap']} of {stats['judged']} judged queries "
          f"({stats['zero_overlap_share']:.0%}) share no content word with any relevant document; "
          f"mean share of query words found in relevant documents {stats['mean_word_coverage']:.0%}")
    return EXIT_OK


def verify_sets(folders: list[Path], offline: bool) -> int:
    for folder in folders:
        query_set = load_set(folder, offline=offline)
        print(f"ok  {query_set.name}: revision {query_set.revision}, {len(query_set.documents)} documents "
              f"verified, {len(query_set.queries)} queries, every named id present and pinned")
    return EXIT_OK


def pin_set(folder: Path, offline: bool) -> int:
    query_set = load_set(folder, offline=offline, check_pins=False)
    meta_path = folder / "set.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    pins = compute_pins(query_set.queries, {doc.id: doc for doc in query_set.documents})
    old = meta.get("pins") or {}
    changed = sorted(doc_id for doc_id in set(pins) | set(old) if pins.get(doc_id) != old.get(doc_id))
    if not changed:
        print(f"{meta_path}: pins already current ({len(pins)} documents)")
        return EXIT_OK
    meta["pins"] = pins
    atomic_write_text(meta_path, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    print(f"{meta_path}: {len(changed)} pin(s) written: {', '.join(changed[:10])}"
          f"{' ...' if len(changed) > 10 else ''}; bump 'revision' if the gold changed")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(__import__("sys").argv[1:]))
