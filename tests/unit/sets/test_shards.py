"""harness.sets.shards: the --shard I/N assignment is stable, disjoint, covering, and keeps groups together."""

import dataclasses
import os
import subprocess
import sys

import pytest

from harness.errors import UsageError
from harness.records import Query
from harness.sets.loader import load_set
from harness.sets.shards import Shard, parse_shard, select_shard, shard_of, shard_positions
from tests.conftest import TINY_SET

TINY = load_set(TINY_SET)
# From `printf tiny-01 | sha256sum` (first 16 hex digits) mod 3, plus 1; likewise for the others.
TINY_OF_3 = {"tiny-01": 3, "tiny-02": 1, "tiny-03": 2, "tiny-04": 3, "tiny-05": 3, "tiny-06": 1, "tiny-07": 3}


def test_assignment_is_sha256_of_the_qid_mod_n_numbered_from_one():
    assert {q.qid: shard_of(q.resampling_unit, 3) for q in TINY.queries} == TINY_OF_3
    assert shard_positions(TINY, Shard(3, 3)) == (0, 3, 4, 6)


def test_assignment_does_not_depend_on_the_hash_seed():
    code = ("from harness.sets.shards import shard_of; "
            "print([shard_of(f'q{i}', 7) for i in range(50)])")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outputs) == 1


def grouped_set(n=60):
    queries = tuple(Query(qid=f"q{i:03d}", query=f"text {i}", relevant={}, category="c", split="s", source="x",
                          group=f"g{i // 4}" if i % 2 else None) for i in range(n))
    return dataclasses.replace(TINY, queries=queries)


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_shards_are_disjoint_cover_the_set_and_keep_its_order(count):
    query_set = grouped_set()
    parts = [select_shard(query_set, index, count) for index in range(1, count + 1)]
    qids = [q.qid for part in parts for q in part.queries]
    assert sorted(qids) == [q.qid for q in query_set.queries]
    for part in parts:
        order = [q.qid for q in part.queries]
        assert order == sorted(order)  # set order kept
        assert part.documents == query_set.documents


def test_queries_of_one_group_land_in_one_shard():
    query_set = grouped_set()
    where = {}
    for index in (1, 2, 3, 4, 5):
        for query in select_shard(query_set, index, 5).queries:
            if query.group:
                where.setdefault(query.group, set()).add(index)
    assert where and all(len(shards) == 1 for shards in where.values())


@pytest.mark.parametrize("text, message", [
    ("2", "expected I/N"), ("a/4", "expected I/N"), ("0/4", "I must be 1..4"), ("5/4", "I must be 1..4"),
    ("1/0", "N must be 1..10000"), ("-1/4", "expected I/N"),
])
def test_bad_shard_options_are_one_line_usage_errors(text, message):
    with pytest.raises(UsageError, match=message) as caught:
        parse_shard(text)
    assert str(caught.value).startswith("--shard: ") and "\n" not in str(caught.value)


def test_parse_shard():
    assert parse_shard(" 2/4 ") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"
