"""Built-in backend aliases (`--backend NAME`): our reference adapters, started as separate processes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from harness.errors import UsageError
from harness.shipped import checkout_root, shipped_baselines_dir

# The repository's adapters/ folder as a wheel installs it: a distinct name, because PyPI's `adapters`
# (AdapterHub) imports as `adapters` (pyproject.toml, [tool.setuptools.package-dir]).
INSTALLED_ADAPTERS = "retrieval_gate_adapters"

# alias -> (module of the reference adapters' package run with `python -m`, what to install when it is
# missing, its shipped baseline in baselines/)
BACKENDS: dict[str, tuple[str, str, str]] = {
    "bm25": ("bm25", "pip install 'retrieval-gate[bm25]'", "current.json"),
    "onnx": ("onnx_embed", "pip install 'retrieval-gate[onnx]'", "onnx.json"),
    "hybrid": ("hybrid", "pip install 'retrieval-gate[onnx]'", "hybrid.json"),
}
DEFAULT_BACKEND = "bm25"


def backend_argv(name: str, extra_args: list[str] | None = None) -> list[str]:
    """The argv that starts a built-in adapter with this interpreter."""
    if name not in BACKENDS:
        raise UsageError(f"--backend: {name!r} is not one of {', '.join(sorted(BACKENDS))}")
    module, hint, _ = BACKENDS[name]
    module = f"{reference_adapters_package()}.{module}"
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        raise UsageError(f"--backend {name}: module {module} is not available ({hint})")
    return [sys.executable, "-m", module, *(extra_args or [])]


def reference_adapters_package() -> str:
    """The import name that starts the reference adapters that came with this harness.

    In a checkout whose folder is importable (the working folder, PYTHONPATH) it is `adapters`, as
    `python -m adapters.bm25` and the committed baselines name it; otherwise (a wheel, or an editable
    install run from another folder) the installed name. Only this checkout's own `adapters/` counts:
    another distribution's `adapters` is never started.
    """
    root = checkout_root()
    spec = importlib.util.find_spec("adapters")  # a top-level name: nothing is imported
    if root is not None and spec is not None and spec.origin \
            and Path(spec.origin).resolve() == root / "adapters" / "__init__.py":
        return "adapters"
    return INSTALLED_ADAPTERS


def shipped_baseline(name: str) -> Path:
    """The baseline shipped for a built-in backend (what `--backend NAME` is gated against without one of the team's)."""
    return shipped_baselines_dir() / BACKENDS[name][2]
