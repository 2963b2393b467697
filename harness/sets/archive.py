"""Safe selection of files from a pinned collection (tar/zip archive, git tree) into documents.

Nothing is ever extracted to disk: members are read into memory, checked against path,
type and size rules, picked by `include`/`exclude` globs and turned into `Document`s.
The rules are shared by the pypi-sdist and git corpus sources so both behave alike.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO

from harness.errors import SetError
from harness.text import shortlist
from harness.records import Document

DEFAULT_MAX_MEMBER_BYTES = 5 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 256 * 1024 * 1024
STDERR_TAIL_LINES = 3  # of git's or pip's stderr, at the end of an error line
SELECTION_KEYS = ("include", "exclude", "max_member_bytes", "max_total_bytes")

# Member kinds. Only FILE becomes a document; the others are skipped with their kind as the reason.
FILE = "regular file"
DIRECTORY = "directory"
SYMLINK = "symlink"
HARDLINK = "hard link"
DEVICE = "device"
FIFO = "fifo"
SUBMODULE = "submodule"
OTHER = "special member"

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")
# A zip member's kind by the Unix file type in its external attributes (0: a tool that stores no Unix mode).
_ZIP_KINDS = {0: FILE, stat.S_IFREG: FILE, stat.S_IFLNK: SYMLINK, stat.S_IFDIR: DIRECTORY, stat.S_IFCHR: DEVICE,
              stat.S_IFBLK: DEVICE, stat.S_IFIFO: FIFO}
# What a truncated or corrupt compressed tar raises, depending on where the damage is.
_TAR_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error)


@dataclass(frozen=True, slots=True)
class Selection:
    """What to take from a collection: globs (fnmatch, `*` crosses `/`) and byte limits."""

    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES


@dataclass(frozen=True, slots=True)
class Member:
    """One entry of a collection: its path, kind, declared size, and how to read its bytes."""

    name: str
    kind: str
    size: int
    read: Callable[[int], bytes]  # read(limit): at most limit + 1 bytes, so overruns show


def check_source_spec(spec: object, source: str, allowed: Iterable[str], where: str) -> dict:
    """The `corpus` object of set.json, checked to be of `source` and to hold only `allowed` keys."""
    if not isinstance(spec, dict):
        raise SetError(f"{where}: corpus: must be an object")
    check_keys(spec, allowed, where, "corpus")
    if spec.get("source") != source:
        raise SetError(f"{where}: corpus.source: expected {source!r}, got {spec.get('source')!r}")
    return spec


def check_keys(spec: dict, allowed: Iterable[str], where: str, field: str) -> None:
    """Reject keys a source does not know: a misspelt `inclde` must not be silently ignored."""
    allowed_keys = set(allowed)
    for key in spec:
        if key not in allowed_keys:
            raise SetError(f"{where}: {field}.{key}: unknown key (known: {', '.join(sorted(allowed_keys))})")


def parse_selection(spec: dict, where: str) -> Selection:
    """Validate `include` (required, non-empty), `exclude` and the two byte limits of a `corpus` spec."""
    return Selection(include=_globs(spec, "include", where, required=True),
                     exclude=_globs(spec, "exclude", where, required=False),
                     max_member_bytes=_limit(spec, "max_member_bytes", DEFAULT_MAX_MEMBER_BYTES, where),
                     max_total_bytes=_limit(spec, "max_total_bytes", DEFAULT_MAX_TOTAL_BYTES, where))


def _globs(spec: dict, key: str, where: str, *, required: bool) -> tuple[str, ...]:
    if key not in spec:
        if required:
            raise SetError(f"{where}: corpus.{key}: missing (a list of fnmatch globs, e.g. [\"*/src/*.py\"])")
        return ()
    value = spec[key]
    if not isinstance(value, list) or (required and not value):
        raise SetError(f"{where}: corpus.{key}: must be a {'non-empty ' if required else ''}list of glob strings")
    for index, pattern in enumerate(value):
        if not isinstance(pattern, str) or not pattern:
            raise SetError(f"{where}: corpus.{key}[{index}]: must be a non-empty string, got {pattern!r}")
    if len(set(value)) != len(value):
        raise SetError(f"{where}: corpus.{key}: lists a glob twice")
    return tuple(value)


def _limit(spec: dict, key: str, default: int, where: str) -> int:
    value = spec.get(key, default)
    # bool is an int subclass; `true` is never a byte count.
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SetError(f"{where}: corpus.{key}: must be a positive integer (bytes), got {value!r}")
    return value


def unsafe_path_reason(name: str) -> str | None:
    """Why a member path may not become a document id, or None when it is safe.

    Absolute paths, `..` components, backslashes and drive letters could point outside
    the collection if anyone ever extracted by id; names that are not UTF-8 or hold
    control characters cannot be ids.
    """
    if not name:
        return "empty path"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "path is not valid UTF-8"
    if name.startswith("/"):
        return "absolute path"
    if "\\" in name:
        return "backslash in path"
    if _WINDOWS_DRIVE.match(name):
        return "path starts with a drive letter"
    if ".." in name.split("/"):
        return "path escapes the root ('..' component)"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in name):
        # A newline or tab in an id breaks line- and whitespace-delimited exports (TREC runs).
        return "control character in path"
    return None


def stderr_note(stderr: str | bytes) -> str:
    """`: last | few | lines` of a tool's (git's, pip's) non-blank stderr, to end an error line; "" when none."""
    text = stderr.decode("utf-8", errors="replace") if isinstance(stderr, bytes) else stderr
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f": {' | '.join(lines[-STDERR_TAIL_LINES:])}" if lines else ""


