"""The passage-embedding cache: one vector per document content hash, model digest and options, verified on load.

Layout under the cache folder (`$RETRIEVAL_GATE_CACHE/embeddings` by default): one store
folder per embedder identity (model and tokenizer digests, pooling, normalisation, passage
prefix, max length, a rewritten graph's name and file digest: `Embedder.identity`), holding

- `*.pack` files: a header line `retrieval-gate-embeddings 3 ROWS DIM SHA256` then ROWS
  32-byte document digests (sha256 of the text) and ROWS x DIM float32 vectors; SHA256
  covers everything after the header. A pack that fails any check is ignored and deleted.
- `corpus-*.json` manifests: the document digests one corpus used, touched on every use;
  `prune` keeps the vectors some recent manifest names and drops the rest.

So editing one document of a large corpus embeds that one document again (plus loading);
every other vector comes from the store. New vectors go to a new pack; past
`MAX_PACKS` packs the store is merged into one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness.fsutil import atomic_write_bytes

if TYPE_CHECKING:
    from .embedder import Embedder

CACHE_FORMAT = 3  # 3: per-document packs (2 was one .emb file per whole corpus)
MAGIC = b"retrieval-gate-embeddings"
PACK_SUFFIX = ".pack"
MANIFEST_PREFIX = "corpus-"
MAX_PACKS = 16
DIGEST_BYTES = 32
DEFAULT_PRUNE_DAYS = 30.0


@dataclass(frozen=True, slots=True)
class CacheOutcome:
    """What one corpus's lookup did: `state` hit / partial / miss / off, and the store's size after it."""

    state: str
    reused: int
    embedded: int
    store_vectors: int
    store_bytes: int

    def banner(self) -> dict[str, object]:
        return {"cache": self.state, "reused": self.reused, "embedded": self.embedded,
                "cache_vectors": self.store_vectors, "cache_bytes": self.store_bytes}


def identity_key(embedder: Embedder) -> str:
    """The store folder name: sha256 over the cache format and everything that decides a passage's vector.

    Batch size and thread count are left out: they change no value beyond float noise.
    """
    material = {"format": CACHE_FORMAT, **embedder.identity()}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def text_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).digest()


def encode_pack(digests: Sequence[bytes], matrix: np.ndarray) -> bytes:
    payload = b"".join(digests) + np.ascontiguousarray(matrix, dtype="<f4").tobytes()
    rows, dim = matrix.shape
    header = b"%s %d %d %d %s\n" % (MAGIC, CACHE_FORMAT, rows, dim, hashlib.sha256(payload).hexdigest().encode())
    return header + payload


def decode_pack(data: bytes) -> tuple[list[bytes], np.ndarray] | None:
    """(digests, matrix) or None unless header, payload sha256, size and finite values all check out."""
    header, _, payload = data.partition(b"\n")
    fields = header.split(b" ")
    if len(fields) != 5 or fields[0] != MAGIC or fields[1] != str(CACHE_FORMAT).encode():
        return None
    try:
        rows, dim = int(fields[2]), int(fields[3])
    except ValueError:
        return None
    if rows < 0 or dim < 1 or len(payload) != rows * (DIGEST_BYTES + 4 * dim):
        return None
    if fields[4] != hashlib.sha256(payload).hexdigest().encode():
        return None  # truncated or tampered: rebuilt, never trusted
    split = rows * DIGEST_BYTES
    digests = [payload[i:i + DIGEST_BYTES] for i in range(0, split, DIGEST_BYTES)]
    matrix = np.frombuffer(payload, dtype="<f4", offset=split).reshape(rows, dim).astype(np.float32)
    if not np.isfinite(matrix).all():
        return None
    return digests, matrix


class Store:
    """The vectors of one embedder identity: load every verified pack, add new vectors, write manifests."""

    def __init__(self, folder: Path, log: Callable[[str], None]) -> None:
        self.folder = folder
        self.log = log
        self.rows: dict[bytes, np.ndarray] = {}
        self.dim: int | None = None
        self.packs: list[Path] = []
        if folder.is_dir():
            for path in sorted(folder.glob(f"*{PACK_SUFFIX}")):
                self._load(path)

    def _load(self, path: Path) -> None:
        try:
            decoded = decode_pack(path.read_bytes())
        except OSError:
            decoded = None
        if decoded is None or (self.dim is not None and decoded[1].shape[1] != self.dim):
            self.log(f"{path}: unusable cache entry, embedding again")
            _unlink(path)
            return
        digests, matrix = decoded
        self.dim = matrix.shape[1]
        for row, digest in enumerate(digests):
            self.rows[digest] = matrix[row]
        self.packs.append(path)

    def add(self, digests: Sequence[bytes], matrix: np.ndarray) -> None:
        """Keep new vectors in memory and on disk (one new pack; merge everything past MAX_PACKS)."""
        if not len(digests):
            return
        for row, digest in enumerate(digests):
            self.rows[digest] = matrix[row]
        self.dim = matrix.shape[1]
        if len(self.packs) + 1 > MAX_PACKS:
            old = list(self.packs)
            self.packs = [self._write(list(self.rows), np.stack(list(self.rows.values())))]
            for path in old:
                if path not in self.packs:
                    _unlink(path)
        else:
            self.packs.append(self._write(digests, matrix))

    def _write(self, digests: Sequence[bytes], matrix: np.ndarray) -> Path:
        data = encode_pack(digests, matrix)
        path = self.folder / f"{hashlib.sha256(data).hexdigest()[:32]}{PACK_SUFFIX}"
        atomic_write_bytes(path, data)
        return path

    def record_use(self, corpus_hash: str, digests: Sequence[bytes]) -> None:
        """Write (or touch) this corpus's manifest, so `prune` knows its vectors are in use."""
        path = self.folder / f"{MANIFEST_PREFIX}{corpus_hash[:32]}.json"
        if path.is_file():
            try:
                os.utime(path)
                return
            except OSError:
                pass
        body = json.dumps({"format": CACHE_FORMAT, "docs": sorted({digest.hex() for digest in digests})})
        atomic_write_bytes(path, body.encode("utf-8"))

    def size_bytes(self) -> int:
        return sum(_size(path) for path in self.packs)


