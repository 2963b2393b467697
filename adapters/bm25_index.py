"""The BM25 index: build from token lists with numpy, search exactly, save and verify on disk.

Scoring is the Lucene variant (Lucene >= 8, Kamphuis et al., ECIR 2020):

    score(q, d) = sum over query tokens t in d of  idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
    idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))

tf: occurrences of t in d; dl: tokens in d; avgdl: mean dl; N: documents; df: documents
holding t. Lucene drops the constant (k1 + 1) numerator, which changes no ranking. A
token repeated in the query counts once per occurrence (as Lucene, bm25s and rank_bm25 do).

Layout: documents are stored in id order, so "score descending, then id ascending" is
"score descending, then document index ascending". Each term owns a contiguous slice
`offsets[t]:offsets[t + 1]` of `postings_docs` (int32, ascending) and `postings_scores`
(float32, the term's full BM25 contribution), so a query is a few vector additions.
Per term it also keeps the largest, smallest and 10th-best posting score, the bounds
that let a query skip most postings exactly (adapters/bm25_search.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import sys
import time
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .bm25_search import Accumulator, pruned_top_k, term_statistics
from .startup import AdapterStartupError, available_memory_bytes
from .tokenizer import TOKENIZER_VERSION, Tokenizer

# Bump when the on-disk layout or the meaning of any stored array changes.
INDEX_FORMAT = 2  # 2: per-term max, min and 10th-best scores for pruning
_MAGIC = b"RGBM25\x00\x01"
_ARRAYS = ("offsets", "postings_docs", "postings_scores", "term_max", "term_min", "term_kth")


@dataclass(frozen=True, slots=True)
class BM25Settings:
    """What decides the scores (k1, b, tokeniser options) plus whether to use the disk cache."""

    k1: float = 0.9
    b: float = 0.4
    stopwords: bool = False
    stem: bool = False
    use_cache: bool = True
    memory_check: bool = True  # refuse a build the memory model says will not fit

    def scoring(self) -> dict[str, object]:
        """The fields that change scores: recorded in the banner and part of the cache key."""
        return {"k1": self.k1, "b": self.b, "stopwords": self.stopwords, "stem": self.stem,
                "tokenizer": TOKENIZER_VERSION}

    def tokenizer(self) -> Tokenizer:
        return Tokenizer(stopwords=self.stopwords, stem=self.stem)


class BM25SettingsError(AdapterStartupError):
    """k1 or b outside BM25's domain."""


class BM25MemoryError(AdapterStartupError):
    """The index would not fit in the memory this process can have: refused before building it."""


# The memory model (benchmarks/bm25_memory.py measures it; docs/performance.md has the figures).
# Peak memory the build adds once the tokens are counted, per token occurrence and per
# document (ids, lengths, orderings); postings are at most one per token and their arrays
# are freed and reused within the per-token figure.
BUILD_BYTES_PER_TOKEN = 24
BUILD_BYTES_PER_DOC = 160
MEMORY_SAFETY = 1.15  # the model's error at 100k and 1M documents stayed under 15%


def build_memory_estimate(n_docs: int, n_tokens: int) -> int:
    """Bytes the build will add at its peak, from the measured per-token and per-document costs."""
    return int(MEMORY_SAFETY * (BUILD_BYTES_PER_TOKEN * n_tokens + BUILD_BYTES_PER_DOC * n_docs))


def check_memory(n_docs: int, n_tokens: int, settings: BM25Settings) -> None:
    """Refuse, in one line, a build that would run out of memory (skipped with memory_check False)."""
    if not settings.memory_check:
        return
    available = available_memory_bytes()
    need = build_memory_estimate(n_docs, n_tokens)
    if available is not None and need > available:
        raise BM25MemoryError(f"indexing {n_docs} documents ({n_tokens} tokens) needs about "
                              f"{need / 2**30:.1f} GiB more memory, {available / 2**30:.1f} GiB is available; "
                              "index fewer documents, add memory, or pass --no-memory-check to try anyway")


def check_settings(settings: BM25Settings) -> None:
    """Reject parameters outside BM25's domain (k1 >= 0, 0 <= b <= 1, both finite)."""
    if not (math.isfinite(settings.k1) and settings.k1 >= 0):
        raise BM25SettingsError(f"k1: must be a finite number >= 0, got {settings.k1}")
    if not (math.isfinite(settings.b) and 0 <= settings.b <= 1):
        raise BM25SettingsError(f"b: must be between 0 and 1, got {settings.b}")


class _Numbering(dict):
    """token -> term id, numbering a new token on first lookup (the lookup stays in C)."""

    def __missing__(self, token: str) -> int:
        term = self[token] = len(self)
        return term


