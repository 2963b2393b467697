"""Read budgets.json: the p95 latency budget, in milliseconds, per set."""

from __future__ import annotations

import math
from pathlib import Path

from harness.strict_json import read_json_file
from harness.errors import UsageError
from harness.gating.gates import DEFAULT_P95_BUDGET_MS

MAX_BUDGET_MS = 86_400_000.0  # one day: a larger p95 budget is a typo (or 400 digits), not a budget


def load_budgets(path: Path, *, required: bool) -> tuple[dict[str, float], float]:
    """Return ({set name: p95 ms}, default p95 ms). A missing default file means 300 ms for all.

    Format: `{"format": 1, "default_p95_ms": 300, "p95_ms": {"code": 300}}`; every value a
    number of milliseconds in (0, MAX_BUDGET_MS]. UsageError (exit 2) naming file and field.
    """
    if not path.exists():
        if required:
            raise UsageError(f"{path}: budgets file not found")
        return {}, DEFAULT_P95_BUDGET_MS
    document = read_json_file(path, UsageError, what="budgets")
    if not isinstance(document, dict) or document.get("format") != 1:
        raise UsageError(f"{path}: format: expected 1")
    default = document.get("default_p95_ms", DEFAULT_P95_BUDGET_MS)
    per_set = document.get("p95_ms", {})
    if not _positive(default):
        raise UsageError(f"{path}: default_p95_ms: must be a positive number of milliseconds")
    if not isinstance(per_set, dict):
        raise UsageError(f"{path}: p95_ms: must be an object {{set: milliseconds}}")
    for name, value in per_set.items():
        if not _positive(value):
            label = name if name.isprintable() and name.strip() == name and name else repr(name)
            raise UsageError(f"{path}: p95_ms.{label}: must be a positive number of milliseconds")
    return {name: float(value) for name, value in per_set.items()}, float(default)


def _positive(value: object) -> bool:
    # The bound is checked before isfinite: math.isfinite overflows on an integer past float range.
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and 0 < value <= MAX_BUDGET_MS and math.isfinite(value))