def cached_passage_embeddings(embedder: Embedder, texts: Sequence[str], corpus_hash: str, *,
                              use_cache: bool = True, folder: Path | None = None,
                              log: Callable[[str], None] | None = None,
                              progress: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, CacheOutcome]:
    """Passage vectors for a corpus: cached ones reused by content hash, the rest embedded and stored.

    Returns (matrix in `texts` order, outcome). `progress(done, total)` is called while
    embedding the missing documents.
    """
    say = log or (lambda message: None)
    if not use_cache:
        matrix = embedder.embed_passages(texts, progress=progress)
        return matrix, CacheOutcome("off", 0, len(texts), 0, 0)
    if folder is None:
        from harness.fsutil import cache_dir

        try:
            folder = cache_dir("embeddings")
        except OSError as exc:  # an unusable cache folder must not stop the adapter, only slow it
            say(f"no vector cache ({exc}); embedding every time")
            return cached_passage_embeddings(embedder, texts, corpus_hash, use_cache=False, progress=progress)
    store = Store(folder / identity_key(embedder), say)
    digests = [text_digest(text) for text in texts]
    missing: dict[bytes, int] = {}
    for position, digest in enumerate(digests):
        if digest not in store.rows and digest not in missing:
            missing[digest] = position
    reused = sum(1 for digest in digests if digest in store.rows)
    if missing:
        fresh = embedder.embed_passages([texts[position] for position in missing.values()], progress=progress)
        try:
            store.folder.mkdir(parents=True, exist_ok=True)
            store.add(list(missing), fresh)
        except OSError as exc:  # minutes of embedding are not thrown away for a full or read-only disk
            say(f"{store.folder}: cannot write the vector cache ({exc.strerror or exc}); "
                f"{len(missing)} new vectors are used but not kept")
            store.rows.update(zip(missing, fresh))
            store.dim = fresh.shape[1]
    dim = store.dim if store.dim is not None else embedder.dimensions
    matrix = np.empty((len(texts), dim), dtype=np.float32)
    for position, digest in enumerate(digests):
        matrix[position] = store.rows[digest]
    if texts:
        try:
            store.folder.mkdir(parents=True, exist_ok=True)
            store.record_use(corpus_hash, digests)
        except OSError as exc:
            say(f"{store.folder}: cannot record this corpus's use of the cache ({exc.strerror or exc})")
    state = "hit" if not missing else ("partial" if reused else "miss")
    return matrix, CacheOutcome(state, reused, len(missing), len(store.rows), store.size_bytes())


