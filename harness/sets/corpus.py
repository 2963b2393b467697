"""Load a set's corpus from its declared source (jsonl, pypi-sdist, git) and hash it."""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.errors import SetError
from harness.fsutil import open_regular
from harness.strict_json import SURROGATE_ESCAPE_BYTES, lone_surrogate_at
from harness.records import Document

Loader = Callable[[dict, Path, str, bool], list[Document]]
MAX_LINE_BYTES = 1 << 20  # a committed corpus or queries line over 1 MiB is a mistake, not data


def load_corpus(spec: object, set_dir: Path, where: str, *, offline: bool = False) -> list[Document]:
    """Documents of the set's `corpus` spec, in a stable order; SetError on any problem."""
    checked = check_corpus_source(spec, where)
    return _LOADERS[checked["source"]](checked, set_dir, where, offline)


def check_corpus_source(spec: object, where: str) -> dict:
    """`spec`, an object naming a known `source` (checked without loading anything); else SetError."""
    if not isinstance(spec, dict):
        raise SetError(f"{where}: corpus: must be an object with a 'source'")
    source = spec.get("source")
    if not isinstance(source, str) or source not in _LOADERS:
        raise SetError(f"{where}: corpus.source: {source!r} is not one of {sorted(_LOADERS)}")
    return spec


def corpus_hash(documents: Sequence[Document]) -> str:
    """sha256 over the sorted (id, content sha256) pairs: changes when any document changes."""
    digest = hashlib.sha256()
    for doc in sorted(documents, key=lambda d: d.id):
        digest.update(f"{doc.id}\t{doc.sha256}\n".encode("utf-8"))
    return digest.hexdigest()


def content_sha256(text: str) -> str:
    """The content hash of a committed (jsonl) document: sha256 of its UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def iter_jsonl(path: Path, label: str):
    """Yield (line number, object) for each non-blank line; SetError names file, line and field.

    A UTF-8 byte-order mark before the first line and CRLF line ends are read as plain lines; a
    lone surrogate escape in any string (id, text, title, query, group ...) is refused here, once.
    """
    # A FIFO or device would block or never end: refused before a byte is read.
    with open_regular(path, SetError, label) as handle:
        number = 0
        while True:
            # Bounded read: a huge file without newlines is refused after MAX_LINE_BYTES, not loaded whole.
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise SetError(f"{label}:{number}: line is longer than {MAX_LINE_BYTES} bytes")
            if not raw.strip():
                continue
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):  # tolerate a UTF-8 byte-order mark
                raw = raw[3:]
            try:
                obj = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise SetError(f"{label}:{number}: line is not valid UTF-8") from None
            except (ValueError, RecursionError) as exc:
                raise SetError(f"{label}:{number}: not valid JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise SetError(f"{label}:{number}: must be a JSON object")
            if SURROGATE_ESCAPE_BYTES.search(raw):  # text never writable as UTF-8 (corpus files, reports)
                for field, value in obj.items():
                    if lone_surrogate_at(field) or lone_surrogate_at(value):
                        name = field if lone_surrogate_at(field) is None else "a field name"
                        raise SetError(f"{label}:{number}: {name}: holds a lone surrogate (\\ud800-\\udfff escape), "
                                       f"not text")
            yield number, obj


def corpus_ids(path: Path, label: str | None = None) -> list[str]:
    """The `id` of every line of a `<kind>.jsonl` corpus, in file order (check-adapter's id check).

    Read as every set file is (`iter_jsonl`): bounded lines, FIFOs and devices refused, JSON
    nested too deeply a SetError naming file:line, never a crash.
    """
    label = label or _label(path)
    ids = []
    for number, obj in iter_jsonl(path, label):
        doc_id = obj.get("id")
        if not isinstance(doc_id, str) or not doc_id:
            raise SetError(f"{label}:{number}: id: must be a non-empty string")
        ids.append(doc_id)
    return ids


def _load_jsonl(spec: dict, set_dir: Path, where: str, offline: bool) -> list[Document]:
    rel = spec.get("path")
    if not isinstance(rel, str) or not rel:
        raise SetError(f"{where}: corpus.path: must name the corpus file, e.g. 'corpus.jsonl'")
    path = set_dir / rel
    label = _label(path)
    problem = contained_path_problem(set_dir, rel)
    if problem:
        raise SetError(f"{where}: corpus.path: {rel!r} {problem}")
    documents: dict[str, Document] = {}
    for number, obj in iter_jsonl(path, label):
        doc_id, text, title = obj.get("id"), obj.get("text"), obj.get("title", "")
        if not isinstance(doc_id, str) or not doc_id:
            raise SetError(f"{label}:{number}: id: must be a non-empty string")
        if doc_id in documents:
            raise SetError(f"{label}:{number}: id: {doc_id!r} appears twice")
        if not isinstance(text, str) or not text.strip():
            raise SetError(f"{label}:{number}: text: must be a non-empty string")
        if not isinstance(title, str):
            raise SetError(f"{label}:{number}: title: must be a string")
        documents[doc_id] = Document(id=doc_id, text=text, sha256=content_sha256(text), title=title)
    if not documents:
        raise SetError(f"{label}: corpus is empty")
    return list(documents.values())


def contained_path_problem(folder: Path, relative: str) -> str | None:
    """Why `relative` does not name a file inside `folder` (symlinks resolved), or None when it does."""
    if "\0" in relative:
        return "holds a NUL character"
    candidate = Path(relative)
    if candidate.is_absolute() or ".." in candidate.parts:
        return "must be a path inside the set folder (no absolute path, no '..')"
    try:
        inside = (folder / candidate).resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return "cannot be resolved (symbolic link loop?)"
    if not inside:
        return "leads outside the set folder (through a symbolic link)"
    return None


def _imported(module_name: str, spec: dict, set_dir: Path, where: str, offline: bool) -> list[Document]:
    """The `load_documents` of a source's own module, imported when a set first uses that source."""
    return importlib.import_module(module_name).load_documents(spec, set_dir, where, offline=offline)


def _label(path: Path) -> str:
    """A path as users will recognise it: relative to the current folder when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


# source -> its loader, one signature: (spec, set_dir, where, offline) -> documents. `offline`
# forbids fetching; only pypi-sdist fetches (jsonl and git read files already on the machine).
_LOADERS: dict[str, Loader] = {
    "jsonl": _load_jsonl,
    "pypi-sdist": functools.partial(_imported, "harness.sets.sdist_source"),
    "git": functools.partial(_imported, "harness.sets.git_source"),
}
