"""`python -m adapters.ann`: approximate nearest-neighbour search (an HNSW graph, faiss-cpu) over the ONNX embedder's
vectors; the non-deterministic reference backend (protocol v1).

Embeds every corpus of $HARNESS_CORPUS_DIR (or `--corpus KIND=PATH`) as `adapters.onnx_embed` does (same model
options, same embeddings cache), then builds one HNSW graph per corpus: `--m` links per node, `--ef-construction`
when building, `--ef-search` candidates per query (the effort knob: lower is faster and misses more). `--seed`
decides the graph: it orders the insertions and seeds the level draw, so one seed gives one graph and the same
rankings on every start, and another seed another graph (docs/adapters.md, "The ANN adapter"). The graph is built at
every start (never cached): a run with a new seed is a rebuilt index. The seed is reported in the banner's `index`,
not in `settings`: runs with other seeds are the same backend, which is what `calibrate --seed-option=--seed` needs.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from . import onnx_embed
from .startup import AdapterStartupError, require, run_adapter

if TYPE_CHECKING:
    import numpy as np

NAME = "ann"
VERSION = "1"
INSTALL_HINT = "pip install 'retrieval-gate[ann]' (faiss-cpu, numpy, onnxruntime, tokenizers)"
DEFAULT_M = 16
DEFAULT_EF_CONSTRUCTION = 40
DEFAULT_EF_SEARCH = 64


class ConfigError(AdapterStartupError):
    """Bad options; main turns it into exit 2."""


def log(message: str) -> None:
    print(f"{NAME}: {message}", file=sys.stderr, flush=True)


class HnswIndex:
    """One corpus's HNSW graph over its normalised vectors, searched by inner product (cosine)."""

    def __init__(self, ids: list[str], matrix: np.ndarray, *, m: int, ef_construction: int, ef_search: int,
                 seed: int) -> None:
        import faiss
        import numpy as np

        self.ids = ids
        # insertion order is part of the graph: the seed decides it, and the level draw
        self.order = np.random.default_rng(seed).permutation(len(ids))
        self.index = faiss.IndexHNSWFlat(int(matrix.shape[1]) if matrix.ndim == 2 else 1, m,
                                         faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.rng = faiss.RandomGenerator(seed)
        self.index.hnsw.efConstruction = ef_construction
        self.index.hnsw.efSearch = ef_search
        if len(ids):
            self.index.add(np.ascontiguousarray(matrix[self.order], dtype=np.float32))

    def search(self, query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Up to k documents the graph finds, best first (fewer when the graph reaches fewer)."""
        import numpy as np

        if not np.isfinite(query_vector).all():
            raise ValueError("the query embedding is not finite")
        if not self.ids or k < 1:
            return []
        scores, positions = self.index.search(np.ascontiguousarray(query_vector.reshape(1, -1), dtype=np.float32),
                                              min(k, len(self.ids)))
        return [(self.ids[int(self.order[position])], float(score))
                for score, position in zip(scores[0], positions[0]) if position >= 0]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {__package__}.{NAME}", description=__doc__.splitlines()[0])
    onnx_embed.add_model_arguments(parser)
    parser.add_argument("--corpus", action="append", default=[], metavar="KIND=PATH",
                        help="serve this jsonl corpus as KIND (repeatable; adds to $HARNESS_CORPUS_DIR)")
    parser.add_argument("--no-cache", action="store_true", help="embed every corpus again, write no embeddings cache")
    graph = parser.add_argument_group("HNSW graph")
    graph.add_argument("--m", type=int, default=DEFAULT_M, help=f"links per node (default {DEFAULT_M})")
    graph.add_argument("--ef-construction", type=int, default=DEFAULT_EF_CONSTRUCTION,
                       help=f"candidates kept while building (default {DEFAULT_EF_CONSTRUCTION})")
    graph.add_argument("--ef-search", type=int, default=DEFAULT_EF_SEARCH,
                       help=f"candidates kept per query: the effort knob (default {DEFAULT_EF_SEARCH}; at least k is "
                            f"used)")
    graph.add_argument("--seed", type=int, default=0,
                       help="decides the graph (insertion order and level draw); default 0")
    graph.add_argument("--graph-threads", type=int, default=1,
                       help="threads building the graph (default 1: more are faster, and the graph then depends on "
                            "their timing as well as the seed)")
    return parser


def check_options(args: argparse.Namespace) -> None:
    for option, value, low in (("--m", args.m, 2), ("--ef-construction", args.ef_construction, 1),
                               ("--ef-search", args.ef_search, 1), ("--graph-threads", args.graph_threads, 1),
                               ("--seed", args.seed, 0)):
        if value < low:
            raise ConfigError(f"{option}: must be at least {low}, got {value}")


def prepare(args: argparse.Namespace):
    """Check the packages, load the model, embed every corpus, build each graph; returns (search, banner)."""
    check_options(args)
    require(["numpy", "onnxruntime", "tokenizers", "faiss"], INSTALL_HINT)
    import faiss

    from .corpus_dir import required_corpus_paths
    from harness.adapter import index_for

    faiss.omp_set_num_threads(args.graph_threads)
    paths = required_corpus_paths(args.corpus)
    embedder, files = onnx_embed.build_embedder(args)
    exact, provenance = onnx_embed.build_indexes(embedder, paths, use_cache=not args.no_cache)
    indexes = {}
    for kind, embedded in exact.items():
        started = time.monotonic()
        indexes[kind] = HnswIndex(embedded.ids, embedded.matrix, m=args.m, ef_construction=args.ef_construction,
                                  ef_search=args.ef_search, seed=args.seed)
        provenance[kind]["graph_seconds"] = round(time.monotonic() - started, 3)
        provenance[kind]["seed"] = args.seed
        log(f"{kind}: HNSW graph of {len(embedded.ids)} vectors built (seed {args.seed})")
    faiss.omp_set_num_threads(1)  # one query at a time: no thread pool to wake per request
    settings = {**onnx_embed.model_settings(embedder, onnx_embed.DEFAULT_LONG_DOCUMENTS), "m": args.m,
                "ef_construction": args.ef_construction, "ef_search": args.ef_search}
    banner = {"name": NAME, "version": VERSION, "model": onnx_embed.model_summary(embedder, files),
              "model_digest": embedder.model_digest, "settings": settings,
              "faiss": faiss.__version__, "embedder": onnx_embed.model_banner(embedder, files), "index": provenance}

    def search(kind: str, query: str, k: int) -> list[tuple]:
        return index_for(indexes, kind).search(embedder.embed_query(query), k)

    return search, banner


def main(argv: list[str] | None = None) -> int:
    """Parse options, embed and index every corpus, print the banner, answer requests until EOF."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    return run_adapter(NAME, lambda: prepare(args))


if __name__ == "__main__":
    sys.exit(main())
