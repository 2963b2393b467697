"""Safe file I/O: atomic writes that never replace what they should write into, output preflight, strict reads.

Nothing a user wrote is ever half-overwritten; a device or FIFO named as an output is written
into, never turned into a regular file; a symlink is never written through or replaced; an
output naming one of the run's inputs is refused before the first query (`check_outputs`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from harness.errors import CacheFolderError, UsageError
from harness.shipped import is_shipped_data

CACHE_ENV = "RETRIEVAL_GATE_CACHE"
# Names that stand for one of this process's own descriptors: written into as the shell opened them.
_OWN_STREAMS = ("/dev/stdout", "/dev/stderr")
_OWN_STREAM_PREFIXES = ("/dev/fd/", "/proc/self/fd/")
_TEMP_NAME_KEEP = 100  # characters of the target's name kept in its temp file's name (see NAME_MAX)
SHIPPED_REFUSAL = ("is the installed harness's shipped data, which every user of this environment reads; never "
                   "written (give a path of your own)")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path`: a regular file by temp file + fsync + rename, a stream by writing into it.

    - missing or a regular file: written beside it to a temp file, then renamed over it, so a
      reader sees the old file or the new one, never a truncated mix;
    - a character device or FIFO (`/dev/null`, a named pipe), or `/dev/stdout`, `/dev/stderr`,
      `/dev/fd/N`: opened and written into, never replaced (a FIFO without a reader is refused
      rather than waited on);
    - a symlink to anything else, a directory, a block device or a socket: UsageError, one line.
    """
    target = Path(path)
    reason = output_refusal(target)
    if reason is not None:
        raise UsageError(f"{target}: {reason}")
    if names_a_stream(target):  # missing: created; any other problem surfaces, as OSError, from the write
        _write_into(target, data)
        return
    try:
        with _temp_beside(target, data) as tmp_name:
            os.replace(tmp_name, target)
    except OSError as exc:
        if exc.filename is not None:
            raise
        # a write or sync error names no file: name the target, so that no one blames stdout for a full disk
        raise OSError(exc.errno, exc.strerror, str(target)) from None


@contextlib.contextmanager
def _temp_beside(path: Path, data: bytes) -> Iterator[str]:
    """`data` in a synced temp file beside `path` (its folder created), removed on leaving unless renamed."""
    fd, tmp_name = new_file_beside(path, ".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        yield tmp_name
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)


def output_refusal(target: Path) -> str | None:
    """Why `target` can be neither replaced nor written into, or None when it is a fine output path."""
    if _own_stream(target):
        return None
    if is_shipped_data(target):
        return SHIPPED_REFUSAL
    try:
        link = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:  # a name too long, a symlink loop, no permission to look
        return f"cannot be examined: {exc.strerror}"
    if stat.S_ISLNK(link.st_mode):
        if not os.path.exists(target):
            return "is a dangling symbolic link; give the real path (outputs are never written through links)"
        if _is_existing_stream(target):
            return None  # a link to a device or FIFO: written into, the link untouched
        return "is a symbolic link; give the real path (outputs are never written through or replace links)"
    if stat.S_ISDIR(link.st_mode):
        return "is a directory; give a file path"
    if stat.S_ISREG(link.st_mode) or stat.S_ISCHR(link.st_mode) or stat.S_ISFIFO(link.st_mode):
        return None
    return "is not a regular file, character device or FIFO (block device or socket); refusing to replace it"


def _own_stream(target: Path) -> bool:
    text = str(target)
    return text in _OWN_STREAMS or text.startswith(_OWN_STREAM_PREFIXES)


def _own_descriptor(target: Path) -> int | None:
    """The descriptor `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` or `/proc/self/fd/N` names, or None."""
    text = str(target)
    if text in _OWN_STREAMS:
        return _OWN_STREAMS.index(text) + 1
    for prefix in _OWN_STREAM_PREFIXES:
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return int(text[len(prefix):])
    return None


