"""`python -m adapters.hybrid`: fusion of BM25 and the ONNX embedder, in one process.

Both parts index every corpus at start-up (each with its own cache); per query each
contributes its top `--candidates` and the fused list is ranked by `--fusion`: weighted
RRF, or min-max / z-score score fusion with `--weight` (adapters/fusion.py). Each corpus gets
the settings tuned for it on its sets' development split (the table adapters/fusion_tuned.json,
found by kind and corpus sha256), a corpus the table does not know the defaults below; options
given on the command line replace either, field by field, for every corpus. The embedder reads
every window of a long document (`--long-documents windows`, a document scoring as its best
window), so nothing past its first 256 tokens goes unseen; BM25 reads documents whole.
"""

from __future__ import annotations

import argparse
import sys

import dataclasses
from pathlib import Path

from .fusion import METHODS, TUNED_TABLE, FusionSettings, fuse, read_table, reciprocal_rank_fusion

NAME = "hybrid"
VERSION = "4"  # 2: fusion methods (weighted RRF, min-max and z-score score fusion); 3: the embedder reads
#               every window of a long document, weighted RRF by default; 4: fusion tuned per corpus
# For a corpus the tuned table does not know; chosen on the development split of the shipped sets
# (docs/performance.md, "The hybrid: fusion tuned per corpus on the development split").
DEFAULT_FUSION = FusionSettings(method="rrf", weight=0.6, rrf_k=10.0, candidates=100)
DEFAULT_LONG_DOCUMENTS = "windows"  # --long-documents
INSTALL_HINT = "pip install 'retrieval-gate[onnx]' (numpy, onnxruntime, tokenizers)"

__all__ = ["reciprocal_rank_fusion", "fusion_per_corpus", "build_parser", "prepare", "main"]


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
    group = parser.add_argument_group("fusion (each corpus: the tuned table's settings, else the defaults below; "
                                      "an option given replaces its field for every corpus)")
    group.add_argument("--fusion", choices=METHODS, default=None,
                       help="rrf: weighted reciprocal-rank fusion; minmax, zscore: weighted sum of each part's "
                            f"scores after that normalisation (default {DEFAULT_FUSION.method})")
    group.add_argument("--weight", type=_unit_float, default=None,
                       help=f"the embedder's share, 0..1; BM25 gets 1 - weight (default {DEFAULT_FUSION.weight:g})")
    group.add_argument("--rrf-k", type=_non_negative_float, default=None,
                       help=f"RRF constant k in 1/(k + rank), for --fusion rrf (default {DEFAULT_FUSION.rrf_k:g})")
    group.add_argument("--candidates", type=_positive_int, default=None,
                       help=f"top-N each part contributes (default {DEFAULT_FUSION.candidates}; raised to k when "
                            "a request asks for more)")
    group.add_argument("--fusion-table", type=Path, default=TUNED_TABLE, metavar="FILE",
                       help="settings tuned per corpus (`python -m benchmarks.tune_hybrid --write --table FILE`; "
                            "default: the shipped adapters/fusion_tuned.json)")
    group.add_argument("--untuned", action="store_true", help="ignore the tuned table: the defaults for every corpus")
    return parser


def fusion_per_corpus(args: argparse.Namespace, corpus_hashes: dict[str, str]) -> dict[str, FusionSettings]:
    """kind -> FusionSettings: the tuned table's for that corpus, else the defaults, with the options given on top.

    `corpus_hashes` maps each kind to the sha256 of its corpus file (the key of the tuned table).
    """
    from .startup import AdapterStartupError

    try:
        table = {} if args.untuned else read_table(args.fusion_table)
    except ValueError as problem:
        raise AdapterStartupError(str(problem)) from None
    given = {field: value for field, value in (("method", args.fusion), ("weight", args.weight),
                                               ("rrf_k", args.rrf_k), ("candidates", args.candidates))
             if value is not None}
    return {kind: dataclasses.replace(table.get((kind, content_hash), DEFAULT_FUSION), **given)
            for kind, content_hash in corpus_hashes.items()}


