"""Turn texts into vectors with an ONNX sentence-embedding model: tokenise, run, pool, normalise.

The on-disk cache of passage vectors is adapters/embedding_cache.py.

Uses onnxruntime, tokenizers and numpy only; the callers import this module inside their
`main()` so a missing package becomes an install hint, not a traceback.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .cpus import intra_op_threads, usable_cpus
from .startup import AdapterStartupError

POOLING_CHOICES = ("mean", "cls")
# plain: the model file as it is; fused: its rewritten graph (same vectors, faster;
# adapters/graph_rewrite.py, cached by adapters/model_optimise.py).
GRAPH_CHOICES = ("plain", "fused")
# Texts the rewritten graph must embed like the plain model (one padded batch, then one alone).
PROBE_TEXTS = ("Return the number of items in a container.",
               "Open a file and return a stream; raise OSError upon failure. The mode defaults to reading text.",
               "zip", "Compute the cosine similarity between two vectors of floating point numbers, "
               "ignoring any entries that are not a number, and raise ValueError when the lengths differ.")
POOLING_CONFIG = Path("1_Pooling") / "config.json"
# Texts tokenised per call (see Embedder._tokenize): enough for the tokenizer's threads, few
# enough that the encodings of long texts stay a few MB.
TOKENIZE_CHUNK = 256

_ONNX_INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


class EmbedderError(AdapterStartupError):
    """The model, tokenizer or options cannot be used; one line naming the file or option."""


@dataclass(frozen=True, slots=True)
class EmbedOptions:
    """How texts become vectors. `threads` (0: one per usable CPU) is how many CPUs embedding uses;
    `spinning` lets onnxruntime's idle threads spin; `graph` picks the model graph (GRAPH_CHOICES)."""

    pooling: str = "mean"
    normalize: bool = True
    query_prefix: str = ""
    passage_prefix: str = ""
    max_length: int = 256
    batch_size: int = 32
    batch_tokens: int = 256
    threads: int = 0
    spinning: bool = False
    graph: str = "plain"


def session_options(threads: int, spinning: bool = False):
    """onnxruntime session options as the embedder runs: `threads` intra-op threads (0: automatic), one inter-op."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Spinning worker threads burn the CPU another process (or our other thread) needs:
    # on a shared 2-core machine they cost 35-40% of the CPU per document at 2 threads
    # (benchmarks/embed.py, docs/performance.md), and gain nothing measurable at 1.
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    options.log_severity_level = 3
    return options


def batch_workers(threads: int) -> int:
    """How many batches run at once when many texts are embedded: `threads`, or every usable CPU for 0."""
    return threads if threads > 0 else usable_cpus()


def plan_batches(lengths: Sequence[int], batch_size: int, batch_tokens: int) -> list[list[int]]:
    """Cut positions 0..n-1 (texts already sorted longest first) into consecutive batches.

    A batch holds at most `batch_size` texts and, once padded to its first (longest) text,
    at most `batch_tokens` tokens, but always at least one text. Long texts thus go in
    small batches: attention tensors grow with batch x length^2, and past the CPU caches a
    big batch of long texts is slower per text than one text at a time.
    """
    batches: list[list[int]] = []
    for position, length in enumerate(lengths):
        if batches:
            batch = batches[-1]
            width = lengths[batch[0]]
            if len(batch) < batch_size and (len(batch) + 1) * width <= batch_tokens:
                batch.append(position)
                continue
        batches.append([position])
    return batches


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average of the token vectors where mask is 1: sum_t h[b,t] m[b,t] / max(sum_t m[b,t], 1e-9).

    hidden (batch, tokens, dim), mask (batch, tokens) of 0/1; padding never counts.
    """
    weights = mask.astype(np.float32)[:, :, None]
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    return (summed / counts).astype(np.float32)


def cls_pool(hidden: np.ndarray) -> np.ndarray:
    """The first token's vector ([CLS] for BERT-style tokenizers)."""
    return np.ascontiguousarray(hidden[:, 0, :], dtype=np.float32)


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Each row divided by its Euclidean norm; an all-zero row stays zero (norm floored at 1e-12)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def pooling_from_config(model_dir: Path) -> str | None:
    """The pooling named by a sentence-transformers `1_Pooling/config.json`, or None without one."""
    path = model_dir / POOLING_CONFIG
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderError(f"{path}: not readable JSON: {exc}") from None
    if not isinstance(config, dict):
        raise EmbedderError(f"{path}: not a JSON object")
    if config.get("pooling_mode_cls_token"):
        return "cls"
    if config.get("pooling_mode_mean_tokens"):
        return "mean"
    enabled = sorted(key for key, value in config.items() if key.startswith("pooling_mode_") and value)
    raise EmbedderError(f"{path}: pooling {enabled or 'none'} is not supported; "
                        f"use --pooling with one of {', '.join(POOLING_CHOICES)}")


