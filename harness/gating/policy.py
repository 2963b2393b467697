"""The gate policy: which metrics are gated, by how much they may drop, and when a drop or a slowdown only warns.

Read from `gate-policy.json` beside budgets.json (or `--policy FILE`); every field is optional and
defaults to GatePolicy's below. Each field and its rule, with the measurements behind the defaults:
docs/sets.md, "Gate policy". A set's drop (overall) beyond the limit fails: the founding rule. A
category's drop beyond it fails only under `categories.rule`: "holm" (the default), when it is also
significant with the family-wise error of all the run's category tests held to CATEGORY_ALPHA;
"discount", when it still exceeds the limit with its `discount_queries` worst-changed queries set
back. Otherwise it warns, saying why (`python -m benchmarks.decisions` measures both rules' error
rates). Unknown keys at any depth, a `format` that is not the integer 1, and limits under which a
gate could never fail are refused, one line each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.gating.budgets import MAX_INDEX_BYTES, MAX_RSS_MIB, MAX_STARTUP_SECONDS
from harness.measured import StrictReader
from harness.scoring.metrics import parse_metric, tie_aware_measure
from harness.strict_json import read_settings_file

FOUNDING_METRIC = "recall@10"  # the founding gate's metric; every baseline scope with scored queries carries it
POLICY_FORMAT = 1
DEFAULT_POLICY_FILE = Path("gate-policy.json")
MAX_POINTS = 100.0  # a mean of a [0, 1] metric moves at most 100 points: a limit there can never be crossed
# Static bounds of the other limits (harness/gating/inputs.py also refuses a count no set of the run can reach).
MAX_COUNT = 1_000_000
MAX_PERCENT = 1e6
MAX_INCREASE_MS = 1e6
MAX_DAYS = 1e6
DEFAULT_DRIFT_BASELINES = 10  # the drift window: the last 10 accepted baselines
# A resource floor at these or above can never be crossed: a start-up is cut at the longest --startup-limit
# (harness/gating/budgets.py MAX_STARTUP_SECONDS), memory and index past the budgets' largest values.
RESOURCE_FLOOR_BOUNDS = {"min_increase_seconds": MAX_STARTUP_SECONDS, "min_increase_mib": MAX_RSS_MIB,
                         "min_increase_bytes": float(MAX_INDEX_BYTES)}
# Each section's keys, in the order `to_dict` writes them, and the GatePolicy field each one sets; any other key
# is refused (a misspelt key must not switch a gate off unseen).
SECTIONS = {"categories": {"gate": "gate_categories", "min_queries": "min_category_queries", "rule": "category_rule",
                           "discount_queries": "discount_queries"},
            "significance": {"require_ci_below_zero": "require_ci_below_zero"},
            "latency": {"relative_p95_limit_percent": "latency_relative_limit_percent",
                        "min_increase_ms": "latency_min_increase_ms", "min_samples": "latency_min_samples",
                        "relative_fails": "latency_relative_fails", "paired_warn_ratio": "latency_paired_warn_ratio",
                        "paired_fails_ratio": "latency_paired_fails_ratio"},
            "judged": {"warn_drop_points": "judged_warn_drop_points"},
            "ratchet": {"improvement_points": "ratchet_improvement_points"},
            "drift": {key: f"drift_{key}" for key in ("limit_points", "baselines", "days", "fails")},
            "resources": {key: f"resources_{key}" for key in ("relative_limit_percent", *RESOURCE_FLOOR_BOUNDS,
                                                              "relative_fails")}}
TOP_KEYS = {"format", "metrics", "drop_limit_points", "tie_aware", *SECTIONS}
# How a category's drop beyond the limit is told from noise (categories.rule; the docstring above).
CATEGORY_RULES = ("holm", "discount")
CATEGORY_ALPHA = 0.05  # the family-wise error the holm rule holds all of a run's category tests to


@dataclass(frozen=True)
class GatePolicy:
    metrics: tuple[str, ...] = (FOUNDING_METRIC,)
    drop_limit_points: float = 2.0
    gate_categories: bool = True
    min_category_queries: int = 1
    category_rule: str = "holm"
    discount_queries: int = 1
    require_ci_below_zero: bool = False
    # p95 more than doubled AND grew by more than 10 ms: a busy 2-core machine moved the BM25 p95 of
    # the shipped sets from 0.3-0.8 ms to 3-5.7 ms (docs/sets.md, "Gate policy"); a 10x slowdown of
    # any backend whose p95 is 1.2 ms or more shows.
    latency_relative_limit_percent: float | None = 100.0
    latency_min_increase_ms: float = 10.0
    latency_min_samples: int = 20
    latency_relative_fails: bool = False
    # Paired latency (the baseline's backend timed beside the run): a ratio whose CI lies wholly above 1.5 warns,
    # above 3 fails. On a busy 2-core machine (load average 2-4.6), from 0.1 to 100 ms, the lower end of a 10x
    # slowdown's CI stayed above 4.5 and a 2x's below 2 (python -m benchmarks.paired_latency; docs/performance.md,
    # "Paired latency", which also shows a busier run).
    latency_paired_warn_ratio: float = 1.5
    latency_paired_fails_ratio: float | None = 3.0
    judged_warn_drop_points: float = 10.0
    ratchet_improvement_points: float | None = None
    drift_limit_points: float | None = None  # None: drop_limit_points (what fails in one step warns over several)
    drift_baselines: int = DEFAULT_DRIFT_BASELINES
    drift_days: float | None = None  # a window of days instead of a count of baselines
    drift_fails: bool = False
    # A start-up, peak RSS or index size beyond +50 % AND its floor warns: a busy runner's start-up moves by
    # seconds, memory by tens of MiB; an index is deterministic, so its floor is small.
    resources_relative_limit_percent: float | None = 50.0
    resources_min_increase_seconds: float = 2.0
    resources_min_increase_mib: float = 64.0
    resources_min_increase_bytes: float = 1048576.0
    resources_relative_fails: bool = False
    tie_aware: bool = False  # `metrics` already name the tie-aware measures (`recall@10(ties)`)
    source: str = "default"  # the file it was read from, for reports

    @property
    def drop_limit(self) -> float:
        """The limit as a fraction (2.0 points = 0.020)."""
        return self.drop_limit_points / 100

    def to_dict(self) -> dict[str, object]:
        return {"format": POLICY_FORMAT, "source": self.source, "metrics": list(self.metrics),
                "drop_limit_points": self.drop_limit_points,
                **{name: {key: getattr(self, field) for key, field in keys.items()} for name, keys in SECTIONS.items()},
                **({"tie_aware": True} if self.tie_aware else {})}


def load_policy(path: Path | None, canonical_metric: Callable[[str], str]) -> GatePolicy:
    """The policy in `path` (None: gate-policy.json when present, else the defaults).

    `canonical_metric(name)` turns a metric name in any accepted spelling into the key reports
    carry, raising ValueError for an unknown one. Every defect is one UsageError line naming the
    file and the field (`gate-policy.json: latency.min_samples: ...`).
    """
    document = read_settings_file(path, DEFAULT_POLICY_FILE, UsageError, "gate policy")
    if document is None:
        return GatePolicy()
    where = str(path if path is not None else DEFAULT_POLICY_FILE)
    policy = StrictReader(document, where, UsageError)
    policy.optional("format", None).version(POLICY_FORMAT)
    policy.only(TOP_KEYS)
    sections = {name: policy.optional(name, {}).only(keys) for name, keys in SECTIONS.items()}
    defaults = GatePolicy()
    tie_aware = policy.optional("tie_aware", defaults.tie_aware).boolean()
    metrics = _metrics(policy.optional("metrics", list(defaults.metrics)), canonical_metric)
    fields: dict[str, Any] = {
        # each gated metric's tie-aware measure (`recall@10` -> `recall@10(ties)`); a family without one is refused
        "metrics": _keys(policy.get("tie_aware"), metrics, lambda name: canonical_metric(
            tie_aware_measure(parse_metric(name)).name), "metrics: ") if tie_aware else metrics,
        "tie_aware": tie_aware,
        "drop_limit_points": _points(policy.optional("drop_limit_points", defaults.drop_limit_points))}
    for name, keys in SECTIONS.items():
        for key, field in keys.items():
            reader = sections[name].optional(key, getattr(defaults, field))
            fields[field] = None if reader.value is None and field in _NULLABLE else _READERS.get(
                field, StrictReader.boolean)(reader)
    return GatePolicy(**fields, source=where)


def _points(reader: StrictReader) -> float:
    """A limit in points of a [0, 1] mean: below 100, or the gate it sets could never fail (or warn)."""
    return reader.number_in(0, MAX_POINTS, below=True, why=f"a mean moves at most {MAX_POINTS:g} points, so a "
                                                          f"limit of {MAX_POINTS:g} or more could never fail")


def _choice(reader: StrictReader, choices: tuple[str, ...]) -> str:
    """One of `choices`, named in the refusal from the tuple itself."""
    value = reader.text()
    if value not in choices:
        raise reader.fail(f"must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def _floor(reader: StrictReader, bound: float) -> float:
    """A resource floor below the value it could never cross."""
    return reader.number_in(0, bound, below=True, why=f"no run's figure grows by {bound:g} or more, so the comparison "
                                                      f"could never warn or fail")


# How each section's field is read (a field not named here is true or false); a field whose type admits None
# takes null for "off".
_READERS: dict[str, Callable[[StrictReader], object]] = {
    "min_category_queries": lambda reader: reader.integer_in(1, MAX_COUNT),
    "category_rule": lambda reader: _choice(reader, CATEGORY_RULES),
    "discount_queries": lambda reader: reader.integer_in(0, MAX_COUNT),
    "latency_relative_limit_percent": lambda reader: reader.number_in(0, MAX_PERCENT),
    "latency_min_increase_ms": lambda reader: reader.number_in(0, MAX_INCREASE_MS),
    "latency_min_samples": lambda reader: reader.integer_in(1, MAX_COUNT),
    "latency_paired_warn_ratio": lambda reader: reader.number_in(1, MAX_PERCENT),
    "latency_paired_fails_ratio": lambda reader: reader.number_in(1, MAX_PERCENT),
    "judged_warn_drop_points": _points, "ratchet_improvement_points": _points, "drift_limit_points": _points,
    "drift_baselines": lambda reader: reader.integer_in(2, MAX_COUNT,
                                                        why="a window of one baseline has nothing to compare"),
    "drift_days": lambda reader: reader.number_in(0, MAX_DAYS, above=True),
    "resources_relative_limit_percent": lambda reader: reader.number_in(0, MAX_PERCENT),
    **{f"resources_{key}": partial(_floor, bound=bound) for key, bound in RESOURCE_FLOOR_BOUNDS.items()}}
_NULLABLE = {field.name for field in dataclasses.fields(GatePolicy) if "None" in str(field.type)}


def _metrics(reader: StrictReader, canonical_metric: Callable[[str], str]) -> tuple[str, ...]:
    if not isinstance(reader.value, list) or not reader.value or not all(isinstance(m, str) for m in reader.value):
        raise reader.fail("must be a non-empty list of metric names")

    def quality(name: str) -> str:
        key = canonical_metric(name)
        if key == "judged@10":
            # coverage, not quality: a fall means unjudged documents, which warns (judged.warn_drop_points)
            raise reader.fail("judged@10 is judged coverage, not a quality measure; its fall warns through "
                              "judged.warn_drop_points")
        return key
    return _keys(reader, reader.strings(), quality)


def _keys(reader: StrictReader, names: Sequence[str], key: Callable[[str], str], field: str = "") -> tuple[str, ...]:
    """Each name's key, each once in order; a name `key` refuses (ValueError) is refused at `reader`."""
    keys = []
    for name in names:
        try:
            keys.append(key(name))
        except ValueError as exc:
            raise reader.fail(f"{field}{exc}") from None
    return tuple(dict.fromkeys(keys))
