"""What a verdict is decided on, read before anything is asked: the sets, the budgets, the policy, the baseline."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from harness.errors import BaselineError, UsageError
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
    replaced: Baseline | None = None  # --update-baseline: the file it replaces, whose backend the run must be
    named_options: tuple[str, ...] = ()  # the file options the command named, repeated by printed commands

    @property
    def identity_baseline(self) -> Baseline | None:
        """The baseline whose backends the run must be (gated against, or about to be replaced): a re-baseline
        checks identity as a gate does, so another backend is never recorded into a team's file unasked."""
        return self.baseline or self.replaced

    def entries(self, k: int | None = None) -> dict[str, SetNumbers]:
        """Set name -> the baseline's numbers comparable with it asked at `k` (None: each set's own k);
        BaselineError when one is not comparable, so a run is refused before its adapter starts."""
        if self.baseline is None:
            return {}
        entries = {s.name: self.baseline.comparable(s, k=k or s.k) for s in self.query_sets}
        for name, numbers in entries.items():
            self._check_gated_metrics(name, numbers)
        self._check_reach()
        return entries

    def _check_reach(self) -> None:
        """UsageError when a count limit of the policy, looser than its default, is beyond every set of the run:
        under it a gate could never fail. (A set below a default is under that statistical floor by design.)"""
        policy, defaults = self.policy, GatePolicy()
        categories = [(count, f"{s.name} category {name}") for s in self.query_sets
                      for name, count in Counter(q.category for q in s.queries if q.scored).items()]
        if policy.gate_categories and categories:
            most, which = max(categories)
            if policy.min_category_queries > max(most, defaults.min_category_queries):
                raise self._unreachable("categories.min_queries", policy.min_category_queries,
                                        f"more than the {most} scored queries of the largest category ({which})",
                                        "no category gate could ever fail", f"give 1 to {most}, or categories.gate false")
            if policy.category_rule == "discount" and policy.discount_queries >= most \
                    and policy.discount_queries > defaults.discount_queries:
                raise self._unreachable("categories.discount_queries", policy.discount_queries,
                                        f"the largest category ({which}) has {most} scored queries, all discounted",
                                        "no category gate could ever fail", f"give 0 to {most - 1}, or categories.gate false")
        timed = max((len(s.queries), s.name) for s in self.query_sets) if self.query_sets else (0, "")
        if policy.latency_relative_limit_percent is not None \
                and policy.latency_min_samples > max(timed[0], defaults.latency_min_samples):
            raise self._unreachable("latency.min_samples", policy.latency_min_samples,
                                    f"more than the {timed[0]} queries of the largest set run ({timed[1]})",
                                    "the latency comparison could never warn or fail", f"give 1 to {timed[0]}")

    def _unreachable(self, key: str, value: int, why: str, what: str, fix: str) -> UsageError:
        return UsageError(f"{self.policy.source}: {key}: {value}: {why}, so {what}; {fix}")

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
