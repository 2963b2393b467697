"""benchmarks/calibrate_ann.py: the degraded variant loses the queries whose expected loss reaches the target."""

from __future__ import annotations

import hashlib

import pytest

from benchmarks.calibrate_ann import degraded_queries
from harness.measured import Aggregates, Latency, QueryNumbers, ScopeNumbers, SetNumbers


def numbers(values: dict[str, float]) -> SetNumbers:
    rows = {qid: QueryNumbers(qid=qid, metrics={"recall@10": value}) for qid, value in values.items()}
    mean = sum(values.values()) / len(values)
    return SetNumbers(name="s", revision=1, corpus_hash="h", k=10, query_count=len(values),
                      aggregates=Aggregates(ScopeNumbers(len(values), {"recall@10": mean})), latency=Latency(),
                      queries=rows)


def test_queries_are_taken_in_sha256_order_until_the_expected_loss_reaches_the_target():
    qids = [f"q{i}" for i in range(10)]
    order = sorted(qids, key=lambda qid: hashlib.sha256(qid.encode()).hexdigest())
    # the first query in that order never finds anything (losing it costs nothing: skipped); the rest find
    # 1.0 in one run and 0.5 in the other, a mean of 0.75, worth 0.075 of the ten-query mean each
    values = [{qid: (0.0 if qid == order[0] else value) for qid in qids} for value in (1.0, 0.5)]
    chosen, expected = degraded_queries([numbers(run) for run in values], 0.2, "recall@10")
    assert chosen == frozenset(order[1:4])  # 0.075 x 3 = 0.225 is the first sum at or past 0.2
    assert expected == pytest.approx(0.225)
