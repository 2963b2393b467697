"""Atomic file writes and the user cache folder: nothing a user wrote is ever half-overwritten."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

CACHE_ENV = "RETRIEVAL_GATE_CACHE"


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` via a temp file in the same folder, fsync, then rename.

    A reader sees either the old file or the new one, never a truncated mix.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp makes 0600 files; give the result the mode a plain open() would (0666 & ~umask).
        os.fchmod(fd, 0o666 & ~_current_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """UTF-8 text flavour of `atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def cache_dir(*parts: str) -> Path:
    """The user cache folder (created), from $RETRIEVAL_GATE_CACHE, $XDG_CACHE_HOME or ~/.cache.

    Adapters and the harness share it so a fetched archive or model is downloaded once.
    """
    root = os.environ.get(CACHE_ENV)
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "retrieval-gate"
    folder = base.joinpath(*parts)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def read_json_file(path: Path, error: type[Exception], label: str | None = None, what: str = "JSON") -> object:
    """Parse a JSON file; every way it can fail is one `error` line naming the file.

    `what` names the document in the message ("corrupt baseline, not valid JSON ...").
    """
    label = label or str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{label}: file not found") from None
    except OSError as exc:
        raise error(f"{label}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise error(f"{label}: {what} is not valid UTF-8") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise error(f"{label}: {what}, not valid JSON ({exc})") from None
    except RecursionError:
        raise error(f"{label}: {what}, JSON nested too deeply") from None
