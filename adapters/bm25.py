"""`python -m adapters.bm25`: the BM25 reference adapter (protocol v1), its options and index loading.

Indexes every `<kind>.jsonl` of $HARNESS_CORPUS_DIR (and `--corpus KIND=PATH`), one index
per kind, cached on disk by corpus content hash and settings, then answers requests.
`add_arguments`, `settings_from_args` and `load_indexes` are the API other adapters
(hybrid fusion) build on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .bm25_index import BM25Index, BM25Settings
    from .passages import WindowSettings

NAME = "bm25"
VERSION = "1.0.0"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the BM25 options: --k1 --b --stopwords --stem --corpus KIND=PATH --no-cache."""
    group = parser.add_argument_group("BM25")
    group.add_argument("--k1", type=float, default=0.9, help="term frequency saturation (default 0.9)")
    group.add_argument("--b", type=float, default=0.4, help="document length normalisation, 0..1 (default 0.4)")
    group.add_argument("--stopwords", action="store_true", help="drop English stop words")
    group.add_argument("--stem", action="store_true", help="apply a light (plural) stemmer")
    group.add_argument("--corpus", action="append", default=[], metavar="KIND=PATH",
                       help="index this jsonl file as KIND (repeatable; adds to $HARNESS_CORPUS_DIR)")
    group.add_argument("--no-cache", action="store_true", help="always rebuild; never read or write the index cache")
    group.add_argument("--no-memory-check", action="store_true",
                       help="build even when the memory model says the index will not fit (default: refuse)")


def settings_from_args(args: argparse.Namespace) -> BM25Settings:
    """The frozen settings the parsed options describe."""
    from .bm25_index import BM25Settings

    return BM25Settings(k1=args.k1, b=args.b, stopwords=args.stopwords, stem=args.stem,
                        use_cache=not args.no_cache, memory_check=not args.no_memory_check)


def load_indexes(paths: dict[str, Path], settings: BM25Settings,
                 windows: dict[str, WindowSettings] | None = None) -> dict[str, BM25Index]:
    """One index per kind, from the disk cache when valid, else built (and cached).

    A kind in `windows` is indexed window by window (adapters/passages.py) and answers with
    `(id, score, (start, end))` hits.

    Raises CorpusFileError (adapters.corpus_dir) for a missing or malformed corpus file and
    BM25SettingsError for settings outside BM25's domain (both AdapterStartupError). Each index's `provenance` holds its
    banner entry.
    """
    from .bm25_index import check_settings, load_or_build
    from .corpus_dir import read_corpus
    from .startup import Progress
    from harness.fsutil import cache_dir

    check_settings(settings)
    folder = None
    if settings.use_cache:
        try:
            folder = cache_dir(NAME)
        except OSError as exc:  # an unwritable home must not stop the adapter, only slow it
            print(f"bm25: no index cache ({exc}); building every time", file=sys.stderr)
    indexes: dict[str, BM25Index] = {}
    for kind, path in paths.items():
        corpus = read_corpus(kind, Path(path), memory_check=settings.memory_check)
        window = (windows or {}).get(kind)
        if window is not None:  # passage mode: one BM25 document per window
            from .passages import PassageCorpus, Windowed
            cut = PassageCorpus.build(corpus.ids, corpus.texts, corpus.content_hash, window)
            indexes[kind] = Windowed(cut, load_or_build(cut.passage_ids, cut.texts, cut.content_hash, settings, folder,
                                                        Progress(NAME, f"indexing {kind} windows")),
                                     window)  # type: ignore[assignment]
            print(f"bm25: {kind}: {indexes[kind].provenance}", file=sys.stderr)
            continue
        indexes[kind] = load_or_build(corpus.ids, corpus.texts, corpus.content_hash, settings, folder,
                                      Progress(NAME, f"indexing {kind}"))
        print(f"bm25: {kind}: {indexes[kind].provenance}", file=sys.stderr)
    return indexes


def prepare(args: argparse.Namespace):
    """Check numpy, load every index; returns (search, banner). Raises AdapterStartupError."""
    from .startup import require

    require(["numpy"], "pip install 'retrieval-gate[bm25]'")
    from . import passages
    from .corpus_dir import required_corpus_paths
    from harness.adapter import index_for

    settings = settings_from_args(args)
    paths = required_corpus_paths(args.corpus)
    indexes = load_indexes(paths, settings, passages.window_settings(args, paths))

    def search(kind: str, query: str, k: int) -> list[tuple]:
        return index_for(indexes, kind).search(query, k)

    banner = {"name": NAME, "version": VERSION, "settings": settings.scoring(),
              "index": {kind: index.provenance for kind, index in indexes.items()},
              # a resource figure (docs/gate.md, "Resource budgets"); a windowed index counts its inner index
              "index_bytes": sum(getattr(index, "index", index).nbytes for index in indexes.values())}
    return search, banner


def main(argv: list[str] | None = None) -> int:
    """Parse options, load every index, print the banner, answer requests until EOF."""
    from .startup import run_adapter

    parser = argparse.ArgumentParser(prog=f"python -m {__package__}.bm25", description=__doc__.splitlines()[0])
    add_arguments(parser)
    from . import passages
    passages.add_arguments(parser)
    args = parser.parse_args(argv)
    return run_adapter(NAME, lambda: prepare(args))


if __name__ == "__main__":
    sys.exit(main())
