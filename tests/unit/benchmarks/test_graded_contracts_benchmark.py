"""benchmarks/graded_contracts.py: its constructed run and its threshold, checked independently."""

from __future__ import annotations

import pytest

from benchmarks.graded_contracts import largest_fixes_still_failing, with_more_broken
from tests.unit.gating.test_graded_contracts import contract_run


def test_largest_number_of_fixes_that_still_fails_ten_more_breaks():
    stats = pytest.importorskip("scipy.stats")
    assert stats.binomtest(15, 20, 0.5).pvalue < 0.05 < stats.binomtest(16, 22, 0.5).pvalue  # c 5 fails, c 6 not
    assert largest_fixes_still_failing(10) == 5


def test_more_broken_breaks_held_contracts_of_gated_queries_only():
    run = contract_run(broken={0, 1}, xfail={2, 3})
    worse = with_more_broken(run, 3)
    broken = [q.qid for q in worse.queries if not q.contracts[0].passed]
    assert broken == ["q00", "q01", "q04", "q05", "q06"]  # xfail q02, q03 skipped; already broken left alone
