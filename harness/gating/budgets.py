"""Read budgets.json: the p95 latency budget, in milliseconds, per set."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.strict_json import is_finite_number, read_settings_file
from harness.errors import UsageError
from harness.quoting import field_key

DEFAULT_BUDGETS_PATH = Path("budgets.json")
DEFAULT_P95_BUDGET_MS = 300.0
MAX_BUDGET_MS = 86_400_000.0  # one day: a larger p95 budget is a typo (or 400 digits), not a budget


@dataclass(frozen=True)
class Budgets:
    """Each set's p95 budget in milliseconds, and the default for sets the file does not name."""

    per_set_ms: Mapping[str, float] = field(default_factory=dict)
    default_ms: float = DEFAULT_P95_BUDGET_MS

    def for_set(self, name: str) -> float:
        return float(self.per_set_ms.get(name, self.default_ms))


def load_budgets(path: Path | None) -> Budgets:
    """The budgets in `path` (None: budgets.json when present, else 300 ms for every set).

    Format: `{"format": 1, "default_p95_ms": 300, "p95_ms": {"code": 300}}`; every value a
    number of milliseconds in (0, MAX_BUDGET_MS]. UsageError (exit 2) naming file and field.
    """
    document = read_settings_file(path, DEFAULT_BUDGETS_PATH, UsageError, "budgets")
    if document is None:
        return Budgets()
    path = path if path is not None else DEFAULT_BUDGETS_PATH
    if not isinstance(document, dict) or type(document.get("format")) is not int or document.get("format") != 1:
        raise UsageError(f"{path}: format: expected the integer 1")
    unknown = sorted(set(document) - {"format", "default_p95_ms", "p95_ms"})
    if unknown:  # a misspelt key would leave every set on the default budget unseen
        raise UsageError(f"{path}: {field_key(unknown[0])}: unknown field (known: default_p95_ms, format, p95_ms)")
    default = document.get("default_p95_ms", DEFAULT_P95_BUDGET_MS)
    per_set = document.get("p95_ms", {})
    if not _positive(default):
        raise UsageError(f"{path}: default_p95_ms: must be a positive number of milliseconds")
    if not isinstance(per_set, dict):
        raise UsageError(f"{path}: p95_ms: must be an object {{set: milliseconds}}")
    for name, value in per_set.items():
        if not _positive(value):
            raise UsageError(f"{path}: p95_ms.{field_key(name)}: must be a positive number of milliseconds")
    return Budgets({name: float(value) for name, value in per_set.items()}, float(default))


def _positive(value: object) -> bool:
    return is_finite_number(value) and 0 < value <= MAX_BUDGET_MS
