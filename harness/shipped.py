"""Where the shipped sets and baselines live, so they are found from any working folder.

The team's own layout (the working folder or its config) comes first; these are the fallback the built-in default
job (BM25 over the shipped sets) uses. In a checkout or an editable install they are the
repository's `sets/` and `baselines/` folders.
"""
from __future__ import annotations

from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent


def shipped_sets_dir() -> Path:
    """The folder of the shipped sets (NAME/set.json)."""
    return _CHECKOUT / "sets"


def shipped_baselines_dir() -> Path:
    """The folder of the shipped reference baselines (current.json for BM25, onnx.json, hybrid.json)."""
    return _CHECKOUT / "baselines"