def _write_into(target: Path, data: bytes) -> None:
    own = _own_descriptor(target)
    if own is not None:
        # Our own descriptor, written through a duplicate rather than reopened by name: reopening
        # /proc/self/fd/1 is refused to a non-root user when the pipe or terminal belongs to another.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.flush()  # what we printed before comes first
        try:
            fd = os.dup(own)
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
                os.close(fd)
                raise UsageError(f"{target}: cannot write: it is open for reading only")
        except OSError as exc:
            raise UsageError(f"{target}: cannot write: {exc.strerror}") from None
    else:
        # O_NONBLOCK only for the open: a FIFO with no reader fails at once (ENXIO) instead of hanging.
        # O_APPEND: a device or FIFO opened by name keeps what others wrote there.
        try:
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | os.O_APPEND | os.O_NOCTTY)
        except OSError as exc:
            if exc.errno == 6:  # ENXIO
                raise UsageError(f"{target}: is a FIFO with no reader; start the reader first") from None
            raise UsageError(f"{target}: cannot write: {exc.strerror}") from None
    _write_all(fd, data, f"{target}: cannot write")


def _write_all(fd: int, data: bytes, failure: str) -> None:
    """Write all of `data` to `fd` (made blocking), then close it; an OSError is UsageError `FAILURE: why`."""
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise UsageError(f"{failure}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def new_file_beside(path: Path, suffix: str) -> tuple[int, str]:
    """A new hidden file beside `path` (its folder created), to be renamed or linked over it: (descriptor, name).
    mkstemp makes 0600 files; it gets the mode a plain open() would give (0666 & ~umask), as every output has."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name[:_TEMP_NAME_KEEP]}.", suffix=suffix, dir=path.parent)
    mask = os.umask(0)
    os.umask(mask)
    os.fchmod(fd, 0o666 & ~mask)
    return fd, name


def write_new_text(path: Path, text: str) -> bool:
    """Write `text` to `path` only if nothing is there: True when written, False when `path` exists
    (a file, a folder, a link, even a dangling one), which is then left untouched.

    Written to a temp file beside it, then hard-linked into place: the link fails rather than
    replaces when `path` appeared meanwhile, and a reader never sees a half-written file.
    """
    if os.path.lexists(path):
        return False
    try:
        with _temp_beside(path, text.encode("utf-8")) as tmp_name:
            os.link(tmp_name, path)
        return True
    except FileExistsError:
        return False


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """UTF-8 text flavour of `atomic_write_bytes`.

    Text that cannot be UTF-8 (a lone surrogate) is a ValueError naming the path and the
    offset: inputs are validated where they enter, so this is a bug, not the user's data.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{path}: text to write holds a lone surrogate at offset {exc.start}") from None
    atomic_write_bytes(path, data)


def write_output(path: str | os.PathLike[str], text: str, label: str) -> None:
    """Write one output of a command (`label` the option naming it, e.g. "--junit") as `atomic_write_text` does.

    Every failure is one UsageError line `LABEL: PATH: why`: a refused target (symlink,
    directory ...), a FIFO without a reader, a full disk or a read-only folder (the old file is
    then kept whole and no temp file is left behind).
    """
    try:
        atomic_write_text(path, text)
    except UsageError as exc:
        raise UsageError(f"{label}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"{label}: {path}: cannot write: {exc.strerror or exc}") from None


def append_output(path: Path, text: str, label: str) -> None:
    """Append `text` to an output others write into too (e.g. $GITHUB_STEP_SUMMARY): created when missing,
    never through a symlink, opened without blocking (a FIFO with no reader is refused, not waited on);
    one UsageError line `LABEL: PATH: why` on failure."""
    problem = append_target_problem(path)
    if problem:
        raise UsageError(f"{label}: {path}: {problem}")
    _write_all(_open_appending(path, label, fifo=True), text.encode("utf-8"), f"{label}: {path}: cannot append")


STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
STEP_SUMMARY = f"${STEP_SUMMARY_ENV}"  # how outputs and error lines name it


def step_summary_target() -> Path | None:
    """$GITHUB_STEP_SUMMARY as a file that can be appended to, None when unset; UsageError naming it otherwise.

    Commands call it before any work, and check it with their other outputs (`check_outputs`: it must name
    none of the command's inputs or other outputs), so a bad path never costs a run; again when they append.
    """
    value = os.environ.get(STEP_SUMMARY_ENV)
    if not value:
        return None
    problem = append_target_problem(Path(value))
    if problem:
        raise UsageError(f"{STEP_SUMMARY}: {value}: {problem}")
    return Path(value)


def append_target_problem(path: Path) -> str | None:
    """Why `path` cannot be appended to (a missing folder, a directory, a symlink), or None."""
    if path.is_symlink():
        return "is a symlink; refusing to write through it"
    if path.is_dir():
        return "is a directory"
    if not path.parent.is_dir():
        return f"folder {path.parent} does not exist"
    return None


def check_outputs(outputs: Mapping[str, Path | None], protected: Mapping[str, Path | None]) -> None:
    """Refuse, before any work, an output path the run could not write or must not write.

    `outputs` maps the option that names it (e.g. "--out", "--junit", "adapter log") to its
    path; `protected` maps a label ("--baseline", "set code: queries.jsonl") to an input the
    run reads. None values are skipped. Raises UsageError `OPTION: PATH: why` when an output
    - is refused by `output_refusal` (a directory, a symlink to a regular file, a socket ...);
    - sits under a path component that is not a folder, or in a folder where a file cannot be
      created (read-only, no permission; checked by creating and removing a temp file there,
      in the nearest existing folder when the folder is still to be created, as the write will);
    - has a name longer than the filesystem allows, or a path longer than PATH_MAX;
    - is the same file as a protected input or as another output (same resolved path, or the
      same inode for hard links). Devices and FIFOs (/dev/null) may be named by several outputs.
    """
    seen: dict[tuple, str] = {}
    for label, path in protected.items():
        if path is not None:
            for key in _identities(Path(path)):
                seen.setdefault(key, label)
    for label, path in outputs.items():
        if path is None:
            continue
        target = Path(path)
        reason = _length_refusal(target) or output_refusal(target)
        if reason is not None:
            raise UsageError(f"{label}: {target}: {reason}")
        if names_a_stream(target):
            continue
        reason = _folder_refusal(target)
        if reason is not None:
            raise UsageError(f"{label}: {target}: {reason}")
        keys = _identities(target)
        same = next((seen[key] for key in keys if key in seen), None)
        if same is not None:
            raise UsageError(f"{label}: {target}: is the same file as {same}; "
                             f"refusing to write into it (give another path)")
        seen.update(dict.fromkeys(keys, label))


def names_a_stream(target: Path) -> bool:
    """True when an output at `target` is written into a stream (/dev/stdout, /dev/fd/N, an existing
    device or FIFO), so its folder is no place for companion files (logs, tracebacks)."""
    return _own_stream(target) or _is_existing_stream(target)


def _is_existing_stream(target: Path) -> bool:
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _identities(path: Path) -> list[tuple]:
    """What makes two paths the same file: the resolved path, and (dev, inode) when it exists."""
    keys: list[tuple] = [("path", os.path.realpath(path))]
    try:
        info = os.stat(path)
    except OSError:
        return keys
    if stat.S_ISREG(info.st_mode):
        keys.append(("inode", info.st_dev, info.st_ino))
    return keys


def _length_refusal(target: Path) -> str | None:
    existing = Path(os.path.abspath(target)).parent
    while not os.path.isdir(existing) and existing != existing.parent:
        existing = existing.parent
    try:
        name_max = os.pathconf(existing, "PC_NAME_MAX")
        path_max = os.pathconf(existing, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    for part in target.parts:
        if len(os.fsencode(part)) > name_max:
            return f"a name in the path is longer than the {name_max} bytes this filesystem allows"
    if len(os.fsencode(os.path.abspath(target))) >= path_max:
        return f"the path is longer than the {path_max} bytes the system allows"
    return None


def _folder_refusal(target: Path) -> str | None:
    folder = existing = target.parent  # Path("name").parent is Path(".")
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    try:
        fd, probe = tempfile.mkstemp(prefix=".retrieval-gate-probe.", dir=existing)
    except OSError as exc:
        where = "its folder" if existing == folder else f"{existing} (where its folder would be created)"
        return f"cannot create a file in {where}: {exc.strerror}"
    os.close(fd)
    os.unlink(probe)
    return None


def open_log(path: Path, label: str = "adapter log"):
    """Open a log for appending, unbuffered binary, without following a symlink at its name.

    A regular file is created or appended to; a character device (/dev/null) is written into;
    a symlink, FIFO, directory or anything else is refused with UsageError `LABEL: PATH: why`
    (a FIFO nobody reads would stall the adapter's stderr). The folder is created.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return os.fdopen(_open_appending(target, label, fifo=False), "ab", buffering=0)


def _open_appending(target: Path, label: str, *, fifo: bool) -> int:
    """A blocking descriptor appending to `target` (created when missing), opened without blocking and without
    following a symlink at its name: a regular file, a character device, or (`fifo`) a FIFO that has a reader.
    Anything else is one UsageError line `LABEL: PATH: why`."""
    if is_shipped_data(target):
        raise UsageError(f"{label}: {target}: {SHIPPED_REFUSAL}")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(target, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(target):  # the name is a symlink
            raise UsageError(f"{label}: {target}: is a symbolic link; give the real path "
                             f"(never written through links)") from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader: waiting would hang the command
            raise UsageError(f"{label}: {target}: is a FIFO with no reader" + (
                "; start the reader first" if fifo else "; give a file path")) from None
        raise UsageError(f"{label}: {target}: cannot open: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or (fifo and stat.S_ISFIFO(mode))):
        os.close(fd)
        raise UsageError(f"{label}: {target}: is not a regular file or character device" + (" or FIFO" if fifo else ""))
    os.set_blocking(fd, True)
    return fd


# ANSI escape sequences (CSI ... final byte, OSC ... BEL/ST, two-character escapes), then every
# character XML 1.0 forbids (C0 controls but tab, newline, carriage return; surrogates; U+FFFE/F)
# and the controls it allows but a terminal printing a JUnit message would act on (DEL, C1: 0x9b is CSI).
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_NOT_XML = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """`text` with ANSI colour/cursor escapes removed and characters XML 1.0 forbids, DEL and C1 controls
    replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", _ANSI.sub("", text))


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in chunks (OSError when it cannot be read)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def cache_dir(*parts: str) -> Path:
    """The user cache folder (created), from $RETRIEVAL_GATE_CACHE, $XDG_CACHE_HOME or ~/.cache.

    Adapters and the harness share it so a fetched archive or model is downloaded once. A folder
    that cannot be created raises CacheFolderError (exit 2, naming the folder and the variable).
    """
    root = os.environ.get(CACHE_ENV)
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "retrieval-gate"
    folder = base.joinpath(*parts)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        source = f"${CACHE_ENV}" if root else "$XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "the home folder"
        raise CacheFolderError(f"{folder}: the user cache folder cannot be used ({exc.strerror or exc}; from "
                               f"{source}): set ${CACHE_ENV} to a writable folder") from None
    return folder


def open_regular(path: Path, error: type[Exception], label: str | None = None):
    """Open `path` for binary reading, refusing anything but a regular file before reading a byte.

    A FIFO or device named as an input would block forever or never end: it is opened
    non-blocking (so a FIFO without a writer does not hang the open), checked with fstat,
    and refused with `error` naming the file. Symlinks to regular files are followed.
    """
    label = label or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise error(f"{label}: file not found") from None
    except OSError as exc:
        raise error(f"{label}: cannot read: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
        raise error(f"{label}: is {what}, not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")