class BM25Index:
    """An immutable BM25 index over one corpus; build it with `build` or `from_tokens`."""

    def __init__(self, ids: list[str], vocab: list[str], offsets: np.ndarray,
                 postings_docs: np.ndarray, postings_scores: np.ndarray,
                 settings: BM25Settings, term_stats: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
        """Wrap arrays already in the layout described in the module docstring (ids sorted).

        `term_stats` (term_max, term_min, term_kth) is computed from the postings when not given.
        """
        self.ids = ids
        self.vocab = vocab
        self.term_ids = {token: term for term, token in enumerate(vocab)}
        self.offsets = offsets
        self.postings_docs = postings_docs
        self.postings_scores = postings_scores
        self.term_max, self.term_min, self.term_kth = term_stats or term_statistics(offsets, postings_scores)
        self._accumulator = Accumulator(len(ids))
        self.settings = settings
        self._tokenize = settings.tokenizer()
        # Provenance for the banner, filled in by load_or_build.
        self.provenance: dict[str, object] = {}

    @property
    def n_docs(self) -> int:
        return len(self.ids)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def nbytes(self) -> int:
        """The index's size in memory: its arrays (postings, offsets, per-term statistics), the banner's
        `index_bytes` (docs/adapters.md), the same whether it was built or read from the cache."""
        return sum(int(getattr(self, name).nbytes) for name in _ARRAYS)

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str], settings: BM25Settings,
              progress: Callable[[int, int], None] | None = None) -> BM25Index:
        """Tokenise `texts` with the settings' tokeniser and index them under `ids` (unique).

        `progress(done, total)` is called as documents are tokenised (the slow part).
        """
        tokenize = settings.tokenizer()
        if progress is None:
            return cls.from_tokens(ids, (tokenize(text) for text in texts), settings)

        def tokens_reporting():
            total = len(texts)
            for done, text in enumerate(texts, start=1):
                yield tokenize(text)
                if done % 256 == 0 or done == total:
                    progress(done, total)

        return cls.from_tokens(ids, tokens_reporting(), settings)

    @classmethod
    def from_tokens(cls, ids: Sequence[str], docs_tokens: Iterable[Sequence[str]],
                    settings: BM25Settings) -> BM25Index:
        """Index already tokenised documents (`docs_tokens[i]` belongs to `ids[i]`).

        Tokens are turned into term ids one document at a time, so no per-document Python
        objects outlive the loop; the rest is array work.
        """
        check_settings(settings)
        if len(set(ids)) != len(ids):
            raise ValueError("ids: must be unique")
        vocab_ids = _Numbering()
        term_of = vocab_ids.__getitem__
        token_terms = array("i")
        doc_lengths = array("i")
        for tokens in docs_tokens:
            token_terms.extend(map(term_of, tokens))
            doc_lengths.append(len(tokens))
        if len(doc_lengths) != len(ids):
            raise ValueError(f"{len(ids)} ids but {len(doc_lengths)} token lists")
        lengths = np.frombuffer(doc_lengths, dtype=np.int32) if doc_lengths else np.zeros(0, np.int32)
        terms = np.frombuffer(token_terms, dtype=np.int32) if token_terms else np.zeros(0, np.int32)

        # Renumber documents into id order and terms into token order, so ties break by
        # index and the stored vocabulary is reproducible whatever the input order.
        doc_order = sorted(range(len(ids)), key=ids.__getitem__)
        doc_rank = np.empty(len(ids), dtype=np.int64)
        doc_rank[np.asarray(doc_order, dtype=np.int64)] = np.arange(len(ids), dtype=np.int64)
        vocab = sorted(vocab_ids)
        term_rank = np.empty(len(vocab), dtype=np.int64)
        term_rank[np.fromiter((vocab_ids[token] for token in vocab), dtype=np.int64,
                              count=len(vocab))] = np.arange(len(vocab), dtype=np.int64)
        del vocab_ids

        n_docs = len(ids)
        # One int64 key per token occurrence: term-major, then document; sorting groups each
        # term's postings contiguously with documents ascending, and equal keys are the tf.
        check_memory(n_docs, len(terms), settings)
        keys = term_rank[terms]
        keys *= max(n_docs, 1)
        # int32 document ranks: the repeated temporary costs 4 bytes per token, not 8.
        keys += np.repeat(doc_rank.astype(np.int32), lengths)
        del terms, token_terms
        keys.sort()
        if len(keys):
            # A boolean mask (1 byte per token) instead of np.diff's two int64 temporaries.
            boundary = np.empty(len(keys), dtype=bool)
            boundary[0] = True
            np.not_equal(keys[1:], keys[:-1], out=boundary[1:])
            starts = np.flatnonzero(boundary)
            del boundary
        else:
            starts = np.zeros(0, np.int64)
        tf = np.diff(np.append(starts, len(keys))).astype(np.float32)
        unique_keys = keys[starts]
        del keys, starts
        posting_terms = unique_keys // max(n_docs, 1)
        postings_docs = (unique_keys - posting_terms * max(n_docs, 1)).astype(np.int32)
        del unique_keys
        df = np.bincount(posting_terms, minlength=len(vocab))
        offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(df, out=offsets[1:])
        del posting_terms

        sorted_lengths = np.zeros(n_docs, dtype=np.float32)
        sorted_lengths[doc_rank] = lengths
        avgdl = float(lengths.mean(dtype=np.float64)) if n_docs else 0.0
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        # Per-document length normaliser k1 * (1 - b + b * dl / avgdl), in float64 then
        # stored as float32 scores (the precision bm25s uses too).
        norm = settings.k1 * (1.0 - settings.b + settings.b * sorted_lengths.astype(np.float64)
                              / (avgdl if avgdl > 0 else 1.0))
        term_idf = np.repeat(idf, df)
        # tf / (tf + norm) first: exactly 1.0 when k1 = 0, so equal scores stay exactly equal.
        postings_scores = (term_idf * (tf / (tf + norm[postings_docs]))).astype(np.float32)
        sorted_ids = [ids[i] for i in doc_order]
        return cls(sorted_ids, vocab, offsets, postings_docs, postings_scores, settings)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The top k (id, score) pairs for `query`: score descending, then id ascending.

        Only documents sharing at least one token with the query are returned (every BM25
        term score is positive), so the list may be shorter than k, or empty.
        """
        return self.search_tokens(self._tokenize(query), k)

    def search_tokens(self, tokens: Sequence[str], k: int) -> list[tuple[str, float]]:
        """`search` for an already tokenised query (tokens unknown to the index are ignored)."""
        doc_indices, scores = self.top_k(tokens, k)
        ids = self.ids
        return [(ids[doc], float(score)) for doc, score in zip(doc_indices.tolist(), scores.tolist())]

    def top_k(self, tokens: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Document indices and scores of the top k, in the deterministic order (adapters/bm25_search.py)."""
        if k < 1:
            raise ValueError(f"k: must be >= 1, got {k}")
        term_ids = self.term_ids
        return pruned_top_k(self, [term_ids[token] for token in tokens if token in term_ids], k,
                            self._accumulator)

    # -- on-disk form ---------------------------------------------------------------------

    def to_bytes(self, key: str) -> bytes:
        """Serialise: magic, header length, JSON header (with the payload's sha256), payload."""
        strings = _pad8(json.dumps({"ids": self.ids, "vocab": self.vocab}, ensure_ascii=False).encode("utf-8"))
        arrays = {name: np.ascontiguousarray(getattr(self, name)) for name in _ARRAYS}
        payload_parts = [strings] + [arrays[name].tobytes() for name in _ARRAYS]
        digest = hashlib.sha256()
        for part in payload_parts:
            digest.update(part)
        header = {
            "format": INDEX_FORMAT, "key": key, "strings_bytes": len(strings),
            "arrays": [{"name": name, "dtype": arrays[name].dtype.str, "shape": list(arrays[name].shape)}
                       for name in _ARRAYS],
            "payload_sha256": digest.hexdigest(),
        }
        header_bytes = _pad8(json.dumps(header, sort_keys=True).encode("utf-8"))
        return b"".join([_MAGIC, len(header_bytes).to_bytes(8, "little"), header_bytes, *payload_parts])

    @classmethod
    def from_bytes(cls, data: bytes, key: str, settings: BM25Settings) -> BM25Index:
        """Inverse of `to_bytes`; raise ValueError unless every check passes (never trust a cache)."""
        view = memoryview(data)
        if bytes(view[:len(_MAGIC)]) != _MAGIC or len(data) < len(_MAGIC) + 8:
            raise ValueError("not a BM25 index file")
        header_end = len(_MAGIC) + 8 + int.from_bytes(view[len(_MAGIC):len(_MAGIC) + 8], "little")
        if header_end > len(data):
            raise ValueError("header truncated")
        header = json.loads(bytes(view[len(_MAGIC) + 8:header_end]))
        if header.get("format") != INDEX_FORMAT or header.get("key") != key:
            raise ValueError("built for another format, corpus or settings")
        payload = view[header_end:]
        if hashlib.sha256(payload).hexdigest() != header["payload_sha256"]:
            raise ValueError("payload checksum mismatch (truncated or corrupt)")
        position = header["strings_bytes"]
        strings = json.loads(bytes(payload[:position]).decode("utf-8"))
        arrays: dict[str, np.ndarray] = {}
        for spec in header["arrays"]:
            dtype = np.dtype(spec["dtype"])
            count = int(np.prod(spec["shape"], dtype=np.int64))
            arrays[spec["name"]] = np.frombuffer(payload, dtype=dtype, count=count, offset=position)
            position += count * dtype.itemsize
        if position != len(payload):
            raise ValueError("payload length does not match its header")
        index = cls(strings["ids"], strings["vocab"], arrays["offsets"], arrays["postings_docs"],
                    arrays["postings_scores"], settings,
                    (arrays["term_max"], arrays["term_min"], arrays["term_kth"]))
        _check_shapes(index)
        return index