@dataclasses.dataclass(frozen=True)
class Parts:
    """Both parts over every corpus, as the adapter searches them (benchmarks/tune_hybrid.py ranks with them too)."""

    settings: object  # adapters.bm25_index.BM25Settings
    lexical: dict  # kind -> BM25 index (or its windowed form in passage mode)
    semantic: dict  # kind -> embedding index
    embedder: object
    files: object  # the model's files (adapters.model_store)
    embedder_index: dict  # kind -> the embedder's banner entry
    windows: dict  # kind -> passages.WindowSettings, for the kinds in passage mode
    corpus_hashes: dict  # kind -> the sha256 of its corpus file (the tuned table's key)

    def rankings(self, kind: str, query: str, depth: int) -> tuple[list[tuple], list[tuple]]:
        """Each part's top `depth` hits for `query` (an unknown kind raises harness.adapter's UnknownKind)."""
        from harness.adapter import index_for

        lexical_hits = index_for(self.lexical, kind).search(query, depth)
        return lexical_hits, self.semantic[kind].search(self.embedder.embed_query(query), depth)


def build_parts(args: argparse.Namespace, paths: dict[str, Path]) -> Parts:
    """Check the packages, load both parts over the corpora at `paths` (kind -> `<kind>.jsonl`)."""
    from .startup import require

    require(["numpy", "onnxruntime", "tokenizers"], INSTALL_HINT)
    from . import bm25, onnx_embed, passages
    from .corpus_dir import sha256_of

    settings = bm25.settings_from_args(args)
    windows = passages.window_settings(args, paths)
    lexical = bm25.load_indexes(paths, settings, windows)
    embedder, files = onnx_embed.build_embedder(args)
    semantic, embedder_index = onnx_embed.build_indexes(embedder, paths, use_cache=not args.no_cache,
                                                        windows=passages.embedder_windows(args, paths, windows))
    hashes = {kind: sha256_of(Path(path).read_bytes()) for kind, path in paths.items()}
    return Parts(settings, lexical, semantic, embedder, files, embedder_index, windows, hashes)


def prepare(args: argparse.Namespace):
    """Load both parts over every corpus and each corpus's fusion; returns (search, banner)."""
    from .corpus_dir import required_corpus_paths

    parts = build_parts(args, required_corpus_paths(args.corpus))  # checks the packages first
    from . import bm25, onnx_embed, passages

    settings, lexical, embedder, files = parts.settings, parts.lexical, parts.embedder, parts.files
    fusion = fusion_per_corpus(args, parts.corpus_hashes)

    def search(kind: str, query: str, k: int) -> list[tuple]:
        tuned = fusion.get(kind, DEFAULT_FUSION)  # an unknown kind: parts.rankings raises its error reply
        used = dataclasses.replace(tuned, candidates=max(tuned.candidates, k))
        lexical_hits, semantic_hits = parts.rankings(kind, query, used.candidates)
        fused = fuse([hit[:2] for hit in lexical_hits], [hit[:2] for hit in semantic_hits], used)[:k]
        if kind not in parts.windows:  # not in passage mode: the embedder's windows only chose its ranking
            return fused
        return passages.attach_windows(fused, [lexical_hits, semantic_hits])  # hits keep their part's window

    bm25_scoring = settings.scoring()
    per_kind = {kind: fusion[kind].banner() for kind in sorted(fusion)}
    banner = {
        "name": NAME, "version": VERSION,
        "model": f"fusion per corpus ({'; '.join(f'{kind}: {fusion[kind].summary()}' for kind in sorted(fusion))}) "
                 f"of bm25 {_inline(bm25_scoring)} + {onnx_embed.model_summary(embedder, files)}",
        "fusion": per_kind,
        # identity (harness/gating/identity.py): the embedder's model digest; fusion and BM25 settings
        "model_digest": embedder.model_digest,
        "settings": {"fusion": per_kind, "bm25": bm25_scoring,
                     "embedder": onnx_embed.model_settings(embedder, args.long_documents)},
        "bm25": {"name": bm25.NAME, "version": bm25.VERSION, "settings": bm25_scoring},
        "embedder": onnx_embed.model_banner(embedder, files),
        "index": {kind: {"bm25": lexical[kind].provenance, "embedder": parts.embedder_index[kind]}
                  for kind in sorted(lexical)},
        # a resource figure (docs/gate.md, "Resource budgets"): both parts' indexes in memory
        "index_bytes": sum(getattr(index, "index", index).nbytes for index in lexical.values())
                       + sum(onnx_embed.index_nbytes(index) for index in parts.semantic.values()),
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
