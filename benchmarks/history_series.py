"""Synthetic run histories built from real per-query rows, for the change-point benchmark and its tests.

The rows are BM25's per-query recall@10 on the shipped code-agent set (634 queries), as the shipped
baseline recorded them (`baselines/companions/current.json`), with each query's count of relevant
documents from the set's judgments. A history is a sequence of runs at successive commits:

- a commit may degrade the backend: relevant ids dropped from the top 10 of randomly chosen queries
  (one id at a time, from queries that found one) until the set's mean has fallen by the asked
  number of points; the drop stays for every later commit;
- every run adds run-to-run noise on top of its commit's state, as a nondeterministic backend (an
  approximate index rebuilt, ties broken by thread timing) shows: each query, with probability
  `noise`, finds one relevant id more or one fewer than its commit's state (when it can). Runs are
  independent draws, so an A/A history is stationary.

Each history knows its truth (where the steps are), so the benchmark can say whether a change was
flagged, how big, how soon and with which commit range.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.shipped import shipped_baselines_dir, shipped_sets_dir

SET_NAME = "code-agent"
BASELINE = Path("companions") / "current.json"
NOISE = 0.03  # the fraction of queries a run moves by one relevant id: about 0.4 points of run-to-run sigma


@dataclass(frozen=True, slots=True)
class QueryRow:
    qid: str
    relevant: int  # judged relevant (grade >= 1)
    found: int     # of those, in BM25's top 10


def real_rows() -> list[QueryRow]:
    """BM25's per-query rows of the shipped code-agent set: how many relevant ids each query has and found."""
    judged = {}
    with (shipped_sets_dir() / SET_NAME / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            query = json.loads(line)
            judged[query["qid"]] = sum(1 for grade in query["relevant"].values() if grade >= 1)
    baseline = json.loads((shipped_baselines_dir() / BASELINE).read_text(encoding="utf-8"))
    rows = []
    for qid, row in baseline["sets"][SET_NAME]["queries"].items():
        if row.get("scored", True) and judged.get(qid):
            rows.append(QueryRow(qid, judged[qid], len(row["found"])))
    return rows


@dataclass
class History:
    """Runs over commits; `runs` holds (commit, {qid: recall@10}) in order."""

    rows: list[QueryRow]
    seed: int
    noise: float = NOISE
    found: dict[str, int] = field(default_factory=dict)
    runs: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)  # indexes of the runs whose commit degraded the backend

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.found = {row.qid: row.found for row in self.rows}
        self.relevant = {row.qid: row.relevant for row in self.rows}

    def mean(self, found: Mapping[str, int]) -> float:
        return sum(found[q] / self.relevant[q] for q in found) / len(found)

    def degrade(self, points: float) -> None:
        """The next commit drops relevant ids from random queries until the mean fell by `points` (as near as
        whole ids allow)."""
        _drop(self.found, self.relevant, points, self.rng)
        self.steps.append(len(self.runs))

    def run(self, *, offset: float = 0.0) -> None:
        """One run at a new commit: the state with this run's noise; `offset` points moved by hand (a blip)."""
        values = {}
        for qid, count in self.found.items():
            if self.rng.random() < self.noise:
                count = max(0, min(self.relevant[qid], count + self.rng.choice((-1, 1))))
            values[qid] = count / self.relevant[qid]
        if offset:
            values = self._shifted(values, offset)
        self.runs.append((f"c{len(self.runs):03d}", values))

    def runs_more(self, count: int) -> History:
        """`count` more runs, each at a new commit that changes nothing; the history itself, to chain."""
        for _ in range(count):
            self.run()
        return self

    def _shifted(self, values: dict[str, float], points: float) -> dict[str, float]:
        """This run only: relevant ids dropped from random queries until its mean moved by `points` (< 0)."""
        found = {qid: round(value * self.relevant[qid]) for qid, value in values.items()}
        _drop(found, self.relevant, -points, self.rng)
        return {qid: count / self.relevant[qid] for qid, count in found.items()}

    @property
    def values(self) -> list[float]:
        """Each run's mean recall@10."""
        return [sum(values.values()) / len(values) for _, values in self.runs]

    @property
    def per_query(self) -> list[dict[str, float]]:
        return [values for _, values in self.runs]

    @property
    def commits(self) -> list[str]:
        return [commit for commit, _ in self.runs]


def _drop(found: dict[str, int], relevant: Mapping[str, int], points: float, rng: random.Random) -> None:
    """Drop found relevant ids of random queries, one at a time, while that brings the mean nearer to
    `points` lower than it was (in place)."""
    left = points / 100 * len(found)  # in units of one query's recall
    candidates = [qid for qid, count in found.items() if count > 0]
    while candidates:
        qid = rng.choice(candidates)
        worth = 1 / relevant[qid]
        if abs(left - worth) >= abs(left):
            break
        found[qid] -= 1
        left -= worth
        if found[qid] == 0:
            candidates.remove(qid)


def staircase(seed: int, *, before: int = 20, steps: int = 5, step_points: float = 0.6, runs_per_step: int = 1,
              after: int = 5, rows: list[QueryRow] | None = None) -> History:
    """`before` runs, then `steps` drops of `step_points`, each followed by `runs_per_step` runs (the
    last step's runs count in `after`), then up to `after` runs at the final level."""
    history = History(rows or real_rows(), seed).runs_more(before)
    for step in range(steps):
        history.degrade(step_points)
        history.runs_more(after if step == steps - 1 else runs_per_step)
    return history


def aa(seed: int, runs: int = 60, rows: list[QueryRow] | None = None) -> History:
    return History(rows or real_rows(), seed).runs_more(runs)


def blip(seed: int, *, before: int = 30, after: int = 10, points: float = 4.0,
         rows: list[QueryRow] | None = None) -> History:
    """`before` runs, one run `points` lower (one run only: a flaky run, nothing committed), then `after`."""
    history = History(rows or real_rows(), seed).runs_more(before)
    history.run(offset=-points)
    history.steps.append(before)
    return history.runs_more(after)


def step(seed: int, *, before: int = 20, points: float = 3.0, after: int = 10,
         rows: list[QueryRow] | None = None) -> History:
    """One commit dropping `points` at run `before`."""
    history = History(rows or real_rows(), seed).runs_more(before)
    history.degrade(points)
    return history.runs_more(after)


def store_entries(history: History, *, backend: str = "bm25", start: str = "2026-01-01") -> list:
    """The history's runs as the store's entries (one a day from `start`, each at its commit), so a
    store can be filled with them: `for entry in store_entries(h): store.append(entry)`."""
    from datetime import date, timedelta

    from harness.history.store import OVERALL, RUN, Entry, SetRecord, StoredNumbers, source_key

    first = date.fromisoformat(start)
    entries = []
    for index, (commit, values) in enumerate(history.runs):
        mean = sum(values.values()) / len(values)
        numbers = StoredNumbers({(OVERALL, "recall@10"): (mean, len(values))}, {"recall@10": dict(values)})
        record = SetRecord(SET_NAME, 1, "corpus", None, 10, len(values), numbers)
        time = f"{first + timedelta(days=index)}T00:00:00+00:00"
        entries.append(Entry(source_key(RUN, history.seed, index), RUN, time, commit.ljust(40, "0"), backend,
                             (record,)))
    return entries
