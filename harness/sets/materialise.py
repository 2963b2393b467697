"""Materialise sets' corpora as `<kind>.jsonl` files: what an adapter finds in $HARNESS_CORPUS_DIR."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from harness.errors import SetError, UsageError
from harness.fsutil import atomic_write_text
from harness.records import QuerySet


def passages_hint(folder: Path, kind: str) -> Path:
    """Where a set in passage mode tells adapters its windows (adapters/passages.py reads `<kind>.passages.json`)."""
    return folder / f"{kind}.passages.json"


def materialise_corpora(query_sets: Sequence[QuerySet], folder: Path) -> dict[str, Path]:
    """Write `<kind>.jsonl` for each kind; two sets sharing a kind must share the same corpus."""
    written: dict[str, tuple[str, str]] = {}
    paths: dict[str, Path] = {}
    for query_set in query_sets:
        previous = written.get(query_set.kind)
        if previous is not None:
            if previous[1] != query_set.corpus_hash:
                raise SetError(f"sets {previous[0]} and {query_set.name} both use kind {query_set.kind!r} "
                               f"with different corpora; give one of them another kind")
            continue
        lines = [json.dumps({"id": doc.id, "text": doc.text, **({"title": doc.title} if doc.title else {})},
                            ensure_ascii=False) for doc in query_set.documents]
        path = folder / f"{query_set.kind}.jsonl"
        atomic_write_text(path, "\n".join(lines) + "\n")
        if query_set.extra.get("passages"):  # the set asks adapters to show windows (adapters/passages.py)
            atomic_write_text(passages_hint(folder, query_set.kind), json.dumps(query_set.extra["passages"]) + "\n")
        written[query_set.kind] = (query_set.name, query_set.corpus_hash)
        paths[query_set.kind] = path
    return paths


def write_corpus_files(query_set: QuerySet, folder: Path) -> Path:
    """`sets export-corpus`: the set's `<kind>.jsonl` (and passages hint) in `folder`, never replacing a file.

    The same bytes a run gives an adapter, so a backend indexing outside the harness (an HTTP
    service behind adapters.http) indexes the same documents under the same ids.
    """
    targets = [folder / f"{query_set.kind}.jsonl"]
    if query_set.extra.get("passages"):
        targets.append(passages_hint(folder, query_set.kind))
    for target in targets:
        if os.path.lexists(target):  # False, not OSError, for a name too long: mkdir then says why
            raise UsageError(f"{target}: already exists; export into an empty folder (nothing is overwritten)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return materialise_corpora([query_set], folder)[query_set.kind]
    except (FileExistsError, NotADirectoryError):
        raise UsageError(f"{folder}: not a folder; give a folder to write {targets[0].name} into") from None
    except OSError as exc:
        raise UsageError(f"{folder}: cannot write {targets[0].name}: {exc.strerror or exc}") from None
