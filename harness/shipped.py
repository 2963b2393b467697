"""Where the shipped sets and baselines are, so they are found from any working folder.

The team's own layout (the working folder or its config) comes first; these are the fallback the built-in default
job (BM25 over the shipped sets) uses. Installed from a wheel, they are package data in `harness._shipped`
(pyproject.toml maps the repository's folders there); in a checkout or an editable install they are the
repository's `sets/` and `baselines/` folders.
"""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent
_PACKAGED = _HERE / "_shipped"  # only in an installed wheel


def checkout_root() -> Path | None:
    """The repository this harness runs from (a checkout or an editable install), None when installed from a wheel."""
    return None if _PACKAGED.is_dir() else _HERE.parent


def shipped_sets_dir() -> Path:
    """The folder of the shipped sets (NAME/set.json)."""
    return (checkout_root() or _PACKAGED) / "sets"


def shipped_baselines_dir() -> Path:
    """The folder of the shipped reference baselines (current.json for BM25, onnx.json, hybrid.json)."""
    return (checkout_root() or _PACKAGED) / "baselines"


def is_shipped_data(path: str | Path) -> bool:
    """True when `path` lies in the installed wheel's package data (its shipped sets and baselines): data every
    user of that environment reads, never a write target. In a checkout the repository's sets/ and baselines/
    are its team's own, and False."""
    if not _PACKAGED.is_dir():
        return False
    try:
        Path(path).resolve().relative_to(_PACKAGED.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True
