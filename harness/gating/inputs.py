"""What a verdict is decided on, read before anything is asked: the sets, the budgets, the policy, the baseline."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from harness.errors import BaselineError
from harness.gating.baseline import Baseline
from harness.gating.budgets import Budgets
from harness.gating.policy import GatePolicy
from harness.measured import SetNumbers
from harness.records import QuerySet
from harness.scoring.metrics import parse_metric


@dataclass(frozen=True)
class GateInputs:
    """The typed inputs of the one gating function (`gates.decide`), for a run and for `merge` alike.

    `baseline` None: measured, not gated (--no-gate, --update-baseline, a shard). `fingerprints`
    are the set files' hashes at load, to prove they did not change while the run asked.
    """

    query_sets: tuple[QuerySet, ...]
    budgets: Budgets = Budgets()
    policy: GatePolicy = GatePolicy()
    baseline: Baseline | None = None
    fingerprints: Mapping[str, str | None] = dataclasses.field(default_factory=dict)
    notices: tuple[str, ...] = ()  # `--set all`: each set found but not in the baseline, not run (harness/layout.py)

    def entries(self, k: int | None = None) -> dict[str, SetNumbers]:
        """Set name -> the baseline's numbers comparable with it asked at `k` (None: each set's own k);
        BaselineError when one is not comparable, so a run is refused before its adapter starts."""
        if self.baseline is None:
            return {}
        entries = {s.name: self.baseline.comparable(s, k=k or s.k) for s in self.query_sets}
        for name, numbers in entries.items():
            self._check_gated_metrics(name, numbers)
        return entries

    def _check_gated_metrics(self, name: str, numbers: SetNumbers) -> None:
        """Every measure the policy gates is in the baseline (a set without evidence has no evidence figures
        to gate: those gates say so and pass); else it is this configuration's error, not a regression."""
        overall = numbers.aggregates.overall
        for metric in self.policy.metrics:
            if overall.n and not parse_metric(metric).nullable and metric not in overall.means:
                raise BaselineError(
                    f"{self.baseline.path if self.baseline else 'baseline'}: sets.{name}.aggregates.overall.{metric}: "
                    f"missing; the gate policy ({self.policy.source}) gates {metric}: record the baseline with this "
                    f"policy (--update-baseline), or gate another metric")
