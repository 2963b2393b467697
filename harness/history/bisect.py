"""Bisect a git range for the commit that moved a gated figure: one worktree per step, a paired test per step.

`bisect(commits, measure, ...)` searches the first-parent commits from GOOD (the first) to BAD
(the last). GOOD and BAD are measured on every set asked; the sets whose figure moved between
them (paired randomization test, p < ALPHA, per query) are the affected ones, and only those are
measured again. With none affected the answer is "no change detectable", with the smallest change
each set could have shown (harness/scoring/detectability.py).

Each commit between is judged three-valued against both ends, per query: for an affected set,
the paired 95% bootstrap CI over queries of (commit - halfway), where halfway is each query's
mean of its GOOD and BAD values. The commit is bad for that set when the CI lies wholly on BAD's
side of 0, good when wholly on GOOD's side, undecided otherwise. Pairing with both ends is what
makes the test sharp: the queries the culprit moved move in every bad commit alike, so only the
noise is left in the differences. A commit is bad when any affected set says bad, good when every
one says good. An undecided commit is measured again (up to `max_runs` runs, its per-query values
averaged: a nondeterministic backend's noise shrinks), unless a second run gave the very same
values (a deterministic backend: more runs cannot help, more queries can); still undecided, it is
skipped, as `git bisect skip` does, and the answer may be a range. The first bad commit is named
with the queries it flipped against the last good one.

The search takes its measurements from a function, so it is tested on made-up ones; the real one,
a worktree per commit, is harness/history/worktree.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.errors import EXIT_BACKEND, HarnessError, UsageError
from harness.scoring.detectability import detectability
from harness.scoring.flips import Flip, find_flips
from harness.scoring.stats import bootstrap_ci, group_differences, paired_test

ALPHA = 0.05
RESAMPLES = 2000  # per step: a 95% CI's bounds from 2,000 draws move by well under the D/2 margins at stake
MAX_RUNS = 3      # measurements of one undecided commit at most
GOOD, BAD, UNDECIDED, FAILED = "good", "bad", "undecided", "failed"
FOUND, NO_CHANGE, RANGE = "found", "no change detectable", "undecided range"


class StepFailed(HarnessError):
    """The backend failed at a commit (it would not build, start or answer): that commit is skipped."""

    exit_code = EXIT_BACKEND


@dataclass(frozen=True)
class SetMeasure:
    """One set at one commit: each scored query's value of the metric, its resampling unit, the relevant
    ids it found (for flips) and its text."""

    values: Mapping[str, float]
    units: Mapping[str, str]
    found: Mapping[str, tuple[str, ...]]
    queries: Mapping[str, str]


Measure = Callable[[str, Sequence[str]], Mapping[str, SetMeasure]]  # commit, set names -> per set


@dataclass(frozen=True)
class SetChange:
    """A set's GOOD -> BAD change: mean difference, paired CI and p-value, and what it could detect."""

    name: str
    change: float
    ci: tuple[float, float]
    p_value: float
    detectable: float | None
    queries: int

    @property
    def affected(self) -> bool:
        return self.p_value < ALPHA and not self.ci[0] <= 0.0 <= self.ci[1]


@dataclass(frozen=True)
class Step:
    commit: str
    verdict: str
    change: float | None = None            # commit - GOOD, over the affected sets' queries
    ci: tuple[float, float] | None = None
    runs: int = 1
    note: str = ""


@dataclass(frozen=True)
class Outcome:
    verdict: str                      # FOUND, NO_CHANGE or RANGE
    metric: str
    good: str
    bad: str
    sets: tuple[SetChange, ...]
    steps: tuple[Step, ...] = ()
    first_bad: str | None = None
    suspects: tuple[str, ...] = ()    # RANGE: the commits the first bad one is among
    flips: tuple[Flip, ...] = ()
    gate_runs: int = 0

    @property
    def affected(self) -> tuple[SetChange, ...]:
        return tuple(s for s in self.sets if s.affected)

    def to_dict(self) -> dict[str, object]:
        return {"verdict": self.verdict, "metric": self.metric, "good": self.good, "bad": self.bad,
                "first_bad": self.first_bad, "suspects": list(self.suspects), "gate_runs": self.gate_runs,
                "sets": [{**dataclasses.asdict(s), "affected": s.affected} for s in self.sets],
                "steps": [dataclasses.asdict(s) for s in self.steps],  # tuples written as JSON lists
                "flips": [{"set": f.set_name, **f.to_dict()} for f in self.flips]}


@dataclass
class _Search:
    """The state of one bisection: every measurement so far, per commit index."""

    commits: Sequence[str]
    measure: Measure
    on_step: Callable[[Step], None] | None
    measured: dict[int, list[Mapping[str, SetMeasure]]] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    gate_runs: int = 0

    def tell(self, step: Step) -> None:
        self.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)

    def run(self, index: int, set_names: Sequence[str]) -> Mapping[str, SetMeasure]:
        self.gate_runs += 1
        found = self.measure(self.commits[index], set_names)
        self.measured.setdefault(index, []).append(found)
        return found

    def mean(self, index: int, name: str) -> SetMeasure:
        """The set's per-query values averaged over every run of the commit."""
        runs = [found[name] for found in self.measured[index]]
        values = {qid: sum(run.values[qid] for run in runs) / len(runs) for qid in runs[0].values}
        return dataclasses.replace(runs[0], values=values)


