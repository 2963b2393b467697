"""harness/history/trend.py and console.py: a series cut where its set changed version, and how it reads."""

from __future__ import annotations

import dataclasses

from harness.history.console import render_trends, sparkline
from harness.history.store import OVERALL, RUN, HistoryStore, SeriesKey
from harness.history.trend import trend
from tests.unit.history.test_store import _report


def test_no_change_is_looked_for_across_a_new_set_revision(tmp_path):
    """Ten runs at revision 1 finding every query, ten at revision 2 losing one: the move is the gold's,
    not the backend's, so each stretch is analysed alone and no change is reported."""
    from harness.history.entries import entry_from_report
    from tests.reports import BASE_ANSWERS
    with HistoryStore.for_append(tmp_path / "h.sqlite") as store:
        for day in range(1, 21):
            report = _report(f"2026-12-{day:02d}T00:00:00+00:00",
                             BASE_ANSWERS if day <= 10 else {**BASE_ANSWERS, "tiny-01": (("doc-09",), 1.0)})
            if day > 10:
                result = dataclasses.replace(report.sets[0], revision=2)
                report = dataclasses.replace(report, sets=(result,))
            store.append(entry_from_report(report))
        analysed = trend(store, SeriesKey(RUN, "bm25", "tiny", OVERALL, "recall@10"))
    assert [len(s.points) for s in analysed.stretches] == [10, 10]
    assert all(not s.analysis.changes for s in analysed.stretches)
    text = render_trends([analysed])
    assert "  set version changed at 000000000000: not compared across (revision 2, " in text
    assert text.splitlines()[0] == "bm25: tiny recall@10: 20 runs, 2026-12-01 .. 2026-12-20"


def test_a_sparkline_spans_the_blocks_from_lowest_to_highest():
    # eight blocks: a value's block is floor(8 * (value - low) / (high - low)), the highest in the eighth
    assert sparkline([0.0, 0.5, 0.99, 1.0]) == "\u2581\u2585\u2588\u2588"
    assert sparkline([0.5, 0.5]) == "\u2584\u2584"  # all alike: the middle