def _pad8(data: bytes) -> bytes:
    """Pad JSON with trailing spaces to a multiple of 8 bytes, so the arrays after it are aligned."""
    return data + b" " * (-len(data) % 8)


def _check_shapes(index: BM25Index) -> None:
    """Cheap structural checks, so a well-formed but inconsistent file is refused too."""
    offsets = index.offsets
    if len(offsets) != index.vocab_size + 1 or (len(offsets) and offsets[0] != 0):
        raise ValueError("offsets do not match the vocabulary")
    if offsets[-1] != len(index.postings_docs) or len(index.postings_docs) != len(index.postings_scores):
        raise ValueError("postings do not match the offsets")
    if len(index.postings_docs) and (index.postings_docs.min() < 0 or index.postings_docs.max() >= index.n_docs):
        raise ValueError("postings name documents outside the corpus")
    if any(len(stat) != index.vocab_size for stat in (index.term_max, index.term_min, index.term_kth)):
        raise ValueError("term statistics do not match the vocabulary")


def cache_key(content_hash: str, settings: BM25Settings) -> str:
    """sha256 over the corpus content hash, the scoring settings and the index format."""
    material = json.dumps({"corpus": content_hash, "settings": settings.scoring(), "format": INDEX_FORMAT},
                          sort_keys=True)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def load_or_build(ids: Sequence[str], texts: Sequence[str], content_hash: str, settings: BM25Settings,
                  cache_folder: Path | None, progress: Callable[[int, int], None] | None = None) -> BM25Index:
    """The index for this corpus and settings: from the cache when a verified file exists, else built.

    A built index is written to the cache atomically. A cache file that fails any check is
    reported on stderr and replaced; a directory (or FIFO) where the file belongs is one stderr
    line and an index built in memory only ("cache": "unusable"): an unusable cache costs speed,
    never the start. `cache_folder=None` bypasses the cache ("cache": "off"). Sets
    `index.provenance` for the ready banner.
    """
    key = cache_key(content_hash, settings)
    path = cache_folder / f"{key}.bm25" if cache_folder is not None else None
    if path is not None and os.path.lexists(path) and not _regular_file(path):
        # A directory (or a FIFO, a dangling link) where the index file belongs: an unusable cache costs
        # this start its speed, never the start; one line, and the index lives in memory only.
        print(f"bm25: cache path {path} is not a regular file; building the index in memory, uncached "
              f"(remove it to cache again)", file=sys.stderr)
        path, cache_state = None, "unusable"
    else:
        cache_state = "miss" if path is not None else "off"
    if path is not None and path.exists():
        started = time.monotonic()
        try:
            index = BM25Index.from_bytes(path.read_bytes(), key, settings)
        except (ValueError, KeyError, TypeError, OSError) as exc:
            print(f"bm25: cache file {path} unusable ({exc}); rebuilding", file=sys.stderr)
        else:
            index.provenance = _provenance(index, content_hash, "hit", "load_seconds", started)
            try:
                os.utime(path)  # `python -m adapters.cache prune` drops files unused for a while
            except OSError:
                pass
            return index
    started = time.monotonic()
    index = BM25Index.build(ids, texts, settings, progress)
    index.provenance = _provenance(index, content_hash, cache_state, "build_seconds", started)
    if path is not None:
        from harness.errors import HarnessError
        from harness.fsutil import atomic_write_bytes
        try:
            atomic_write_bytes(path, index.to_bytes(key))
        except (OSError, HarnessError) as exc:  # a read-only cache, a path refused: never the start
            print(f"bm25: cannot write cache file {path}: {exc}", file=sys.stderr)
    return index


def _regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)  # a link to an index file reads as the file
    except OSError:
        return False


def _provenance(index: BM25Index, content_hash: str, cache: str, seconds_field: str,
                started: float) -> dict[str, object]:
    return {"docs": index.n_docs, "vocab": index.vocab_size, "content_hash": content_hash,
            "cache": cache, seconds_field: round(time.monotonic() - started, 4)}