def bisect(commits: Sequence[str], measure: Measure, set_names: Sequence[str], metric: str, *,
           max_runs: int = MAX_RUNS, seed: int = 0, on_step: Callable[[Step], None] | None = None) -> Outcome:
    """The first bad commit of `commits` (GOOD first, BAD last, at least two), measured with `measure`.

    `on_step` is called with each step as it is decided (GOOD and BAD first). A StepFailed at GOOD or
    BAD is raised (nothing to compare with); at a commit between, that commit is skipped.
    """
    if len(commits) < 2:
        raise UsageError("bisect: GOOD and BAD are the same commit")
    search = _Search(commits, measure, on_step)
    last = len(commits) - 1
    good_runs, bad_runs = search.run(0, set_names), search.run(last, set_names)
    changes = tuple(_set_change(name, good_runs[name], bad_runs[name], seed) for name in set_names)
    search.tell(Step(commits[0], GOOD, note="GOOD"))
    search.tell(Step(commits[last], BAD, note="BAD"))
    affected = [change for change in changes if change.affected]
    base = Outcome(NO_CHANGE, metric, commits[0], commits[last], changes, gate_runs=search.gate_runs)
    if not affected:
        return dataclasses.replace(base, steps=tuple(search.steps))
    low, high, skipped = 0, last, set()
    while True:
        inside = [i for i in range(low + 1, high) if i not in skipped]
        if not inside:
            break
        middle = min(inside, key=lambda i: (abs(i - (low + high) / 2), i))
        step = _judge(search, middle, affected, max_runs, seed)
        search.tell(step)
        if step.verdict == GOOD:
            low = middle
        elif step.verdict == BAD:
            high = middle
        else:
            skipped.add(middle)
    steps = tuple(search.steps)
    if any(low < i < high for i in skipped):
        return dataclasses.replace(base, verdict=RANGE, steps=steps, suspects=tuple(commits[low + 1:high + 1]),
                                   gate_runs=search.gate_runs)
    flips = tuple(sorted((flip for change in affected for flip in find_flips(
        change.name, search.mean(low, change.name).found, search.mean(high, change.name).found,
        search.mean(high, change.name).queries)), key=lambda flip: not flip.lost))  # what it lost first
    return dataclasses.replace(base, verdict=FOUND, steps=steps, first_bad=commits[high], flips=flips,
                               gate_runs=search.gate_runs)


def _set_change(name: str, good: SetMeasure, bad: SetMeasure, seed: int) -> SetChange:
    test = paired_test(good.values, bad.values, good.units, resamples=RESAMPLES, seed=seed)
    seen = detectability(bad.values, bad.units, good.values)
    return SetChange(name, test.mean_difference, (test.ci_low, test.ci_high), test.p_value, seen.detectable,
                     test.n_queries)


def _judge(search: _Search, index: int, affected: Sequence[SetChange], max_runs: int, seed: int) -> Step:
    """Measure the commit (again while undecided and it helps) and judge it against GOOD."""
    names = [change.name for change in affected]
    commit = search.commits[index]
    try:
        search.run(index, names)
    except StepFailed as failure:
        return Step(commit, FAILED, note=f"skipped: {failure}")
    while True:
        verdict, change, ci = _verdict(search, index, affected, seed)
        runs = len(search.measured[index])
        if verdict != UNDECIDED or runs >= max_runs:
            break
        previous = search.measured[index][-1]
        try:
            again = search.run(index, names)
        except StepFailed as failure:
            return Step(commit, FAILED, change, ci, runs, note=f"skipped: {failure}")
        if all(again[name].values == previous[name].values for name in names):  # deterministic: runs cannot help
            verdict, change, ci = _verdict(search, index, affected, seed)
            return Step(commit, UNDECIDED, change, ci, runs + 1,
                        note="the same values again: more queries, not more runs, could decide it")
    return Step(commit, verdict, change, ci, runs)


def _verdict(search: _Search, index: int, affected: Sequence[SetChange], seed: int
             ) -> tuple[str, float, tuple[float, float]]:
    """good, bad or undecided (module docstring), with the change against GOOD and its CI over every
    affected set's queries."""
    last = len(search.commits) - 1
    verdicts = []
    moves: dict[str, list[tuple[float, int]]] = {}  # set -> its clusters' moves against GOOD
    for moved in affected:
        good, bad, now = search.mean(0, moved.name), search.mean(last, moved.name), search.mean(index, moved.name)
        halfway = {qid: (value + bad.values[qid]) / 2 for qid, value in good.values.items() if qid in bad.values}
        low, high = bootstrap_ci(group_differences(halfway, now.values, good.units), resamples=RESAMPLES, seed=seed)
        towards_bad = (high < 0) if moved.change < 0 else (low > 0)
        towards_good = (low > 0) if moved.change < 0 else (high < 0)
        verdicts.append(BAD if towards_bad else GOOD if towards_good else UNDECIDED)
        moves[moved.name] = group_differences(good.values, now.values, good.units)
    verdict = BAD if BAD in verdicts else GOOD if all(v == GOOD for v in verdicts) else UNDECIDED
    clusters = [cluster for name in sorted(moves) for cluster in moves[name]]  # pooled, sets by name
    change = sum(total for total, _ in clusters) / max(1, sum(count for _, count in clusters))
    return verdict, change, bootstrap_ci(clusters, resamples=RESAMPLES, seed=seed)
