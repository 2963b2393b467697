"""harness/history/bisect.py on made-up measurements: the search, the three-valued step, repeats, skips,
the affected sets only, and "no change detectable" with the size a change would need."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from harness.history.bisect import (BAD, FAILED, FOUND, GOOD, NO_CHANGE, RANGE, UNDECIDED, SetMeasure, StepFailed,
                                    bisect)
from harness.scoring.detectability import multiplier

QUERIES = [f"q{i:03d}" for i in range(400)]
DROPPED = QUERIES[:20]  # the culprit's 20 of 400: 5 points


def _measure_of(state: dict[str, float]) -> SetMeasure:
    return SetMeasure(values=dict(state), units={q: q for q in state},
                      found={q: (f"d-{q}",) if v else () for q, v in state.items()}, queries={q: q for q in state})


class Repository:
    """Made-up commits c00..cNN: recall 1 everywhere but the last 80 queries, minus DROPPED from `culprit` on;
    `partial` commits drop only half of them; each commit moves NOISE queries either way (seeded)."""

    def __init__(self, commits: int, culprit: int | None, *, partial=(), failing=(), noisy=(), sets=("main",)):
        self.commits = [f"c{i:02d}" for i in range(commits)]
        self.culprit, self.partial, self.failing, self.noisy, self.sets = culprit, set(partial), set(failing), \
            set(noisy), sets
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def state(self, index: int, run: int) -> dict[str, float]:
        values = {q: 0.0 if i >= 320 else 1.0 for i, q in enumerate(QUERIES)}
        if index in self.partial:
            values.update({q: 0.0 for q in DROPPED[:10]})
        elif self.culprit is not None and index >= self.culprit:
            values.update({q: 0.0 for q in DROPPED})
        rng = random.Random(index * 1000 + (run if index in self.noisy else 0))
        for q in rng.sample(QUERIES[20:320], 2) + rng.sample(QUERIES[320:], 2):
            values[q] = 1.0 - values[q]
        if index in self.noisy and run == 0:  # a first run far off: half the culprit's queries lost too
            values.update({q: 0.0 for q in DROPPED[:10]})
        return values

    def __call__(self, commit: str, names):
        index = self.commits.index(commit)
        run = sum(1 for c, _ in self.calls if c == commit)
        self.calls.append((commit, tuple(names)))
        if index in self.failing:
            raise StepFailed(f"at {commit}: the adapter exited 1")
        other = {q: 1.0 if i % 3 else 0.0 for i, q in enumerate(QUERIES)}  # a set no commit moves
        return {name: _measure_of(self.state(index, run) if name == "main" else other) for name in names}


@pytest.mark.parametrize("culprit", [1, 9, 23, 62, 63])
def test_the_culprit_is_named_in_log2_plus_two_runs(culprit):
    repository = Repository(64, culprit)
    outcome = bisect(repository.commits, repository, ["main"], "recall@10")
    assert outcome.verdict == FOUND and outcome.first_bad == repository.commits[culprit]
    assert outcome.gate_runs == len(repository.calls) <= 2 + math.ceil(math.log2(63))
    [change] = outcome.sets
    assert change.affected and change.change == pytest.approx(-0.05, abs=0.006)
    assert {f.qid for f in outcome.flips if f.lost} >= set(DROPPED)  # what it flipped, against the last good one
    assert [s.verdict for s in outcome.steps[:2]] == [GOOD, BAD]
    assert all(s.verdict in (GOOD, BAD) for s in outcome.steps)


def test_only_the_affected_sets_are_asked_again():
    repository = Repository(16, 5, sets=("main", "other"))
    outcome = bisect(repository.commits, repository, ["main", "other"], "recall@10")
    assert [c.name for c in outcome.affected] == ["main"]
    assert [names for _, names in repository.calls[:2]] == [("main", "other")] * 2
    assert {names for _, names in repository.calls[2:]} == {("main",)}


def test_no_change_between_the_ends_says_so_with_the_detectable_size():
    repository = Repository(16, None)
    outcome = bisect(repository.commits, repository, ["main"], "recall@10")
    assert outcome.verdict == NO_CHANGE and outcome.first_bad is None and outcome.gate_runs == 2
    [change] = outcome.sets
    assert not change.affected
    # the ends differ by noise only (4 queries each): sigma of the per-query differences, m = 400 units
    good, bad = repository.state(0, 0), repository.state(15, 0)
    differences = [bad[q] - good[q] for q in QUERIES]
    # t[0.975; 399] + t[0.8; 399], computed with scipy.stats.t.ppf: 1.965927 + 0.842523
    assert multiplier(units=400) == pytest.approx(1.965927 + 0.842523, abs=1e-5)
    assert change.detectable == pytest.approx(multiplier(units=400) * statistics.stdev(differences) / math.sqrt(400))


def test_an_undecided_commit_a_deterministic_backend_repeats_is_skipped_and_the_answer_is_a_range():
    # c08 drops half the culprit's queries: halfway between GOOD and BAD, undecided; c09 is the culprit proper
    repository = Repository(16, 9, partial={8})
    outcome = bisect(repository.commits, repository, ["main"], "recall@10")
    [skipped] = [s for s in outcome.steps if s.verdict == UNDECIDED]
    assert skipped.commit == "c08" and skipped.runs == 2 and "more queries" in skipped.note
    assert outcome.verdict == RANGE and outcome.suspects == ("c08", "c09")


def test_a_noisy_commit_is_measured_again_until_its_runs_decide():
    repository = Repository(16, 5, noisy={4})  # c04 is good, but its first run looks half bad
    outcome = bisect(repository.commits, repository, ["main"], "recall@10")
    assert outcome.verdict == FOUND and outcome.first_bad == "c05"
    [step] = [s for s in outcome.steps if s.commit == "c04"]
    assert step.verdict == GOOD and step.runs >= 2
    repository = Repository(16, 5, noisy={4})
    limited = bisect(repository.commits, repository, ["main"], "recall@10", max_runs=1)
    assert [s.verdict for s in limited.steps if s.commit == "c04"] == [UNDECIDED]


def test_a_commit_that_fails_is_skipped_and_failing_ends_are_errors():
    repository = Repository(16, 9, failing={8})
    outcome = bisect(repository.commits, repository, ["main"], "recall@10")
    assert [s.verdict for s in outcome.steps if s.commit == "c08"] == [FAILED]
    assert outcome.verdict == RANGE and outcome.suspects == ("c08", "c09")
    with pytest.raises(StepFailed):
        bisect(*(lambda r: (r.commits, r))(Repository(16, 9, failing={0})), ["main"], "recall@10")
