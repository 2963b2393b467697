"""harness/history/store.py and entries.py: what an append keeps, once; concurrent appends; a store that
is not one refused in one line and left byte for byte as it was; baselines imported from git."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.gating.baseline import Baseline, baseline_text, build_baseline
from harness.history.entries import entries_from_baseline, entry_from_report, git_baseline_versions, report_problem
from harness.history.store import (BASELINE, LATENCY, OVERALL, RUN, HistoryError, HistoryStore, SeriesKey,
                                   stored_numbers, utc_time)
from tests.conftest import REPO_ROOT
from tests.reports import BASE_ANSWERS, gated_report, provenance, tiny_result


def _report(started: str = "2026-12-01T00:00:00+00:00", answers=None):
    report = gated_report(answers)
    return dataclasses.replace(report, provenance=dataclasses.replace(report.provenance, started=started))


def test_an_appended_report_keeps_its_figures_per_query_values_latency_and_identity(tmp_path):
    report = _report()
    result = report.sets[0]
    with HistoryStore.for_append(tmp_path / "h.sqlite") as store:
        assert store.append(entry_from_report(report)) is True
        key = SeriesKey(RUN, "bm25", "tiny", OVERALL, "recall@10")
        [point] = store.series(key)
        assert point.value == result.aggregates.overall.means["recall@10"]
        assert point.git_commit == "0" * 40 and point.time == "2026-12-01T00:00:00+00:00"
        assert point.identity == "'bm25' 1 (`python -m adapters.bm25`)"
        [p95] = store.series(dataclasses.replace(key, metric="p95"))
        assert p95.value == result.latency.p95
        kept = store.per_query([point.run], "tiny", "recall@10")[point.run]
        assert kept == {q.qid: q.metrics["recall@10"] for q in result.queries if q.scored}
        latencies = store.per_query([point.run], "tiny", LATENCY)[point.run]
        assert latencies == {q.qid: q.latency_ms for q in result.queries if q.scored}
        categories = {k.scope for k in store.series_keys(RUN)}
        assert {f"category:{q.category}" for q in result.queries if q.scored} <= categories


def test_appending_the_same_run_twice_adds_it_once(tmp_path):
    with HistoryStore.for_append(tmp_path / "h.sqlite") as store:
        assert store.append(entry_from_report(_report())) is True
        assert store.append(entry_from_report(_report())) is False
        assert store.append(entry_from_report(_report("2026-12-02T00:00:00+00:00"))) is True
        assert store.run_count() == {RUN: 2}


def test_series_are_in_time_order_whatever_the_append_order(tmp_path):
    with HistoryStore.for_append(tmp_path / "h.sqlite") as store:
        for day in (3, 1, 2):
            store.append(entry_from_report(_report(f"2026-12-0{day}T00:00:00+01:00")))
        times = [p.time for p in store.series(SeriesKey(RUN, "bm25", "tiny", OVERALL, "recall@10"))]
    assert times == ["2026-11-30T23:00:00+00:00", "2026-12-01T23:00:00+00:00", "2026-12-02T23:00:00+00:00"]


def test_incomplete_and_shard_reports_are_not_runs_of_the_history():
    report = _report()
    assert report_problem(report) is None
    assert "incomplete" in report_problem(dataclasses.replace(report, complete=False))
    sharded = dataclasses.replace(report, provenance=dataclasses.replace(
        report.provenance, extra={**report.provenance.extra, "shard": {"index": 1, "count": 2}}))
    assert "shard" in report_problem(sharded)


def test_stored_numbers_of_a_baseline_are_those_of_the_run_it_recorded():
    result = tiny_result(BASE_ANSWERS)
    document = build_baseline([result], provenance().to_dict())
    entry = Baseline.from_document(document, Path("b.json")).sets["tiny"]
    from_run, from_baseline = stored_numbers(result.numbers(), ["recall@10"]), stored_numbers(entry, ["recall@10"])
    assert from_baseline.per_query["recall@10"] == from_run.per_query["recall@10"]
    assert from_baseline.figures == from_run.figures
    assert LATENCY in from_run.per_query and LATENCY not in from_baseline.per_query  # baselines keep no per-query latency


def test_utc_time_normalises_offsets_and_refuses_what_is_not_a_time():
    assert utc_time("2026-12-01T09:20:13+02:00") == "2026-12-01T07:20:13+00:00"
    assert utc_time("2026-12-01T09:20:13") == "2026-12-01T09:20:13+00:00"
    assert utc_time("yesterday") is None and utc_time(None) is None


# -- concurrency -----------------------------------------------------------------------------------

APPENDER = """
import dataclasses, sys
from harness.history.entries import entry_from_report
from harness.history.store import HistoryStore
from tests.reports import gated_report
report = gated_report()
for day in range(int(sys.argv[3])):
    started = f"2026-{int(sys.argv[2]):02d}-{day + 1:02d}T00:00:00+00:00"
    entry = entry_from_report(dataclasses.replace(report, provenance=dataclasses.replace(report.provenance,
                                                                                         started=started)))
    with HistoryStore.for_append(sys.argv[1]) as store:
        assert store.append(entry)
