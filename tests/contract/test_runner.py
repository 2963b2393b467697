"""AdapterProcess against real adapter processes in tests/fixtures/adapters/, good and bad."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from harness import child as child_module
from harness.errors import AdapterError
from harness.adapter.protocol import Request
from harness.adapter.driver import AdapterProcess
from tests.conftest import FIXTURES as FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "adapters"
FAST = {"startup_timeout": 10.0, "query_timeout": 10.0}  # generous: only hang tests hit a timeout


def adapter(tmp_path: Path, script: str, *args: str, **options) -> AdapterProcess:
    settings = {**FAST, **options}
    return AdapterProcess([sys.executable, str(FIXTURES / script), *args],
                          log_path=tmp_path / "logs" / "adapter.log", **settings)


def request(qid: str | None = "q1", query: str = "parse config", k: int = 3) -> Request:
    return Request(kind="code", query=query, k=k, qid=qid)


def failure(tmp_path: Path, script: str, *args: str, asked: int = 1, **options) -> AdapterError:
    """Run the adapter, ask q1..q<asked>, and return the AdapterError the last ask raised."""
    with adapter(tmp_path, script, *args, **options) as process:
        for number in range(1, asked):
            process.ask(request(f"q{number}"))
        with pytest.raises(AdapterError) as caught:
            process.ask(request(f"q{asked}"))
    return caught.value


def assert_names(error: AdapterError, qid: str | None, *fragments: str) -> None:
    """The message starts with the query, carries every fragment and the stderr tail."""
    message = str(error)
    if qid is not None:
        assert message.startswith(f"query {qid}: "), message
    assert error.qid == qid
    assert error.argv[0] == sys.executable
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert error.stderr_tail, message
    assert error.stderr_tail.splitlines()[-1] in message


def is_gone(pid: int) -> bool:
    """True when no process `pid` runs (an unreaped zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def eventually_gone(pid: int) -> bool:
    """Poll (bounded) for a killed process to finish dying; SIGKILL delivery is asynchronous."""
    for _ in range(500):
        if is_gone(pid):
            return True
        time.sleep(0.01)
    return False


# -- correct adapters -----------------------------------------------------------------------

def test_correct_adapter_without_banner_answers_and_exits_cleanly(tmp_path):
    with adapter(tmp_path, "good.py") as process:
        first, latency = process.ask(request("q1", "alpha"))
        second, _ = process.ask(request("q2", "beta", k=2))
    assert first.ids == ("alpha-1", "alpha-2", "alpha-3")
    assert first.scores == (10.0, 9.0, 8.0)
    assert second.ids == ("beta-1", "beta-2")
    assert latency > 0
    assert process.banner is None and process.startup_seconds is None
    # It saw stdin close and said goodbye within the grace period: nothing was signalled.
    assert process.stderr_tail().splitlines() == ["good: serving", "good: stdin closed, bye"]


def test_expected_banner_is_read_at_start(tmp_path):
    with adapter(tmp_path, "good.py", "--banner", expect_banner=True) as process:
        assert process.banner == {"ready": True, "name": "good", "version": "1.0"}
        assert process.startup_seconds is not None and process.startup_seconds > 0
        response, _ = process.ask(request())
    assert response.ids == ("parse config-1", "parse config-2", "parse config-3")


def test_unexpected_banner_is_recorded_on_first_ask(tmp_path):
    with adapter(tmp_path, "good.py", "--banner") as process:
        assert process.banner is None
        response, _ = process.ask(request())
        assert process.banner == {"ready": True, "name": "good", "version": "1.0"}
        assert process.startup_seconds is not None
        again, _ = process.ask(request("q2", "next"))
    assert response.ids[0] == "parse config-1"
    assert again.ids[0] == "next-1"


def test_env_is_merged_over_the_environment(tmp_path):
    with adapter(tmp_path, "good.py", "--show-env", "HARNESS_CORPUS_DIR",
                 env={"HARNESS_CORPUS_DIR": "/data/corpora"}) as process:
        process.ask(request())
        assert "good: HARNESS_CORPUS_DIR=/data/corpora" in process.stderr_tail()


def test_request_without_qid_is_named_by_its_position(tmp_path):
    with adapter(tmp_path, "bad_reply.py", "error") as process:
        with pytest.raises(AdapterError) as caught:
            process.ask(request(qid=None))
    assert str(caught.value).startswith("query #1: adapter answered with an error")
    assert caught.value.qid == "#1"


def test_grandchild_left_behind_by_a_clean_exit_is_killed(tmp_path):
    pid_file = tmp_path / "pids"
    with adapter(tmp_path, "good.py", "--spawn", str(pid_file)) as process:
        process.ask(request())
    adapter_pid, grandchild_pid = map(int, pid_file.read_text().split())
    assert eventually_gone(adapter_pid)
    assert eventually_gone(grandchild_pid)


def test_tail_shows_only_this_run(tmp_path):
    log = tmp_path / "logs" / "adapter.log"
    log.parent.mkdir()
    log.write_text("an earlier run's line\n")
    error = failure(tmp_path, "exit_at_start.py")
    assert "earlier run" not in error.stderr_tail
    # The progress bar's redraws collapse to what it showed last.
    assert error.stderr_tail.splitlines() == [
        "loading 100%", "exit_at_start: index file /nonexistent/index.bin is missing"]
    assert log.read_text().startswith("an earlier run's line\n")  # appended, not clobbered


# -- failures -------------------------------------------------------------------------------

def test_exits_at_start(tmp_path):
    error = failure(tmp_path, "exit_at_start.py")
    assert_names(error, "q1", "adapter exited with status 2 before answering",
                 "index file /nonexistent/index.bin is missing")


def test_exits_at_start_while_banner_expected(tmp_path):
    with pytest.raises(AdapterError) as caught:
        with adapter(tmp_path, "exit_at_start.py", expect_banner=True):
            pass
    assert_names(caught.value, None,
                 "adapter exited with status 2 before printing the ready banner",
                 "index file /nonexistent/index.bin is missing")


def test_crashes_after_two_queries(tmp_path):
    with adapter(tmp_path, "crash_after.py", "2") as process:
        process.ask(request("q1"))
        process.ask(request("q2"))
        with pytest.raises(AdapterError) as caught:
            process.ask(request("q3"))
        with pytest.raises(AdapterError) as later:
            process.ask(request("q4"))
    assert_names(caught.value, "q3", "adapter exited with status 1 before answering",
                 "crash_after: giving up on query q3", "RuntimeError: index corrupted")
    assert str(later.value).startswith("query q4: not asked: the adapter already failed")


@pytest.mark.parametrize("ignore_term", [False, True], ids=["dies-on-sigterm", "ignores-sigterm"])
def test_hang_kills_the_whole_process_group(tmp_path, monkeypatch, ignore_term):
    monkeypatch.setattr(child_module, "TERM_GRACE_SECONDS", 0.3)
    pid_file = tmp_path / "pids"
    args = [str(pid_file)] + (["--ignore-term"] if ignore_term else [])
    error = failure(tmp_path, "hang.py", *args, asked=2, expect_banner=True, query_timeout=1.0)
    assert_names(error, "q2", "no answer within 1 s", "process group was killed",
                 "hang: stuck on query q2")
    adapter_pid, grandchild_pid = map(int, pid_file.read_text().split())
    assert eventually_gone(adapter_pid)
    assert eventually_gone(grandchild_pid)


def test_first_query_without_banner_may_use_startup_time_too(tmp_path):
    error = failure(tmp_path, "bad_reply.py", "silent", startup_timeout=0.5, query_timeout=0.5)
    assert_names(error, "q1", "no answer within 1 s (first query, start-up included)",
                 "bad_reply: silent, loading forever")


def test_adapter_not_reading_stdin_times_out_on_write(tmp_path):
    with adapter(tmp_path, "bad_reply.py", "silent", startup_timeout=0.5,
                 query_timeout=0.5) as process:
        with pytest.raises(AdapterError) as caught:
            # 1 MB does not fit the pipe (64 KiB on Linux): the write itself must time out.
            process.ask(request(query="x" * 1_000_000))
    assert_names(caught.value, "q1", "could not write the request within 1 s",
                 "bad_reply: silent, loading forever")


def test_never_prints_the_expected_banner(tmp_path):
    with pytest.raises(AdapterError) as caught:
        with adapter(tmp_path, "bad_reply.py", "silent", expect_banner=True, startup_timeout=1.0):
            pass
    assert_names(caught.value, None, "did not print the ready banner within 1 s",
                 "bad_reply: silent, loading forever")


def test_first_line_not_a_banner_when_one_is_expected(tmp_path):
    with pytest.raises(AdapterError) as caught:
        with adapter(tmp_path, "bad_reply.py", "not-banner-first", expect_banner=True):
            pass
    assert str(caught.value).startswith("first line was not a banner: '{\"ids\": []}'")
    assert caught.value.qid is None


@pytest.mark.parametrize("mode, fragments", [
    ("stdout-log", ["adapter printed a non-protocol line on stdout",
                    "'loading index from /var/index'"]),
    ("non-json", ["adapter printed a non-protocol line on stdout", "'ids: a b c'"]),
    ("ids-not-strings", ["invalid response: 'ids' must be a list of strings"]),
    ("too-many", ["invalid response: 'ids' has 4 entries, more than k=3"]),
    ("duplicate", ["invalid response: 'ids' repeats 'doc-1'"]),
    ("error", ["adapter answered with an error: 'index not loaded'"]),
])
def test_bad_replies(tmp_path, mode, fragments):
    error = failure(tmp_path, "bad_reply.py", mode)
    assert_names(error, "q1", *fragments, f"bad_reply: {mode} on query q1")


def test_extra_line_on_stdout_is_caught_at_the_next_query(tmp_path):
    error = failure(tmp_path, "bad_reply.py", "two-lines", asked=2)
    assert_names(error, "q2", "adapter printed a line on stdout that answers no request",
                 "'{\"ids\": [\"parse config-1\"", "bad_reply: two-lines on query q1")


def test_response_line_over_16_mib_is_refused(tmp_path):
    error = failure(tmp_path, "bad_reply.py", "huge")
    assert_names(error, "q1", "response line longer than 16777216 bytes (16 MiB)",
                 "bad_reply: huge on query q1")


def test_stderr_flood_does_not_block(tmp_path):
    with adapter(tmp_path, "flood.py", "4") as process:
        answers = [process.ask(request(f"q{n}", f"w{n}"))[0] for n in range(1, 4)]
        assert process.stderr_tail(max_lines=1) == "flood: done with query q3"
    assert [response.ids[0] for response in answers] == ["w1-1", "w2-1", "w3-1"]
    # 3 queries x 4 MiB of 1 KiB lines, plus the three "done" lines.
    assert (tmp_path / "logs" / "adapter.log").stat().st_size > 3 * 4 * 1024 * 1024


def test_missing_program_cannot_start(tmp_path):
    process = AdapterProcess([str(tmp_path / "no-such-adapter")], log_path=tmp_path / "a.log")
    with pytest.raises(AdapterError) as caught:
        with process:
            pass
    assert str(caught.value).startswith("cannot start the adapter: No such file or directory")


# -- start-up progress -----------------------------------------------------------------------

def test_progress_lines_before_the_banner_are_logged_and_passed_on_in_order(tmp_path):
    seen = []
    with adapter(tmp_path, "progress.py", "3", "0", "--banner", expect_banner=True, on_progress=seen.append) as process:
        assert process.banner == {"ready": True, "name": "progress"}
        response, _ = process.ask(request())
    assert response.ids[0] == "parse config-1"
    assert [(p.stage, p.done, p.total) for p in seen] == [("embedding memory", n, 3) for n in (1, 2, 3)]
    log = (tmp_path / "logs" / "adapter.log").read_text()
    assert log.splitlines() == [f"[progress] embedding memory {n}/3" for n in (1, 2, 3)]


def test_progress_before_the_first_answer_without_a_banner(tmp_path):
    seen = []
    with adapter(tmp_path, "progress.py", "2", "0", on_progress=seen.append) as process:
        response, _ = process.ask(request())
        again, _ = process.ask(request("q2", "next"))
    assert [p.done for p in seen] == [1, 2]
    assert response.ids[0] == "parse config-1" and again.ids[0] == "next-1"


def test_slow_progress_keeps_each_silence_under_the_timeout_and_succeeds(tmp_path):
    # 6 lines 0.3 s apart: about 1.8 s in all, over the 1 s start-up timeout, never 1 s silent.
    with adapter(tmp_path, "progress.py", "6", "0.3", "--banner", expect_banner=True,
                 startup_timeout=1.0) as process:
        assert process.banner is not None
        assert process.startup_seconds > 1.0
        process.ask(request())


def test_silence_after_some_progress_fails_naming_the_last_progress(tmp_path):
    with pytest.raises(AdapterError) as caught:
        with adapter(tmp_path, "progress.py", "2", "0", "--hang-after", expect_banner=True, startup_timeout=1.0):
            pass
    assert_names(caught.value, None, "no banner and no progress for 1 s (last progress: embedding memory 2/2)",
                 "process group was killed", "progress: going quiet")


def test_start_up_over_the_limit_fails_naming_the_limit(tmp_path):
    with pytest.raises(AdapterError) as caught:
        with adapter(tmp_path, "progress.py", "1", "0.1", "--forever", expect_banner=True, startup_timeout=1.0,
                     startup_limit=1.5):
            pass
    message = str(caught.value)
    assert message.startswith("still starting after the --startup-limit of 1.5 s (last progress: embedding memory ")
    assert "process group was killed" in message


def test_malformed_progress_line_is_a_protocol_error(tmp_path):
    with pytest.raises(AdapterError) as caught:
        with adapter(tmp_path, "progress.py", "3", "0", "--banner", "--malformed", expect_banner=True):
            pass
    assert str(caught.value).startswith("invalid progress line: progress line: 'done' must be an integer >= 0, "
                                        "got '\"two\"'")


# -- workers and unread banners ---------------------------------------------------------------

def test_a_banner_nobody_asked_for_is_not_an_answer_out_of_step(tmp_path):
    # A worker that got no query: its banner is still unread when it is stopped.
    with adapter(tmp_path, "good.py", "--banner") as process:
        pass
    assert process.banner is None


def test_more_workers_than_queries_run_correctly(tmp_path):
    from harness.adapter.asking import ask_sets
    from harness.adapter.options import RunOptions
    from harness.sets.materialise import materialise_corpora
    from harness.sets.loader import load_set
    from tests.conftest import TINY_SET

    tiny = load_set(TINY_SET)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    materialise_corpora([tiny], corpus)
    options = RunOptions(argv=[sys.executable, str(FIXTURES / "good.py"), "--banner"],
                         log_path=tmp_path / "logs" / "adapter.log", workers=len(tiny.queries) + 3, **FAST)
    with ask_sets([tiny], options, corpus) as run:
        run.start()
        run.ask()
    outcome = run.outcome
    assert outcome.error is None, outcome.error
    assert outcome.complete
    assert [row.qid for row in outcome.results[0].queries] == [q.qid for q in tiny.queries]
    assert outcome.warnings == [f"--workers {len(tiny.queries) + 3}: the largest set has {len(tiny.queries)} "
                                f"queries, so {len(tiny.queries)} adapters started"]
    assert outcome.workers == len(tiny.queries)


@pytest.mark.parametrize("expect_banner, identify_first, name", [(True, False, "good"), (False, False, None),
                                                                 (False, True, "good")])
def test_start_gives_each_workers_banner_before_any_timed_query(tmp_path, expect_banner, identify_first, name):
    """A banner awaited is read at start; one not awaited shows with the first answer, so identify_first asks
    one untimed query per worker in start() (the API's identity check needs it); otherwise start() has None."""
    from harness.adapter.asking import ask_sets
    from harness.adapter.options import RunOptions
    from harness.sets.materialise import materialise_corpora
    from harness.sets.loader import load_set
    from tests.conftest import TINY_SET

    tiny = load_set(TINY_SET)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    materialise_corpora([tiny], corpus)
    options = RunOptions(argv=[sys.executable, str(FIXTURES / "good.py"), "--banner"], workers=2,
                         log_path=tmp_path / "adapter.log", expect_banner=expect_banner,
                         identify_first=identify_first, **FAST)
    with ask_sets([tiny], options, corpus) as run:
        assert [banner and banner["name"] for banner in run.start().banners] == [name, name]
        run.ask()
    assert run.outcome.error is None and run.outcome.complete
    assert run.outcome.banner["name"] == "good"
