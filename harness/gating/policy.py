"""The gate policy: which metrics are gated, by how much they may drop, and when a drop only warns.

Read from `gate-policy.json` beside budgets.json (or `--policy FILE`); every field is optional
and the defaults reproduce the founding gates exactly (docs/sets.md, "Gate policy"):

    {"format": 1,
     "metrics": ["recall@10"],            # any metric the harness computes, any spelling
     "drop_limit_points": 2.0,            # a drop of more than this many points fails
     "categories": {"gate": true, "min_queries": 1},
     "significance": {"require_ci_below_zero": false},
     "latency": {"relative_p95_limit_percent": null, "min_samples": 20},
     "judged": {"warn_drop_points": 10.0}}

With `categories.min_queries` N, a category with fewer than N scored queries is reported but
not gated alone (its drop warns). With `significance.require_ci_below_zero`, a drop beyond the
limit fails only when its paired 95% CI lies wholly below zero, and otherwise warns. A
relative latency limit fails when p95 exceeds the baseline's p95 by more than that percentage,
when both runs have at least `min_samples` latencies (fewer: not gated, said so). `judged`
warns when judged@10 falls by more than that many points against the baseline.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError
from harness.strict_json import read_json_file

FOUNDING_METRIC = "recall@10"  # the founding gate's metric; every baseline scope with scored queries carries it
POLICY_FORMAT = 1
DEFAULT_POLICY_FILE = Path("gate-policy.json")
_TOP_KEYS = {"format", "metrics", "drop_limit_points", "categories", "significance", "latency", "judged"}


@dataclass(frozen=True)
class GatePolicy:
    metrics: tuple[str, ...] = (FOUNDING_METRIC,)
    drop_limit_points: float = 2.0
    gate_categories: bool = True
    min_category_queries: int = 1
    require_ci_below_zero: bool = False
    latency_relative_limit_percent: float | None = None
    latency_min_samples: int = 20
    judged_warn_drop_points: float = 10.0
    source: str = "default"  # the file it was read from, for reports

    @property
    def drop_limit(self) -> float:
        """The limit as a fraction (2.0 points = 0.020)."""
        return self.drop_limit_points / 100

    def to_dict(self) -> dict[str, object]:
        return {"format": POLICY_FORMAT, "source": self.source, "metrics": list(self.metrics),
                "drop_limit_points": self.drop_limit_points,
                "categories": {"gate": self.gate_categories, "min_queries": self.min_category_queries},
                "significance": {"require_ci_below_zero": self.require_ci_below_zero},
                "latency": {"relative_p95_limit_percent": self.latency_relative_limit_percent,
                            "min_samples": self.latency_min_samples},
                "judged": {"warn_drop_points": self.judged_warn_drop_points}}


def load_policy(path: Path | None, canonical_metric: Callable[[str], str]) -> GatePolicy:
    """The policy in `path` (None: gate-policy.json when present, else the defaults).

    `canonical_metric(name)` turns a metric name in any accepted spelling into the key reports
    carry, raising ValueError for an unknown one. Every defect is one UsageError line.
    """
    required = path is not None
    path = path if path is not None else DEFAULT_POLICY_FILE
    if not path.exists():
        if required:
            raise UsageError(f"{path}: gate policy file not found")
        return GatePolicy()
    document = read_json_file(path, UsageError, what="gate policy")
    where = str(path)
    if not isinstance(document, dict):
        raise UsageError(f"{where}: must be a JSON object")
    if document.get("format") != POLICY_FORMAT:
        raise UsageError(f"{where}: format: expected {POLICY_FORMAT}, got {document.get('format')!r}")
    unknown = sorted(set(document) - _TOP_KEYS)
    if unknown:
        raise UsageError(f"{where}: {unknown[0]}: unknown field (known: {', '.join(sorted(_TOP_KEYS))})")
    defaults = GatePolicy()
    metrics = document.get("metrics", list(defaults.metrics))
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise UsageError(f"{where}: metrics: must be a non-empty list of metric names")
    canonical = []
    for name in metrics:
        try:
            canonical.append(canonical_metric(name))
        except ValueError as exc:
            raise UsageError(f"{where}: metrics: {exc}") from None
    categories = _section(document, "categories", where)
    significance = _section(document, "significance", where)
    latency = _section(document, "latency", where)
    judged = _section(document, "judged", where)
    relative = latency.get("relative_p95_limit_percent")
    return GatePolicy(
        metrics=tuple(dict.fromkeys(canonical)),
        drop_limit_points=_number(document, "drop_limit_points", defaults.drop_limit_points, where, low=0.0),
        gate_categories=_boolean(categories, "gate", defaults.gate_categories, f"{where}: categories"),
        min_category_queries=_integer(categories, "min_queries", defaults.min_category_queries, f"{where}: categories"),
        require_ci_below_zero=_boolean(significance, "require_ci_below_zero", False, f"{where}: significance"),
        latency_relative_limit_percent=None if relative is None else _number(
            latency, "relative_p95_limit_percent", 0.0, f"{where}: latency", low=0.0),
        latency_min_samples=_integer(latency, "min_samples", defaults.latency_min_samples, f"{where}: latency"),
        judged_warn_drop_points=_number(judged, "warn_drop_points", defaults.judged_warn_drop_points,
                                        f"{where}: judged", low=0.0),
        source=where)


def _section(document: dict, key: str, where: str) -> dict:
    value = document.get(key, {})
    if not isinstance(value, dict):
        raise UsageError(f"{where}: {key}: must be an object")
    return value


def _number(section: dict, key: str, default: float, where: str, *, low: float) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) > 1e6 \
            or not math.isfinite(value) or value < low:
        raise UsageError(f"{where}: {key}: must be a number from {low:g} to 1e6, got {value!r}")
    return float(value)


def _integer(section: dict, key: str, default: int, where: str) -> int:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
        raise UsageError(f"{where}: {key}: must be an integer from 1 to 1000000, got {value!r}")
    return value


def _boolean(section: dict, key: str, default: bool, where: str) -> bool:
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise UsageError(f"{where}: {key}: must be true or false, got {value!r}")
    return value