"""


def test_concurrent_appenders_keep_every_run(tmp_path):
    store = tmp_path / "history.sqlite"
    writers = [subprocess.Popen([sys.executable, "-c", APPENDER, str(store), str(month), "6"], cwd=REPO_ROOT,
                                stderr=subprocess.PIPE, text=True) for month in range(1, 5)]
    for writer in writers:
        _, stderr = writer.communicate(timeout=120)
        assert writer.returncode == 0, stderr
    with HistoryStore.for_append(store) as opened:  # quick_check passes: the file is whole
        assert opened.run_count() == {RUN: 24}
        assert len(opened.series(SeriesKey(RUN, "bm25", "tiny", OVERALL, "recall@10"))) == 24


# -- a store that is not one -----------------------------------------------------------------------

def _refused(path: Path, opener) -> str:
    before = path.read_bytes()
    with pytest.raises(HistoryError) as raised:
        opener(path)
    assert path.read_bytes() == before  # never written to, replaced or repaired
    message = str(raised.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


@pytest.mark.parametrize("opener", [HistoryStore.for_append, HistoryStore.for_reading], ids=["append", "read"])
def test_a_file_that_is_not_a_store_is_one_line_and_left_as_it_is(tmp_path, opener):
    baseline = tmp_path / "current.json"
    baseline.write_text(baseline_text(build_baseline([tiny_result(BASE_ANSWERS)], provenance().to_dict())))
    assert "left as it is" in _refused(baseline, opener)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    assert "meta" in _refused(other, opener)


def test_a_damaged_store_is_refused_before_anything_is_written(tmp_path):
    path = tmp_path / "h.sqlite"
    with HistoryStore.for_append(path) as store:
        for day in range(1, 29):
            store.append(entry_from_report(_report(f"2026-12-{day:02d}T00:00:00+00:00")))
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    data[3 * page: 3 * page + 16] = b"\xff" * 16  # a page in the middle whose header is damaged
    path.write_bytes(bytes(data))
    assert "left as it is" in _refused(path, HistoryStore.for_append)


def test_a_store_of_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "h.sqlite"
    HistoryStore.for_append(path).close()
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    assert "schema 1" in _refused(path, HistoryStore.for_reading)


def test_reading_needs_a_store_and_appending_makes_one_with_its_folder(tmp_path):
    with pytest.raises(HistoryError, match="no history store here"):
        HistoryStore.for_reading(tmp_path / "missing.sqlite")
    path = tmp_path / "ci" / "artifacts" / "history.sqlite"
    HistoryStore.for_append(path).close()
    assert path.is_file() and [p.name for p in path.parent.iterdir()] == ["history.sqlite"]  # no temp file left
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # as any file a plain open() makes, not mkstemp's 0600


# -- baselines -------------------------------------------------------------------------------------

def _baseline_bytes(answers) -> bytes:
    return baseline_text(build_baseline([tiny_result(answers)], provenance().to_dict())).encode()


def test_a_baseline_carried_unchanged_into_its_next_version_is_one_point(tmp_path):
    first = _baseline_bytes(BASE_ANSWERS)
    lost = _baseline_bytes({**BASE_ANSWERS, "tiny-01": (("doc-09",), 1.0)})
    # another set re-baselined: the tiny entry unchanged, the file's bytes not
    renamed = json.loads(first)
    renamed["created"] = "2026-12-05T00:00:00+00:00"
    with HistoryStore.for_append(tmp_path / "h.sqlite") as store:
        for label, text, accepted in (("b.json@1", first, "2026-12-01T00:00:00Z"),
                                      ("b.json@2", json.dumps(renamed).encode(), "2026-12-02T00:00:00Z"),
                                      ("b.json@3", lost, "2026-12-03T00:00:00Z")):
            for entry in entries_from_baseline(text, label, accepted=accepted):
                assert store.append(entry)
        points = store.series(SeriesKey(BASELINE, "bm25", "tiny", OVERALL, "recall@10"))
    assert [p.time[:10] for p in points] == ["2026-12-01", "2026-12-03"]
    assert points[0].value > points[1].value


def _git(repository: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repository), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin",
                               "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repository)}).stdout.strip()


def test_git_import_follows_the_branch_and_skips_what_it_has(tmp_path):
    repository = tmp_path / "team"
    (repository / "baselines").mkdir(parents=True)
    _git(repository, "init", "-q", "-b", "main")
    path = repository / "baselines" / "current.json"
    path.write_bytes(_baseline_bytes(BASE_ANSWERS))
    _git(repository, "add", "-A")
    _git(repository, "commit", "-q", "-m", "baseline")
    _git(repository, "checkout", "-q", "-b", "side")
    path.write_bytes(_baseline_bytes({**BASE_ANSWERS, "tiny-01": (("doc-09",), 1.0)}))
    _git(repository, "commit", "-qam", "re-baseline on a side branch")
    _git(repository, "checkout", "-q", "main")
    (repository / "README").write_text("x")
    _git(repository, "add", "-A")
    _git(repository, "commit", "-q", "-m", "unrelated")
    _git(repository, "merge", "-q", "--no-ff", "-m", "merge", "side")
    merge = _git(repository, "rev-parse", "HEAD")

    versions = list(git_baseline_versions(repository, ["baselines/*.json"]))
    assert [v.path for v in versions] == ["baselines/current.json"] * 2
    assert versions[1].commit == merge  # the side branch's version counts when it landed
    with HistoryStore.for_append(tmp_path / "h.sqlite") as store:
        added = [store.append(e) for v in versions for e in entries_from_baseline(v.text, v.label, accepted=v.time)]
        again = [store.append(e) for v in versions for e in entries_from_baseline(v.text, v.label, accepted=v.time)]
        assert added == [True, True] and again == [False, False]
    with pytest.raises(HistoryError, match="git log"):
        list(git_baseline_versions(tmp_path / "not-a-repository", ["baselines/*.json"]))