def document(doc_id: str, data: bytes) -> Document:
    """A document from raw bytes: text decoded as UTF-8 (invalid bytes replaced), sha256 of the bytes."""
    return Document(id=doc_id, text=data.decode("utf-8", errors="replace"),
                    sha256=hashlib.sha256(data).hexdigest())


class Selector:
    """Applies a `Selection` to the members of one or more collections and collects documents.

    Feed each collection with `add`; `finish` then checks that every include glob selected
    something (a glob matching nothing is almost always a typo) and returns the documents
    sorted by id. Unsafe paths, oversized members, duplicate ids and limit overruns raise
    `SetError`; links, directories and other non-regular members are skipped, and their
    skips are named if they leave a glob empty.
    """

    def __init__(self, selection: Selection, where: str) -> None:
        self.selection = selection
        self.where = where
        self.total_bytes = 0
        self.documents: dict[str, Document] = {}
        self._used: set[str] = set()
        self._excluded: dict[str, int] = {}
        self._skipped: dict[str, list[str]] = {}

    def add(self, members: Iterable[Member], origin: str) -> int:
        """Select from one collection (`origin` prefixes messages); return how many documents it gave."""
        before = len(self.documents)
        for member in members:
            self._take(member, origin)
        return len(self.documents) - before

    def _take(self, member: Member, origin: str) -> None:
        selection = self.selection
        prefix = f"{self.where}: {origin}: member {member.name!r}"
        reason = unsafe_path_reason(member.name)
        if reason is not None:
            # Reject the collection: a pinned archive carrying such a member is broken or hostile.
            raise SetError(f"{prefix}: {reason}; refusing the whole source")
        if member.kind == DIRECTORY:
            return
        patterns = [pattern for pattern in selection.include if fnmatch.fnmatchcase(member.name, pattern)]
        if not patterns:
            return
        if any(fnmatch.fnmatchcase(member.name, pattern) for pattern in selection.exclude):
            for pattern in patterns:
                self._excluded[pattern] = self._excluded.get(pattern, 0) + 1
            return
        if member.kind != FILE:
            for pattern in patterns:
                self._skipped.setdefault(pattern, []).append(f"{member.name!r} is a {member.kind}")
            return
        if member.name in self.documents:
            raise SetError(f"{prefix}: appears twice (document ids must be unique)")
        limit = selection.max_member_bytes
        if member.size > limit:
            raise SetError(f"{prefix}: {member.size} bytes, over corpus.max_member_bytes ({limit}); "
                           "raise the limit or add it to corpus.exclude")
        data = member.read(limit)
        if len(data) > limit:  # a header that understated the size
            raise SetError(f"{prefix}: more than {limit} bytes (corpus.max_member_bytes)")
        self.total_bytes += len(data)
        if self.total_bytes > selection.max_total_bytes:
            raise SetError(f"{prefix}: selected files exceed corpus.max_total_bytes "
                           f"({selection.max_total_bytes}); narrow corpus.include or raise the limit")
        self.documents[member.name] = document(member.name, data)
        self._used.update(patterns)

    def finish(self) -> list[Document]:
        """Check every include glob selected a file; return the documents sorted by id."""
        for index, pattern in enumerate(self.selection.include):
            if pattern in self._used:
                continue
            notes = []
            if pattern in self._excluded:
                notes.append(f"{self._excluded[pattern]} match(es) removed by corpus.exclude")
            skipped = self._skipped.get(pattern, [])
            if skipped:
                notes.append(f"skipped: {shortlist(skipped, 3)}")
            detail = f" ({'; '.join(notes)})" if notes else ""
            raise SetError(f"{self.where}: corpus.include[{index}]: {pattern!r} selects no regular file{detail}")
        return [self.documents[doc_id] for doc_id in sorted(self.documents)]


