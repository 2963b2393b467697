"""`python -m adapters.cache info|prune`: the reference adapters' on-disk caches, their size and their pruning.

`info` prints one line per embedding store (vectors, bytes, corpora using it), per BM25
index file and per rewritten model graph. `prune --older-than DAYS` (default 30) drops
embedding manifests not used for that long and every vector no remaining corpus uses, BM25
index files not loaded for that long (a load touches the file), and, whatever their age,
the model graphs this install never loads again (another rewrite recipe, onnxruntime or
onnx version: adapters/model_optimise.py; another install sharing the cache rebuilds its
own in seconds). Both also count the temp files of writes that never
finished (an adapter killed while writing a pack or an index, `.NAME.XXXX.tmp`): prune
removes those untouched for ABANDONED_SECONDS, whatever --older-than says, so a write in
progress in another run is never cut. A cache folder that cannot be used (a file where
the folder belongs) is one line and exit 2, before anything is removed. Standard library
and numpy only (onnxruntime, when installed, for the model graphs' keys).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from harness.fsutil import cache_dir

NAME = "cache"
ABANDONED_SECONDS = 3600.0  # a temp file of an atomic write untouched this long is a write that never finished
MAX_DAYS = 36500  # --older-than beyond a century (or inf, nan) is a typo, not an age


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _folders() -> tuple[Path, Path, Path]:
    """The embedding, BM25 and model graph cache folders, made if missing.

    An unusable one (a file in its place) raises here, before anything is read or removed.
    """
    return cache_dir("embeddings"), cache_dir("bm25"), cache_dir("models", "optimised")


def info() -> int:
    from .embedding_cache import summarise

    embeddings, bm25, _ = _folders()
    total = 0
    for summary in summarise(embeddings):
        total += summary.bytes
        broken = f", {summary.unreadable} unreadable manifest(s) that keep nothing" if summary.unreadable else ""
        print(f"embeddings {summary.folder.name}: {summary.vectors} vectors, {_mb(summary.bytes)}, "
              f"used by {summary.corpora} corpora{broken}")
    for path in sorted(bm25.glob("*.bm25")):
        stat = path.stat()
        total += stat.st_size
        age = (time.time() - stat.st_mtime) / 86400
        print(f"bm25 {path.name[:32]}: {_mb(stat.st_size)}, last used {age:.1f} days ago")
    total += _graph_lines()
    abandoned = _temp_files()
    if abandoned:
        size = sum(size for _, size, _ in abandoned)
        total += size
        print(f"unfinished writes: {len(abandoned)} temp file(s), {_mb(size)} "
              f"(prune removes those untouched for {ABANDONED_SECONDS / 3600:g} hour)")
    print(f"total: {_mb(total)} in {cache_dir()}")
    return 0


def _graphs():
    """The cached model graphs, or None when onnxruntime (which their key names) is not installed."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    from .model_optimise import cached_graphs

    return cached_graphs()


def _graph_lines() -> int:
    """Print a line per cached model graph; return their bytes."""
    graphs = _graphs()
    if graphs is None:
        print("graphs: not checked (onnxruntime is not installed)")
        return 0
    for graph in graphs:
        state = "used by this install" if graph.usable else "stale: another recipe or version (prune removes it)"
        print(f"graph {graph.name}: {_mb(graph.size)}, {state}")
    return sum(graph.size for graph in graphs)


def _stale_graphs(abandoned_before: float) -> list:
    """Graphs this install never loads; a graph file without its sidecar only if untouched since `abandoned_before` (a build may be running)."""
    return [graph for graph in _graphs() or [] if not graph.usable
            and (any(path.suffix == ".json" for path in graph.files) or graph.modified < abandoned_before)]


def _temp_files() -> list[tuple[Path, int, float]]:
    """(path, bytes, mtime) of every atomic-write temp file in the embedding, BM25 and model graph caches."""
    found = []
    for root in _folders():
        for path in root.rglob(".*.tmp") if root.is_dir() else []:
            try:
                stat = path.stat()
            except OSError:
                continue
            found.append((path, stat.st_size, stat.st_mtime))
    return found


def prune(older_than_days: float) -> int:
    from .embedding_cache import prune as prune_embeddings

    embeddings, bm25, _ = _folders()
    vectors, freed = prune_embeddings(embeddings, older_than_days)
    now = time.time()
    cutoff, abandoned_before = now - older_than_days * 86400, now - ABANDONED_SECONDS
    files = 0
    for path in bm25.glob("*.bm25"):
        try:
            stat = path.stat()
            if stat.st_mtime < cutoff:
                path.unlink()
                files += 1
                freed += stat.st_size
        except OSError:
            continue
    graphs = 0
    for graph in _stale_graphs(abandoned_before):
        try:
            for path in graph.files:
                path.unlink()
        except OSError:
            continue
        graphs += 1
        freed += graph.size
    temps = 0
    for path, size, modified in _temp_files():
        if modified < abandoned_before:
            try:
                path.unlink()
            except OSError:
                continue
            temps += 1
            freed += size
    print(f"pruned {vectors} embedding vectors, {files} BM25 index files, {graphs} stale model graphs and "
          f"{temps} unfinished writes, {_mb(freed)} freed")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__package__}.cache", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="size of every cache entry")
    pruning = commands.add_parser("prune", help="drop entries no corpus used for --older-than days")
    pruning.add_argument("--older-than", type=float, default=30.0, metavar="DAYS",
                         help="keep what a corpus used in the last DAYS days (default 30; 0 keeps nothing)")
    args = parser.parse_args(argv)
    try:
        import numpy  # noqa: F401
    except ImportError:
        print(f"{NAME}: error: missing numpy; install with: pip install 'retrieval-gate[onnx]'", file=sys.stderr)
        return 2
    if args.command == "prune" and not 0 <= args.older_than <= MAX_DAYS:  # NaN fails both comparisons
        print(f"{NAME}: error: --older-than {args.older_than:g}: must be a number of days from 0 to {MAX_DAYS}",
              file=sys.stderr)
        return 2
    try:
        return info() if args.command == "info" else prune(args.older_than)
    except BrokenPipeError:
        # `info | head -1`: the reader left; end as SIGPIPE would, as the harness's commands do
        # (harness/commands/crash_guard.py), with stdout pointed at devnull so the final flush is quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 128 + signal.SIGPIPE
    except OSError as exc:  # a cache folder that cannot be made or read ($RETRIEVAL_GATE_CACHE)
        where = exc.filename or "the cache folder ($RETRIEVAL_GATE_CACHE, $XDG_CACHE_HOME or ~/.cache)"
        print(f"{NAME}: error: {where}: cannot be used as a cache folder ({exc.strerror or exc})", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