# -- cache maintenance (python -m adapters.cache) ------------------------------------------------

@dataclass(frozen=True, slots=True)
class StoreSummary:
    folder: Path
    vectors: int
    bytes: int
    corpora: int      # readable manifests: the corpora that keep vectors from pruning
    unreadable: int   # manifests that cannot be read; prune drops them, so they keep nothing


def summarise(root: Path) -> list[StoreSummary]:
    """One line of figures per embedder identity under `root`."""
    summaries = []
    for folder in sorted(path for path in root.iterdir() if path.is_dir()) if root.is_dir() else []:
        store = Store(folder, lambda message: None)
        manifests = [_manifest_docs(manifest) for manifest in folder.glob(f"{MANIFEST_PREFIX}*.json")]
        readable = sum(docs is not None for docs in manifests)
        summaries.append(StoreSummary(folder, len(store.rows), store.size_bytes(), readable,
                                      len(manifests) - readable))
    return summaries


def _manifest_docs(manifest: Path) -> list[bytes] | None:
    """The document digests a corpus manifest names, or None when it cannot be read as one."""
    try:
        return [bytes.fromhex(digest) for digest in json.loads(manifest.read_text(encoding="utf-8"))["docs"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def prune(root: Path, older_than_days: float = DEFAULT_PRUNE_DAYS, *,
          now: float | None = None) -> tuple[int, int]:
    """Drop manifests unused for `older_than_days`, then every vector no remaining manifest names.

    A store left with no manifest is removed whole, as are format-2 whole-corpus `.emb`
    files. Returns (vectors removed, bytes freed).
    """
    if not root.is_dir():
        return 0, 0
    cutoff = (time.time() if now is None else now) - older_than_days * 86400
    removed_vectors = freed = 0
    for legacy in root.glob("*.emb"):
        freed += _size(legacy)
        _unlink(legacy)
    for folder in sorted(path for path in root.iterdir() if path.is_dir()):
        keep: set[bytes] = set()
        for manifest in folder.glob(f"{MANIFEST_PREFIX}*.json"):
            docs = _manifest_docs(manifest) if _modified(manifest) >= cutoff else None
            if docs is None:
                _unlink(manifest)
            else:
                keep.update(docs)
        store = Store(folder, lambda message: None)
        before_bytes = store.size_bytes()
        unused = [digest for digest in store.rows if digest not in keep]
        if not keep:
            removed_vectors += len(store.rows)
            freed += sum(_size(path) for path in folder.iterdir())
            shutil.rmtree(folder, ignore_errors=True)
            continue
        if unused:
            kept = [digest for digest in store.rows if digest in keep]
            old = list(store.packs)
            new = store._write(kept, np.stack([store.rows[digest] for digest in kept])) if kept else None
            for path in old:
                if path != new:
                    _unlink(path)
            removed_vectors += len(unused)
            freed += before_bytes - (_size(new) if new is not None else 0)
    return removed_vectors, freed


def _modified(path: Path) -> float:
    """The file's mtime; 0 (older than any cutoff) when it cannot be read."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
