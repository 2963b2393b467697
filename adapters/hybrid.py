"""`python -m adapters.hybrid`: fusion of BM25 and the ONNX embedder, in one process.

Both parts index every corpus at start-up (each with its own cache); per query each
contributes its top `--candidates` and the fused list is ranked by `--fusion`: weighted
RRF, or min-max / z-score score fusion with `--weight` (adapters/fusion.py). The embedder
reads every window of a long document (`--long-documents windows`, a document scoring as its
best window), so nothing past its first 256 tokens goes unseen; BM25 reads documents whole.
"""

from __future__ import annotations

import argparse
import sys

from .fusion import METHODS, FusionSettings, fuse, reciprocal_rank_fusion

NAME = "hybrid"
VERSION = "3"  # 2: fusion methods (weighted RRF, min-max and z-score score fusion); 3: the embedder reads
#               every window of a long document, weighted RRF by default
# Chosen on the development split of the shipped sets only (`python -m benchmarks.tune_hybrid`;
# docs/performance.md has the grid and the held-out figures).
DEFAULT_FUSION = "rrf"
DEFAULT_WEIGHT = 0.6
DEFAULT_RRF_K = 10.0
DEFAULT_CANDIDATES = 100
DEFAULT_LONG_DOCUMENTS = "windows"  # --long-documents
INSTALL_HINT = "pip install 'retrieval-gate[onnx]' (numpy, onnxruntime, tokenizers)"

__all__ = ["reciprocal_rank_fusion", "fusion_from_args", "build_parser", "prepare", "main"]


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


def _unit_float(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from . import bm25, onnx_embed

    parser = argparse.ArgumentParser(prog=f"python -m {__package__}.{NAME}", description=__doc__.splitlines()[0])
    bm25.add_arguments(parser)  # also --corpus KIND=PATH and --no-cache, shared by both parts
    onnx_embed.add_model_arguments(parser)
    from . import passages
    passages.add_arguments(parser)  # both parts rank windows; a fused hit shows its better-ranked part's window
    passages.add_long_documents_argument(parser, DEFAULT_LONG_DOCUMENTS)  # the embedder part only
    group = parser.add_argument_group("fusion")
    group.add_argument("--fusion", choices=METHODS, default=DEFAULT_FUSION,
                       help="rrf: weighted reciprocal-rank fusion; minmax, zscore: weighted sum of each part's "
                            f"scores after that normalisation (default {DEFAULT_FUSION})")
    group.add_argument("--weight", type=_unit_float, default=DEFAULT_WEIGHT,
                       help=f"the embedder's share, 0..1; BM25 gets 1 - weight (default {DEFAULT_WEIGHT:g})")
    group.add_argument("--rrf-k", type=_non_negative_float, default=DEFAULT_RRF_K,
                       help=f"RRF constant k in 1/(k + rank), for --fusion rrf (default {DEFAULT_RRF_K:g})")
    group.add_argument("--candidates", type=_positive_int, default=DEFAULT_CANDIDATES,
                       help="top-N each part contributes (default %(default)s; raised to k when a request "
                            "asks for more)")
    return parser


def fusion_from_args(args: argparse.Namespace) -> FusionSettings:
    return FusionSettings(method=args.fusion, weight=args.weight, rrf_k=args.rrf_k, candidates=args.candidates)


def prepare(args: argparse.Namespace):
    """Check the packages, load both parts over every corpus; returns (search, banner)."""
    from .startup import require

    require(["numpy", "onnxruntime", "tokenizers"], INSTALL_HINT)
    from . import bm25, onnx_embed
    from .corpus_dir import required_corpus_paths
    from harness.adapter import index_for

    settings = bm25.settings_from_args(args)
    fusion = fusion_from_args(args)
    paths = required_corpus_paths(args.corpus)
    from . import passages
    windows = passages.window_settings(args, paths)
    lexical = bm25.load_indexes(paths, settings, windows)
    embedder, files = onnx_embed.build_embedder(args)
    semantic, embedder_index = onnx_embed.build_indexes(embedder, paths, use_cache=not args.no_cache,
                                                        windows=passages.embedder_windows(args, paths, windows))

    def search(kind: str, query: str, k: int) -> list[tuple]:
        depth = max(fusion.candidates, k)
        used = fusion if depth == fusion.candidates else FusionSettings(fusion.method, fusion.weight,
                                                                        fusion.rrf_k, depth)
        lexical_hits = index_for(lexical, kind).search(query, depth)
        semantic_hits = semantic[kind].search(embedder.embed_query(query), depth)
        fused = fuse([hit[:2] for hit in lexical_hits], [hit[:2] for hit in semantic_hits], used)[:k]
        if kind not in windows:  # not in passage mode: the embedder's windows only chose its ranking
            return fused
        return passages.attach_windows(fused, [lexical_hits, semantic_hits])  # hits keep their part's window

    bm25_scoring = settings.scoring()
    banner = {
        "name": NAME, "version": VERSION,
        "model": f"{fusion.summary()} of bm25 {_inline(bm25_scoring)} + {onnx_embed.model_summary(embedder, files)}",
        "fusion": fusion.banner(),
        # identity (harness/gating/identity.py): the embedder's model digest; fusion and BM25 settings
        "model_digest": embedder.model_digest,
        "settings": {"fusion": fusion.banner(), "bm25": bm25_scoring,
                     "embedder": onnx_embed.model_settings(embedder, args.long_documents)},
        "bm25": {"name": bm25.NAME, "version": bm25.VERSION, "settings": bm25_scoring},
        "embedder": onnx_embed.model_banner(embedder, files),
        "index": {kind: {"bm25": lexical[kind].provenance, "embedder": embedder_index[kind]}
                  for kind in sorted(lexical)},
    }
    return search, banner


def main(argv: list[str] | None = None) -> int:
    from .startup import run_adapter

    args = build_parser().parse_args(argv)
    return run_adapter(NAME, lambda: prepare(args))


def _inline(settings: object) -> str:
    if isinstance(settings, dict):
        return "(" + ", ".join(f"{key}={value}" for key, value in settings.items()) + ")"
    return str(settings)


if __name__ == "__main__":
    sys.exit(main())
