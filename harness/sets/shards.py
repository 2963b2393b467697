"""Shards of a query set (`--shard I/N`): which queries shard I of N asks, stable across machines and runs.

A query goes to shard `sha256(unit) mod N` (1-based: shard I holds the units whose hash mod N is
I - 1), where the unit is the query's `group` when it has one, else its qid (the resampling unit,
harness.records): paraphrases of one question stay in one shard, so a shard never splits what
the statistics treat as one observation. The assignment depends only on the unit's text and N:
never on the order of the set, the machine, Python's hash seed or the other queries, so each job
of a CI matrix computes its own part without talking to the others, and the N parts are disjoint
and cover the set.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from harness.errors import UsageError
from harness.records import QuerySet

MAX_SHARDS = 10_000  # more jobs than any CI matrix runs; bounds what a typo can ask for


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def to_dict(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}


def parse_shard(text: str) -> Shard:
    """`"I/N"` (1 <= I <= N <= 10,000) as a Shard; UsageError naming `--shard` otherwise."""
    index_text, slash, count_text = str(text).strip().partition("/")
    if not slash or not index_text.isdigit() or not count_text.isdigit():
        raise UsageError(f"--shard: expected I/N (e.g. 2/4: the second of four shards), got {text!r}")
    index, count = int(index_text), int(count_text)
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"--shard: N must be 1..{MAX_SHARDS}, got {count}")
    if not 1 <= index <= count:
        raise UsageError(f"--shard: I must be 1..{count} (shards are numbered from 1), got {index}")
    return Shard(index, count)


def shard_of(unit: str, count: int) -> int:
    """The 1-based shard of `count` that asks the queries of resampling unit `unit` (group, else qid)."""
    digest = hashlib.sha256(unit.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def shard_positions(query_set: QuerySet, shard: Shard) -> tuple[int, ...]:
    """0-based positions in the set of the queries the shard asks, in set order."""
    return tuple(position for position, query in enumerate(query_set.queries)
                 if shard_of(query.resampling_unit, shard.count) == shard.index)


def select_shard(query_set: QuerySet, index: int, count: int) -> QuerySet:
    """The set with only the queries of shard `index` of `count` (set order kept; corpus unchanged).

    A shard may hold no query of a small set; it still runs, and merges, as an empty part.
    """
    keep = set(shard_positions(query_set, Shard(index, count)))
    return dataclasses.replace(query_set, queries=tuple(q for p, q in enumerate(query_set.queries) if p in keep))
