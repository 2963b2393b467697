"""Read the corpora the harness materialises in $HARNESS_CORPUS_DIR (`<kind>.jsonl` files).

Each line is `{"id": str, "text": str}` (other fields ignored). Shared by every reference
adapter so they agree on what a corpus is and how its content hash (cache key) is computed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .startup import AdapterStartupError, available_memory_bytes

CORPUS_DIR_ENV = "HARNESS_CORPUS_DIR"
# Reading holds the file's bytes, its decoded text, its lines and the texts at once: about
# four times the file (docs/performance.md, BM25 at scale).
READ_MEMORY_FACTOR = 4


class CorpusFileError(AdapterStartupError):
    """A corpus file is missing or malformed; the message names file, line and field."""


class CorpusTooLarge(AdapterStartupError):
    """Reading the corpus file would take more memory than this process can have."""


@dataclass(frozen=True, slots=True)
class CorpusFile:
    kind: str
    ids: list[str]
    texts: list[str]
    content_hash: str  # sha256 of the file's bytes: the cache key for indexes and embeddings


def corpus_paths(overrides: list[str] | None = None) -> dict[str, Path]:
    """Map kind -> jsonl path: every `<kind>.jsonl` in $HARNESS_CORPUS_DIR, then `KIND=PATH` overrides."""
    paths: dict[str, Path] = {}
    folder = os.environ.get(CORPUS_DIR_ENV)
    if folder:
        root = Path(folder)
        if not root.is_dir():
            raise CorpusFileError(f"{CORPUS_DIR_ENV}={folder}: not a folder")
        for path in sorted(root.glob("*.jsonl")):
            paths[path.stem] = path
    for item in overrides or []:
        kind, sep, path = item.partition("=")
        if not sep or not kind or not path:
            raise CorpusFileError(f"--corpus {item!r}: expected KIND=PATH")
        paths[kind] = Path(path)
    return paths


def required_corpus_paths(overrides: list[str] | None = None) -> dict[str, Path]:
    """`corpus_paths`, where finding none is an error: an adapter with nothing to search is misconfigured."""
    paths = corpus_paths(overrides)
    if not paths:
        raise CorpusFileError(f"no corpus: set {CORPUS_DIR_ENV} to a folder of <kind>.jsonl files "
                              "or pass --corpus KIND=PATH")
    return paths


def read_corpus(kind: str, path: Path, *, memory_check: bool = True) -> CorpusFile:
    """Load one corpus file; reject bad JSON, missing/empty ids or text, and duplicate ids.

    With `memory_check`, a file that would not fit in memory once read (READ_MEMORY_FACTOR
    times its size against what is available) is refused before it is read.
    """
    if memory_check:
        check_read_memory(kind, path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CorpusFileError(f"{path}: cannot read corpus for kind {kind!r}: {exc.strerror}") from None
    ids: list[str] = []
    texts: list[str] = []
    seen: set[str] = set()
    text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff")  # a byte-order mark, as the harness reads sets
    # Split on "\n" only (a CRLF's "\r" is JSON whitespace): str.splitlines would also cut at U+2028,
    # U+0085 and the like, which JSON strings may hold raw.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise CorpusFileError(f"{path}:{number}: not a JSON object") from None
        if not isinstance(obj, dict):
            raise CorpusFileError(f"{path}:{number}: not a JSON object")
        doc_id, text = obj.get("id"), obj.get("text")
        if not isinstance(doc_id, str) or not doc_id:
            raise CorpusFileError(f"{path}:{number}: id: must be a non-empty string")
        if not isinstance(text, str):
            raise CorpusFileError(f"{path}:{number}: text: must be a string")
        if doc_id in seen:
            raise CorpusFileError(f"{path}:{number}: id: {doc_id!r} appears twice")
        seen.add(doc_id)
        ids.append(doc_id)
        texts.append(text)
    return CorpusFile(kind=kind, ids=ids, texts=texts, content_hash=sha256_of(raw))


def sha256_of(raw: bytes) -> str:
    """A corpus file's content hash (`CorpusFile.content_hash`): the sha256 of its bytes."""
    return hashlib.sha256(raw).hexdigest()


def check_read_memory(kind: str, path: Path) -> None:
    """CorpusTooLarge, in one line, when reading `path` would exhaust the available memory."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # read_bytes reports it
    available = available_memory_bytes()
    need = READ_MEMORY_FACTOR * size
    if available is not None and need > available:
        raise CorpusTooLarge(f"{path}: corpus for kind {kind!r} is {size / 2**30:.1f} GiB; reading it needs about "
                             f"{need / 2**30:.1f} GiB, {available / 2**30:.1f} GiB is available")
