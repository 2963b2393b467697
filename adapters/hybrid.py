"""`python -m adapters.hybrid`: reciprocal-rank fusion of BM25 and the ONNX embedder, in one process.

Both parts index every corpus at start-up (each with its own cache); per query each
contributes its top `--candidates` and the fused list is ranked by RRF score.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

NAME = "hybrid"
VERSION = "1"
DEFAULT_RRF_K = 60.0
DEFAULT_CANDIDATES = 100
INSTALL_HINT = "pip install 'retrieval-gate[onnx]' (numpy, onnxruntime, tokenizers)"


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], rrf_k: float) -> list[tuple[str, float]]:
    """Fuse ranked id lists: score(d) = sum over lists holding d of 1 / (rrf_k + rank(d)), rank from 1.

    Cormack, Clarke and Buettcher (SIGIR 2009), who used rrf_k = 60. A document missing from
    a list gets nothing from it. Result: (id, score), score descending, then id ascending.
    Each list's ids must be unique (a repeated id would count twice, so it is an error).
    """
    fused: dict[str, float] = {}
    for ranking in rankings:
        if len(set(ranking)) != len(ranking):
            raise ValueError("reciprocal_rank_fusion: a ranking repeats an id")
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (rrf_k + rank)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from adapters import bm25, onnx_embed

    parser = argparse.ArgumentParser(prog=f"python -m adapters.{NAME}", description=__doc__.splitlines()[0])
    bm25.add_arguments(parser)  # also --corpus KIND=PATH and --no-cache, shared by both parts
    onnx_embed.add_model_arguments(parser)
    group = parser.add_argument_group("fusion")
    group.add_argument("--rrf-k", type=_non_negative_float, default=DEFAULT_RRF_K,
                       help=f"RRF constant k in 1/(k + rank) (default {DEFAULT_RRF_K:g})")
    group.add_argument("--candidates", type=_positive_int, default=DEFAULT_CANDIDATES,
                       help="top-N each part contributes (default %(default)s; raised to k when a request "
                            "asks for more)")
    return parser


def prepare(args: argparse.Namespace):
    """Check the packages, load both parts over every corpus; returns (search, banner)."""
    from adapters.startup import require

    require(["numpy", "onnxruntime", "tokenizers"], INSTALL_HINT)
    from adapters import bm25, onnx_embed
    from adapters.corpus_dir import required_corpus_paths
    from harness.adapter import index_for

    settings = bm25.settings_from_args(args)
    paths = required_corpus_paths(args.corpus)
    lexical = bm25.load_indexes(paths, settings)
    embedder, files = onnx_embed.build_embedder(args)
    semantic, embedder_index = onnx_embed.build_indexes(embedder, paths, use_cache=not args.no_cache)

    def search(kind: str, query: str, k: int) -> list[tuple[str, float]]:
        depth = max(args.candidates, k)
        lexical_ids = [doc_id for doc_id, _ in index_for(lexical, kind).search(query, depth)]
        semantic_ids = [doc_id for doc_id, _ in semantic[kind].search(embedder.embed_query(query), depth)]
        return reciprocal_rank_fusion([lexical_ids, semantic_ids], args.rrf_k)[:k]

    bm25_scoring = settings.scoring()
    banner = {
        "name": NAME, "version": VERSION,
        "model": (f"rrf(k={args.rrf_k:g}, candidates={args.candidates}) of bm25 {_inline(bm25_scoring)} "
                  f"+ {onnx_embed.model_summary(embedder, files)}"),
        "fusion": {"method": "rrf", "rrf_k": args.rrf_k, "candidates": args.candidates},
        "bm25": {"name": bm25.NAME, "version": bm25.VERSION, "settings": bm25_scoring},
        "embedder": onnx_embed.model_banner(embedder, files),
        "index": {kind: {"bm25": lexical[kind].provenance, "embedder": embedder_index[kind]}
                  for kind in sorted(lexical)},
    }
    return search, banner


def main(argv: list[str] | None = None) -> int:
    from adapters.startup import run_adapter

    args = build_parser().parse_args(argv)
    return run_adapter(NAME, lambda: prepare(args))


def _inline(settings: object) -> str:
    if isinstance(settings, dict):
        return "(" + ", ".join(f"{key}={value}" for key, value in settings.items()) + ")"
    return str(settings)


if __name__ == "__main__":
    sys.exit(main())
