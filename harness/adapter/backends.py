"""Built-in backend aliases (`--backend NAME`): our reference adapters, started as separate processes."""

from __future__ import annotations

import importlib.util
import sys

from harness.errors import UsageError

# alias -> (module run with `python -m`, what to install when it is missing)
BACKENDS: dict[str, tuple[str, str]] = {
    "bm25": ("adapters.bm25", "pip install 'retrieval-gate[bm25]'"),
    "onnx": ("adapters.onnx_embed", "pip install 'retrieval-gate[onnx]'"),
    "hybrid": ("adapters.hybrid", "pip install 'retrieval-gate[onnx]'"),
}
DEFAULT_BACKEND = "bm25"


def backend_argv(name: str, extra_args: list[str] | None = None) -> list[str]:
    """The argv that starts a built-in adapter with this interpreter."""
    if name not in BACKENDS:
        raise UsageError(f"--backend: {name!r} is not one of {', '.join(sorted(BACKENDS))}")
    module, hint = BACKENDS[name]
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        raise UsageError(f"--backend {name}: module {module} is not available ({hint})")
    return [sys.executable, "-m", module, *(extra_args or [])]
