"""Fingerprints of the files a run reads, taken at the start and checked at the end: drift is refused.

A set edited while a run reads it, or a materialised corpus file changed under the adapter,
would score one version of the gold against another: such a run ends with exit 2 and a report
marked incomplete, naming the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from harness.fsutil import file_sha256
from harness.records import QuerySet
from harness.sets.loader import protected_files

def set_files(query_sets: Sequence[QuerySet]) -> list[Path]:
    """The files of each set's folder that decide what is asked and how it is scored."""
    return [path for path in protected_files(query_sets).values() if path.is_file()]


def corpus_fingerprints(folder: Path) -> dict[str, str | None]:
    """Every `<kind>.jsonl` the adapter was given."""
    return fingerprint_files(sorted(folder.glob("*.jsonl")))


def fingerprint_files(paths: Iterable[Path | str]) -> dict[str, str | None]:
    """path -> sha256 of its bytes, None when it cannot be read (gone, unreadable)."""
    return {str(path): _readable_sha256(Path(path)) for path in paths}


def _readable_sha256(path: Path) -> str | None:
    try:
        return file_sha256(path)
    except OSError:
        return None


def changed_files(before: Mapping[str, str | None], after: Mapping[str, str | None], what: str) -> list[str]:
    """One phrase per file whose fingerprint changed, e.g. "set file sets/x/queries.jsonl changed"."""
    return [f"{what} {path} {'is gone' if after.get(path) is None else 'changed'}"
            for path in sorted(before) if after.get(path) != before[path]]