def archive_members(handle: BinaryIO, label: str, where: str) -> Iterator[Member]:
    """The members of a tar (any compression) or zip archive open in `handle` (seekable, binary).

    Member kinds come from the archive's own type fields; nothing is extracted.
    """
    handle.seek(0)
    if zipfile.is_zipfile(handle):
        handle.seek(0)
        yield from _zip_members(handle, label, where)
        return
    handle.seek(0)
    try:
        archive = tarfile.open(fileobj=handle, mode="r:*")
    except _TAR_ERRORS as exc:
        raise SetError(f"{where}: {label}: not a readable tar or zip archive ({exc})") from None
    with archive:
        try:
            for info in archive:
                yield Member(info.name, _tar_kind(info), info.size, partial(_tar_read, archive, info, label, where))
        except _TAR_ERRORS as exc:
            raise SetError(f"{where}: {label}: corrupt archive ({exc})") from None


def _tar_kind(info: tarfile.TarInfo) -> str:
    tests = ((info.isreg, FILE), (info.isdir, DIRECTORY), (info.issym, SYMLINK), (info.islnk, HARDLINK),
             (info.ischr, DEVICE), (info.isblk, DEVICE), (info.isfifo, FIFO))
    return next((kind for test, kind in tests if test()), OTHER)


def _tar_read(archive: tarfile.TarFile, info: tarfile.TarInfo, label: str, where: str, limit: int) -> bytes:
    try:
        stream = archive.extractfile(info)
        if stream is None:  # only for non-regular members, which are never read
            return b""
        with stream:
            return stream.read(limit + 1)
    except _TAR_ERRORS as exc:
        raise SetError(f"{where}: {label}: member {info.name!r}: unreadable ({exc})") from None


def _zip_members(handle: BinaryIO, label: str, where: str) -> Iterator[Member]:
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SetError(f"{where}: {label}: corrupt zip archive ({exc})") from None
    with archive:
        for info in archive.infolist():
            yield Member(info.filename, _zip_kind(info), info.file_size,
                         partial(_zip_read, archive, info, label, where))


def _zip_kind(info: zipfile.ZipInfo) -> str:
    return DIRECTORY if info.is_dir() else _ZIP_KINDS.get(stat.S_IFMT(info.external_attr >> 16), OTHER)


def _zip_read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, label: str, where: str, limit: int) -> bytes:
    if info.flag_bits & 0x1:
        raise SetError(f"{where}: {label}: member {info.filename!r}: encrypted")
    try:
        with archive.open(info) as stream:
            return stream.read(limit + 1)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        raise SetError(f"{where}: {label}: member {info.filename!r}: unreadable ({exc})") from None