class Embedder:
    """One loaded model + tokenizer. `embed` is deterministic for fixed options and thread count."""

    def __init__(self, model_path: Path, tokenizer_path: Path, options: EmbedOptions, *,
                 log: Callable[[str], None] | None = None) -> None:
        from tokenizers import Tokenizer

        if options.pooling not in POOLING_CHOICES:
            raise EmbedderError(f"--pooling {options.pooling!r}: expected one of {', '.join(POOLING_CHOICES)}")
        if options.max_length < 2:
            raise EmbedderError(f"--max-length {options.max_length}: must be at least 2")
        if options.batch_size < 1:
            raise EmbedderError(f"--batch-size {options.batch_size}: must be at least 1")
        if options.batch_tokens < 1:
            raise EmbedderError(f"--batch-tokens {options.batch_tokens}: must be at least 1")
        if options.graph not in GRAPH_CHOICES:
            raise EmbedderError(f"--graph {options.graph!r}: expected one of {', '.join(GRAPH_CHOICES)}")
        if options.threads < 0:
            raise EmbedderError(f"--threads {options.threads}: must be 0 (automatic) or more")
        self.options = options
        self.model_path = model_path
        self.tokenizer_path = tokenizer_path
        try:
            model_bytes = model_path.read_bytes()
            tokenizer_bytes = tokenizer_path.read_bytes()
        except OSError as exc:
            raise EmbedderError(f"{exc.filename}: cannot read: {exc.strerror}") from None
        self.model_digest = hashlib.sha256(model_bytes).hexdigest()
        self.tokenizer_digest = hashlib.sha256(tokenizer_bytes).hexdigest()

        try:
            self.tokenizer = Tokenizer.from_str(tokenizer_bytes.decode("utf-8"))
        except Exception as exc:  # tokenizers raises a bare Exception on a bad file
            raise EmbedderError(f"{tokenizer_path}: not a loadable tokenizer.json: {_first_line(exc)}") from None
        self.pad_id = _pad_id(self.tokenizer)
        # tokenizer.json may fix its own truncation/padding (MiniLM's: 128); ours come from options.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=options.max_length)

        self._session_options = session_options(intra_op_threads(options.threads), options.spinning)
        self._log = log or (lambda message: None)
        # One text (a query) runs on `threads` intra-op threads; many texts run as whole batches
        # side by side, one thread each, on a second session made on first use (`_parallel`):
        # a batch of short texts splits poorly across threads (docs/performance.md).
        self.workers = batch_workers(options.threads)
        self.parallel_session = None
        self._graph_file: Path | None = None  # none yet: the graph probe below embeds serially
        self.graph, self.graph_note, graph_bytes = "plain", "", model_bytes
        if options.graph != "plain":
            from .model_optimise import load_graph

            chosen = load_graph(model_bytes, self.model_digest, options.graph,
                                lambda candidate: self._probe_cosine(model_bytes, candidate), log=log,
                                # before a rewrite: a model that does not load is an error, not a fallback
                                before_build=lambda: self._new_session(model_bytes))
            self.graph, self.graph_note, graph_bytes = chosen.variant, chosen.note, chosen.model
        if self.graph == "plain":
            self._graph_file, self._graph_sha256 = model_path, self.model_digest
        else:
            self._graph_file, self._graph_sha256 = chosen.path, chosen.sha256
        self.session = self._new_session(graph_bytes)
        self._read_inputs()
        self._dimensions: int | None = None

    def _new_session(self, model_bytes: bytes, options=None, also_unfused: Sequence[str] = ()):
        """A session of `model_bytes`, loaded without LOAD_FUSIONS_OFF (and `also_unfused`, for benchmarks)."""
        import onnxruntime

        from .graph_rewrite import LOAD_FUSIONS_OFF

        try:
            return onnxruntime.InferenceSession(
                model_bytes, sess_options=options or self._session_options, providers=["CPUExecutionProvider"],
                disabled_optimizers=[*LOAD_FUSIONS_OFF, *also_unfused])
        except Exception as exc:  # onnxruntime raises its own pybind error types
            raise EmbedderError(f"{self.model_path}: not a loadable ONNX model: {_first_line(exc)}") from None

    def _read_inputs(self) -> None:
        model_path = self.model_path
        inputs = {node.name: node for node in self.session.get_inputs()}
        for required in ("input_ids", "attention_mask"):
            if required not in inputs:
                raise EmbedderError(f"{model_path}: model has no {required!r} input "
                                    f"(inputs: {', '.join(sorted(inputs))})")
        self.input_types = {name: _ONNX_INT_TYPES.get(node.type, np.int64) for name, node in inputs.items()}
        # Feed token_type_ids only when the model declares it (BERT does, many others do not).
        self.uses_token_types = "token_type_ids" in inputs
        self.output_name = self.session.get_outputs()[0].name

    def _probe_cosine(self, plain: bytes, candidate: bytes) -> float:
        """Lowest cosine between the plain model's and `candidate`'s vectors for PROBE_TEXTS (padded and alone)."""
        vectors = []
        for model in (plain, candidate):
            self.session = None  # one session at a time: the build's memory peak
            self.session = self._new_session(model)
            self._read_inputs()
            vectors.append(np.concatenate([self.embed(PROBE_TEXTS), self.embed(PROBE_TEXTS[:1])]))
        del self.session  # __init__ makes the sessions it keeps
        reference, other = (l2_normalize(matrix) for matrix in vectors)
        return float((reference * other).sum(axis=1).min())

    @property
    def dimensions(self) -> int:
        """Width of one embedding (probed once with a one-word text when the model leaves it symbolic)."""
        if self._dimensions is None:
            self._dimensions = int(self.embed(["dimension probe"]).shape[1])
        return self._dimensions

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector (the query prefix applied), shape (dim,)."""
        return self.embed([text], prefix=self.options.query_prefix)[0]

    def embed_passages(self, texts: Sequence[str], *,
                       progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        return self.embed(texts, prefix=self.options.passage_prefix, progress=progress)

    def embed(self, texts: Sequence[str], prefix: str = "", *,
              progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """Vectors for `texts` in input order, shape (len(texts), dim), float32.

        Texts are run in batches of similar token length (longest first, see `plan_batches`)
        so a batch pads little; each batch is padded to its own longest text, never to a
        fixed width. With more than one batch and worker, `workers` batches run at once on
        the one-thread session. `progress(done, total)` is called after every batch, in order.
        """
        if not texts:
            return np.zeros((0, self._dimensions or 0), dtype=np.float32)
        token_ids, type_ids = self._tokenize(texts, prefix)
        order = sorted(range(len(texts)), key=lambda index: (-len(token_ids[index]), index))
        batches = plan_batches([len(token_ids[index]) for index in order], self.options.batch_size,
                               self.options.batch_tokens)
        batches = [[order[position] for position in batch] for batch in batches]
        outputs = []
        done = 0
        for batch, vectors in zip(batches, self._run_batches(batches, token_ids, type_ids)):
            outputs.append(vectors)
            done += len(batch)
            if progress is not None:
                progress(done, len(texts))
        result = np.empty((len(texts), outputs[0].shape[1]), dtype=np.float32)
        for batch, vectors in zip(batches, outputs):
            result[batch] = vectors
        self._dimensions = int(result.shape[1])
        return result

    def _tokenize(self, texts: Sequence[str], prefix: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each text's token ids and type ids (truncated to max_length), TOKENIZE_CHUNK texts at a time.

        Why in chunks: an `Encoding` keeps offsets, token strings and every truncated-away
        piece, about 100 KB for a long text; all 6,000 man pages at once held 600 MB. Only the
        ids are kept, as small arrays.
        """
        token_ids: list[np.ndarray] = []
        type_ids: list[np.ndarray] = []
        for start in range(0, len(texts), TOKENIZE_CHUNK):
            chunk = [prefix + text for text in texts[start:start + TOKENIZE_CHUNK]]
            for encoding in self.tokenizer.encode_batch(chunk):
                token_ids.append(np.array(encoding.ids, dtype=np.int32))
                type_ids.append(np.array(encoding.type_ids, dtype=np.int32))
        return token_ids, type_ids

    def _run_batches(self, batches: list[list[int]], token_ids: list[np.ndarray], type_ids: list[np.ndarray]):
        """Each batch's vectors, in order: one after another, or `workers` at a time on the parallel session.

        At most two batches per worker are queued, so a failing batch stops the rest soon
        (what is queued but not started is cancelled).
        """
        def run(batch: list[int], session=None) -> np.ndarray:
            return self._run([token_ids[i] for i in batch], [type_ids[i] for i in batch], session)

        parallel = self._parallel() if len(batches) > 1 else None
        if parallel is None:
            for batch in batches:
                yield run(batch)
            return
        pool = ThreadPoolExecutor(self.workers, thread_name_prefix="embed")
        try:
            upcoming = iter(batches)
            pending = [pool.submit(run, batch, parallel) for batch in itertools.islice(upcoming, 2 * self.workers)]
            while pending:
                vectors = pending.pop(0).result()
                batch = next(upcoming, None)
                if batch is not None:
                    pending.append(pool.submit(run, batch, parallel))
                yield vectors
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _parallel(self):
        """The one-thread session for batches side by side, made on first use; None to run them one by one.

        Made from the graph's file, re-read and checked against the sha256 of the bytes the
        first session runs, so both run the same graph; a warm start, which embeds nothing,
        never pays its memory (about 100 MB for the default model).
        """
        if self.workers == 1 or self.parallel_session is not None or self._graph_file is None:
            return self.parallel_session
        try:
            graph_bytes = self._graph_file.read_bytes()
        except OSError:
            graph_bytes = b""
        if hashlib.sha256(graph_bytes).hexdigest() != self._graph_sha256:
            self._log(f"{self._graph_file}: changed since start-up; embedding one batch at a time")
            self._graph_file = None
            return None
        self.parallel_session = self._new_session(graph_bytes, session_options(1, self.options.spinning))
        return self.parallel_session

    def _run(self, token_ids: Sequence[np.ndarray], type_ids: Sequence[np.ndarray], session=None) -> np.ndarray:
        feed = self.feed(token_ids, type_ids)
        try:
            output = (session or self.session).run([self.output_name], feed)[0]
        except Exception as exc:  # onnxruntime raises its own pybind error types
            texts, tokens = feed["input_ids"].shape
            raise EmbedderError(f"{self.model_path}: inference failed on {texts} text(s) of {tokens} tokens "
                                f"(--max-length {self.options.max_length}): {_first_line(exc)}") from None
        return self.vectors(output, feed["attention_mask"])

    def feed(self, token_ids: Sequence[np.ndarray], type_ids: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        """The model's inputs for one batch, each text padded to the batch's longest."""
        width = max(len(ids) for ids in token_ids)
        input_ids = np.full((len(token_ids), width), self.pad_id, dtype=self.input_types["input_ids"])
        attention = np.zeros((len(token_ids), width), dtype=self.input_types["attention_mask"])
        for row, ids in enumerate(token_ids):
            input_ids[row, :len(ids)] = ids
            attention[row, :len(ids)] = 1
        feed = {"input_ids": input_ids, "attention_mask": attention}
        if self.uses_token_types:
            types = np.zeros((len(token_ids), width), dtype=self.input_types["token_type_ids"])
            for row, ids in enumerate(type_ids):
                types[row, :len(ids)] = ids
            feed["token_type_ids"] = types
        return feed

    def vectors(self, output: np.ndarray, attention: np.ndarray) -> np.ndarray:
        """One batch's model output pooled and (per the options) normalised."""
        output = np.asarray(output, dtype=np.float32)
        if output.ndim == 3:
            pooled = mean_pool(output, attention) if self.options.pooling == "mean" else cls_pool(output)
        elif output.ndim == 2:  # the export already pools (a `sentence_embedding` output)
            pooled = output
        else:
            raise EmbedderError(f"{self.model_path}: output {self.output_name!r} has shape {output.shape}; "
                                "expected (batch, tokens, dim) or (batch, dim)")
        return l2_normalize(pooled) if self.options.normalize else pooled

    def identity(self) -> dict[str, object]:
        """What decides the vectors of a passage: the embedding cache key and the banner use it."""
        return {
            "model_sha256": self.model_digest,
            "tokenizer_sha256": self.tokenizer_digest,
            "pooling": self.options.pooling,
            "normalize": self.options.normalize,
            "passage_prefix": self.options.passage_prefix,
            "max_length": self.options.max_length,
            # the plain model's key stays as it was; a rewritten graph's vectors are cached apart,
            # per graph file: a new rewrite recipe (or onnxruntime) builds other bytes, whose
            # vectors must not be served from an earlier graph's cache
            **({"graph": self.graph, "graph_sha256": self._graph_sha256} if self.graph != "plain" else {}),
        }


def _pad_id(tokenizer) -> int:
    padding = tokenizer.padding
    if padding and isinstance(padding.get("pad_id"), int):
        return int(padding["pad_id"])
    for token in ("[PAD]", "<pad>"):
        token_id = tokenizer.token_to_id(token)
        if token_id is not None:
            return int(token_id)
    return 0


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
