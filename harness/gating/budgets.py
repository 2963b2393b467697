"""Read budgets.json: the p95 latency budget, in milliseconds, per set."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import UsageError
from harness.measured import StrictReader
from harness.strict_json import read_settings_file

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
    budgets = StrictReader(document, str(path if path is not None else DEFAULT_BUDGETS_PATH), UsageError)
    budgets.optional("format", None).version(1)
    budgets.only({"format", "default_p95_ms", "p95_ms"})  # a misspelt key would leave every set on the default
    default = _milliseconds(budgets.optional("default_p95_ms", DEFAULT_P95_BUDGET_MS))
    return Budgets({name: _milliseconds(value) for name, value in budgets.optional("p95_ms", {}).items()}, default)


def _milliseconds(reader: StrictReader) -> float:
    return reader.number_in(0, MAX_BUDGET_MS, above=True, why="a p95 budget in milliseconds, at most one day")
