"""Read budgets.json: the p95 latency budget, in milliseconds, per set; the adapter's resource budgets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import UsageError
from harness.measured import RESOURCE_FIGURES, StrictReader
from harness.strict_json import read_settings_file

DEFAULT_BUDGETS_PATH = Path("budgets.json")
DEFAULT_P95_BUDGET_MS = 300.0
MAX_BUDGET_MS = 86_400_000.0  # one day: a larger p95 budget is a typo (or 400 digits), not a budget
# Resource budgets (docs/gate.md, "Resource budgets"): none by default. Their largest values: a start-up
# longer than any --startup-limit allows never happens; 1 TiB of resident memory, 2**53 bytes of index
# (the largest integer a JSON reader keeps exact) are typos, not budgets.
MAX_STARTUP_SECONDS = 1e6  # adapter/startup.py MAX_WAIT_SECONDS (gating may not import adapter/; a test holds them equal)
MAX_RSS_MIB = 1024.0 * 1024.0
MAX_INDEX_BYTES = 2 ** 53


@dataclass(frozen=True)
class Budgets:
    """Each set's p95 budget in milliseconds, and the default for sets the file does not name."""

    per_set_ms: Mapping[str, float] = field(default_factory=dict)
    default_ms: float = DEFAULT_P95_BUDGET_MS
    # The adapter's resources, for every set (a run's figures): field of measured.RESOURCE_FIGURES -> the largest
    # value allowed; a figure without a budget is not budgeted.
    resources: Mapping[str, float] = field(default_factory=dict)
    source: str = "default"  # the file it was read from, for errors

    def check_startup_reach(self, startup_limit: float) -> None:
        """UsageError when the start-up budget is at or above the run's --startup-limit: a start-up that long
        stops the run (exit 3) first, so the budget could never fail."""
        budget = self.resources.get("startup_seconds")
        if budget is not None and budget >= startup_limit:
            raise UsageError(f"{self.source}: resources.startup_seconds: {budget:g} s: no start-up passes the "
                             f"--startup-limit of {startup_limit:g} s, so this budget could never fail; give less "
                             f"than {startup_limit:g}, or a longer --startup-limit")

    def for_set(self, name: str) -> float:
        return float(self.per_set_ms.get(name, self.default_ms))


def load_budgets(path: Path | None) -> Budgets:
    """The budgets in `path` (None: budgets.json when present, else 300 ms for every set).

    Format: `{"format": 1, "default_p95_ms": 300, "p95_ms": {"code": 300}, "resources":
    {"startup_seconds": 30, "peak_rss_mib": 1024, "index_bytes": 500000000}}`; every p95 value a
    number of milliseconds in (0, MAX_BUDGET_MS]; each resource budget optional, above 0 and at
    most its MAX_*. UsageError (exit 2) naming file and field.
    """
    document = read_settings_file(path, DEFAULT_BUDGETS_PATH, UsageError, "budgets")
    if document is None:
        return Budgets()
    budgets = StrictReader(document, str(path if path is not None else DEFAULT_BUDGETS_PATH), UsageError)
    budgets.optional("format", None).version(1)
    budgets.only({"format", "default_p95_ms", "p95_ms", "resources"})  # a misspelt key would leave a default on
    default = _milliseconds(budgets.optional("default_p95_ms", DEFAULT_P95_BUDGET_MS))
    return Budgets({name: _milliseconds(value) for name, value in budgets.optional("p95_ms", {}).items()}, default,
                   _resources(budgets.optional("resources", {})), source=budgets.label)


def _resources(reader: StrictReader) -> dict[str, float]:
    """The `resources` budgets: start-up seconds, peak RSS MiB, index bytes, each optional."""
    reader.only({name for name, _, _ in RESOURCE_FIGURES})
    bounds = {"startup_seconds": (MAX_STARTUP_SECONDS, "seconds to the banner, at most the longest --startup-limit"),
              "peak_rss_mib": (MAX_RSS_MIB, "MiB of resident memory, at most 1 TiB"),
              "index_bytes": (MAX_INDEX_BYTES, "bytes, at most 2**53")}
    budgets: dict[str, float] = {}
    for name, value in reader.items():
        if value.value is None:
            continue
        high, why = bounds[name]
        budgets[name] = (value.integer_in(1, int(high), why) if name == "index_bytes"
                         else value.number_in(0, high, above=True, why=why))
    return budgets


def _milliseconds(reader: StrictReader) -> float:
    return reader.number_in(0, MAX_BUDGET_MS, above=True, why="a p95 budget in milliseconds, at most one day")
