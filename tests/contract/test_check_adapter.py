"""check-adapter: the conformance suite against a correct adapter and against broken ones, each caught by its check."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from harness.adapter.checks import CHECKS
from harness.child import group_rss_kib
from harness.commands.cli import main
from tests.process_helpers import alive, default_signals
from tests.conftest import FIXTURES as FIXTURES_DIR, REPO_ROOT

FIXTURES = FIXTURES_DIR / "check_adapters"
REPO = REPO_ROOT
ROW = re.compile(r"^(\S+)\s+(pass|FAIL|n/a)\s+(.*)$")
FEW_QUERIES = "200"  # the endurance check's default 2,000 is for real use; 200 keeps the file fast


def fixture(name: str, *args: str) -> list[str]:
    return [sys.executable, str(FIXTURES / f"{name}.py"), *args]


def check(capsys, tmp_path, command, *options):
    """Run the checker in-process; return (exit status, {check: (result, detail)}, stdout, stderr)."""
    status = main(["check-adapter", "--queries", FEW_QUERIES, "--log", str(tmp_path / "adapter.log"),
                   *options, "--", *command])
    out, err = capsys.readouterr()
    table = {}
    for line in out.splitlines():
        match = ROW.match(line)
        if match:
            table[match.group(1)] = (match.group(2), match.group(3))
    return status, table, out, err


def failing(table):
    return {name for name, (result, _) in table.items() if result == "FAIL"}


def test_a_correct_adapter_passes_every_check(capsys, tmp_path):
    status, table, out, err = check(capsys, tmp_path, fixture("good"))
    assert status == 0, out
    assert list(table) == [name for name, _ in CHECKS]  # every check reported, in table order
    assert {result for result, _ in table.values()} == {"pass"}, out
    # It says which corpus the adapter was given, and that the checker wrote it.
    assert "HARNESS_CORPUS_DIR=" in out and "written by check-adapter: check.jsonl, 24 documents" in out
    assert table["banner"][1].startswith("ready after") and "good 1.0" in table["banner"][1]
    assert table["endurance"][1].startswith(f"{FEW_QUERIES} queries answered")
    assert table["k-range"][1] == "k=1: 1 id; k=1000: 24 ids"  # the fixture corpus has 24 documents
    assert "error reply: unknown kind 'check-adapter-no-such-kind'" in table["unknown-kind"][1]
    assert table["known-ids"][1] == "24 distinct ids returned, all in check.jsonl"
    assert table["answers"][1] == "12 queries answered with id lists"
    assert "14 checks: 14 passed or not judged, 0 failed" in out
    assert err == ""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="resident memory is read from /proc")
def test_endurance_reports_memory_growth_and_can_fail_on_it(capsys, tmp_path):
    # leaky.py keeps 200 kB per request: 200 requests are about 39 MiB more.
    status, table, out, _ = check(capsys, tmp_path, fixture("leaky"), "--max-rss-growth", "20")
    assert status == 1
    assert failing(table) == {"endurance"}, out
    growth = float(re.search(r"\(\+([\d.]+) MiB", table["endurance"][1]).group(1))
    assert 30 < growth < 60
    assert "more than --max-rss-growth 20 MiB" in table["endurance"][1]


@pytest.mark.parametrize("command, caught_by, where, detail", [
    pytest.param(fixture("out_of_order"), {"order"}, "order", "answer 1 matches request 8", id="out-of-order"),
    # Repeating an id also makes k=1 answers two ids long, so k-range fails with it.
    pytest.param(fixture("duplicate_ids"), {"ids", "k-range"}, "ids", "'ids' repeats 'check-", id="duplicate-ids"),
    pytest.param(fixture("more_than_k"), {"ids", "k-range"}, "ids", "'ids' has 20 entries, more than k=10",
                 id="more-than-k"),
    pytest.param(fixture("non_string_ids"), {"ids"}, "ids", "'ids' must be a list of strings", id="non-string-ids"),
    pytest.param(fixture("wrong_ids"), {"known-ids"}, "known-ids",
                 "24 distinct ids are not in check.jsonl ('./check-01', './check-02',", id="ids-not-in-corpus"),
    pytest.param(fixture("crash_on", "emoji"), {"unicode"}, "unicode", "emoji: adapter exited with status 1",
                 id="crash-on-emoji"),
    pytest.param(fixture("crash_on", "long"), {"long-query"}, "long-query", "long: adapter exited with status 1",
                 id="crash-on-long-query"),
    pytest.param(fixture("crash_on_unknown_kind"), {"unknown-kind"}, "unknown-kind",
                 "adapter exited with status 3; expected an error reply", id="crash-on-unknown-kind"),
    pytest.param(fixture("nondeterministic"), {"determinism"}, "determinism",
                 "12 of 12 queries changed ranking when asked again: 'parse a configuration file'",
                 id="non-deterministic"),
    pytest.param(fixture("bad_banner", "text"), {"banner"}, "banner",
                 "first line is neither a ready banner nor an answer: 'starting the search service...'",
                 id="banner-text"),
    pytest.param(fixture("bad_banner", "fields"), {"banner"}, "banner", "banner: 'name' must be a string, got '7'",
                 id="banner-fields"),
    # a run refuses `"protocol": true` (exit 3, tests/unit/adapter/test_protocol.py): so does the check
    pytest.param(fixture("bad_banner", "protocol"), {"banner"}, "banner",
                 "banner: 'protocol' is 'true'; this harness speaks 1", id="banner-protocol-true"),
    pytest.param(fixture("bad_banner", "ready"), {"banner"}, "banner", "banner 'ready' must be true, got \"yes\"",
                 id="banner-ready"),
])
def test_each_broken_adapter_is_caught_by_the_right_check(capsys, tmp_path, command, caught_by, where, detail):
    status, table, out, _ = check(capsys, tmp_path, command)
    assert status == 1
    assert failing(table) == caught_by, out  # caught there, and nowhere else
    assert detail in table[where][1], out


def test_a_slow_answer_past_the_timeout_is_caught_and_the_checks_go_on(capsys, tmp_path):
    # slow.py sleeps 30 s on the k=1000 request; the checker gives up after 2 s, kills it and restarts it.
    status, table, out, _ = check(capsys, tmp_path, fixture("slow"), "--timeout", "2")
    assert status == 1
    assert failing(table) == {"k-range", "timeout"}, out
    assert "query k-range-k1000: no answer within 2 s" in table["timeout"][1]
    assert "the adapter was started 2 times" in out
    assert table["determinism"][0] == "pass"  # later checks ran on the restarted adapter


def test_a_crash_restarts_the_adapter_and_its_stderr_tail_is_shown(capsys, tmp_path):
    status, table, out, _ = check(capsys, tmp_path, fixture("crash_on", "emoji"))
    assert status == 1
    assert "the adapter was started 2 times" in out
    assert "  | UnicodeError: cannot handle astral characters" in out
    assert (tmp_path / "adapter.log").read_text().count("UnicodeError: cannot handle astral characters") == 1


def test_an_adapter_that_never_answers_fails_without_hanging(capsys, tmp_path):
    status, table, out, _ = check(capsys, tmp_path, [sys.executable, "-c", "import sys; sys.exit(4)"])
    assert status == 1
    assert table["banner"][0] == "n/a" and table["determinism"][0] == "n/a"
    assert "adapter exited with status 4" in table["endurance"][1]
    # It is not restarted forever: three starts that died before a first line are enough.
    assert "it ended before printing a line 3 times in a row (adapter exited with status 4)" in out
    assert "the adapter was started 3 times" in out


def test_kind_option_writes_the_corpus_under_that_kind(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_CORPUS_DIR", raising=False)
    status, table, out, _ = check(capsys, tmp_path, fixture("good"), "--kind", "code")
    assert status == 0, out
    assert "kind: code;" in out and "written by check-adapter: code.jsonl" in out
    # A stand-in corpus under the user's kind: an adapter with its own index may rightly ignore it.
    assert table["known-ids"][0] == "n/a" and "use --set NAME or --corpus-dir DIR" in table["known-ids"][1]


def test_kind_option_keeps_an_inherited_corpus_dir(capsys, tmp_path, monkeypatch):
    corpus = tmp_path / "corpora"
    corpus.mkdir()
    (corpus / "notes.jsonl").write_text('{"id": "n1", "text": "parse a configuration file"}\n')
    monkeypatch.setenv("HARNESS_CORPUS_DIR", str(corpus))
    status, table, out, _ = check(capsys, tmp_path, fixture("good"), "--kind", "notes")
    assert f"HARNESS_CORPUS_DIR={corpus} (inherited from $HARNESS_CORPUS_DIR)" in out
    assert table["k-range"][1] == "k=1: 1 id; k=1000: 1 id"  # its one document, not the checker's 24
    assert table["known-ids"] == ("pass", "1 distinct ids returned, all in notes.jsonl")
    # One document: every answer is the same, so the order check cannot judge and says so.
    assert table["order"][0] == "n/a"
    assert status == 0


def test_set_option_uses_the_sets_kind_corpus_and_queries(capsys, tmp_path):
    tiny = str(FIXTURES.parent / "sets" / "tiny")
    status, table, out, _ = check(capsys, tmp_path, fixture("good"), "--set", tiny)
    assert status == 0, out
    assert "kind: tiny;" in out and "(set tiny revision 1: tiny.jsonl, 8 documents, deleted afterwards)" in out
    assert table["known-ids"] == ("pass", "8 distinct ids returned, all in tiny.jsonl")
    assert table["determinism"][1] == "7 queries asked twice, same rankings"  # the set's 7 queries
    status, table, out, _ = check(capsys, tmp_path, fixture("wrong_ids"), "--set", tiny)
    assert failing(table) == {"known-ids"} and "'./doc-01'" in table["known-ids"][1]


@pytest.mark.parametrize("args, message", [
    ([], "give the adapter command after '--'"),
    (["--queries", "0", "--", "x"], "--queries: must be >= 1, got 0"),
    (["--timeout", "0", "--", "x"], "--timeout: must be a positive number of seconds up to 1e+06, got 0"),
    (["--kind", "../etc", "--", "x"], "--kind: '../etc' cannot name a <kind>.jsonl file"),
    (["--", "/nonexistent/adapter-binary"], "cannot start the adapter /nonexistent/adapter-binary"),
    (["--set", str(FIXTURES.parent / "sets" / "tiny"), "--kind", "code", "--", "x"],
     "differs from set tiny's kind 'tiny'"),
    (["--set", "tiny", "--corpus-dir", ".", "--", "x"], "--set and --corpus-dir are exclusive"),
])
def test_usage_errors_exit_2_with_one_line(capsys, tmp_path, args, message):
    assert main(["check-adapter", "--log", str(tmp_path / "log"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: error: check-adapter") and message in err
    assert len(err.splitlines()) == 1


def test_the_python_adapter_in_docs_passes(capsys, tmp_path, monkeypatch):
    """docs/adapters.md's ten-line adapter, run as written (with the repo on PYTHONPATH), passes every check."""
    text = (REPO / "docs" / "adapters.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    script = tmp_path / "my_adapter.py"
    script.write_text(code, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    status, table, out, _ = check(capsys, tmp_path, [sys.executable, str(script)])
    assert status == 0, out
    assert len([line for line in code.splitlines() if line.strip()]) <= 15


def test_as_a_real_subprocess(tmp_path):
    done = subprocess.run([sys.executable, "-m", "harness", "check-adapter", "--queries", "20",
                           "--log", str(tmp_path / "log"), "--", *fixture("bad_banner", "fields")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == ""
    assert done.stdout.startswith("adapter: ")
    assert re.search(r"^banner\s+FAIL\s+banner: 'name' must be a string, got '7'$", done.stdout, re.M)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="resident memory is read from /proc")
def test_group_rss_sums_the_processes_of_the_group(tmp_path):
    # A leader starts a child (same process group), waits for it to be up, writes the child's pid, sleeps.
    marker = tmp_path / "child-pid"
    leader_code = textwrap.dedent("""
        import os, subprocess, sys, time
        up = sys.argv[1] + ".up"
        child = subprocess.Popen([sys.executable, "-c",
                                  "import sys, time; open(sys.argv[1], 'w').close(); time.sleep(60)", up])
        while not os.path.exists(up):
            time.sleep(0.01)
        with open(sys.argv[1] + ".tmp", "w") as handle:
            handle.write(str(child.pid))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(60)
    """)
    leader = subprocess.Popen([sys.executable, "-c", leader_code, str(marker)], start_new_session=True)
    try:
        for _ in range(1200):
            if marker.exists():
                break
            time.sleep(0.05)
        child_pid = int(marker.read_text())

        def vmrss(pid):
            status = Path(f"/proc/{pid}/status").read_text()
            return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))

        expected = vmrss(leader.pid) + vmrss(child_pid)
        # Both sleep, so their RSS holds still; a few pages of slack for the leader's last steps.
        assert abs(group_rss_kib(leader.pid) - expected) <= 64
        assert group_rss_kib(leader.pid) > vmrss(leader.pid) + 1024  # the child counted, not just the leader
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()


def test_error_replies_to_the_real_queries_fail_the_answers_check(capsys, tmp_path):
    status, table, out, _ = check(capsys, tmp_path, fixture("error_replies"))
    assert status == 1
    assert failing(table) == {"answers", "k-range", "unicode", "empty-query", "long-query", "unknown-kind",
                              "endurance"}, out
    assert table["answers"][1].startswith("12 of 12 queries got an error reply (a run stops at the first, exit 3): "
                                          "'parse a configuration file': index not loaded")
    # None of the checks that only look at well-formed answers passes on error replies.
    for name in ("order", "ids", "known-ids", "timeout", "determinism"):
        assert table[name][0] == "n/a", (name, out)


def test_an_adapter_that_never_prints_nor_reads_fails_once_after_the_start_up_allowance(capsys, tmp_path):
    started = time.monotonic()
    status, table, out, _ = check(capsys, tmp_path, [sys.executable, "-c", "import time; time.sleep(600)"],
                                  "--startup-timeout", "1", "--timeout", "1")
    assert status == 1
    assert table["banner"] == ("FAIL", "no banner, progress or answer within 2 s (start-up included); "
                                       "the adapter did not start")
    assert {table[name] for name, _ in CHECKS[1:]} == {("n/a", "not run: the adapter did not start (see banner)")}
    assert "started 2 times" not in out  # not restarted for each check
    assert time.monotonic() - started < 60  # test-side bound only: today's loop paid it once per check


def test_progress_lines_are_logged_shown_and_then_every_check_passes(capsys, tmp_path, monkeypatch):
    status, table, out, err = check(capsys, tmp_path, fixture("progress"))
    assert status == 0, out
    # stderr is no terminal here: plain lines, the first and the last of the stage at least
    assert err.splitlines()[0] == "check-adapter: starting: indexing check 1/3"
    assert err.splitlines()[-1] == "check-adapter: starting: indexing check 3/3"
    assert "[progress] indexing check 2/3" in (tmp_path / "adapter.log").read_text()


def test_a_malformed_progress_line_fails_the_banner_check(capsys, tmp_path):
    status, table, out, _ = check(capsys, tmp_path, fixture("progress", "--malformed"))
    assert status == 1
    assert failing(table) == {"banner"}, out
    assert table["banner"][1] == "malformed progress line: progress line: 'done' must be an integer >= 0, got '\"two\"'"


def test_a_start_up_over_the_limit_fails_naming_the_limit(capsys, tmp_path):
    status, table, out, _ = check(capsys, tmp_path, fixture("progress", "--forever"), "--startup-limit", "1")
    assert status == 1
    assert table["banner"][0] == "FAIL"
    assert table["banner"][1].startswith("still starting after the --startup-limit of 1 s (last progress: indexing check ")






@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_mid_check_stops_the_adapter_removes_the_temp_folder_and_says_so(tmp_path, signum):
    log = tmp_path / "adapter.log"
    checker = subprocess.Popen([sys.executable, "-m", "harness", "check-adapter", "--log", str(log), "--timeout", "60",
                                "--", *fixture("stuck")], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True, preexec_fn=default_signals)
    try:
        for _ in range(1000):
            if log.exists() and "stuck: hanging" in log.read_text():
                break
            time.sleep(0.02)
        pids = [int(pid) for pid in re.findall(r"=(\d+)", log.read_text().split("\n", 1)[0])]
        checker.send_signal(signum)
        out, err = checker.communicate(timeout=30)
    finally:
        if checker.poll() is None:
            checker.kill()
    assert checker.returncode == 128 + signum
    assert err == f"harness: error: interrupted by {signum.name}; adapter stopped, temp folder removed\n"
    assert len(pids) == 2 and not any(alive(pid) for pid in pids)
    folder = re.search(r"HARNESS_CORPUS_DIR=(\S+) ", out).group(1)
    assert folder.startswith(tempfile.gettempdir()) and not Path(folder).exists()


class _Terminal:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_progress_on_a_terminal_is_one_redrawn_bar_with_rate_and_eta(monkeypatch):
    from harness.adapter.protocol import Progress
    from harness.commands.check_adapter import StartupProgressPrinter

    monkeypatch.setenv("TERM", "xterm")
    stream = _Terminal()
    printer = StartupProgressPrinter(stream)
    clock = iter([100.0, 102.0])  # two lines 2 s apart: 400 done in 2 s is 200/s, 600 left is 3 s
    monkeypatch.setattr("harness.commands.check_adapter.time.monotonic", lambda: next(clock))
    printer(Progress("embedding memory", 0, 1000))
    printer(Progress("embedding memory", 400, 1000))
    printer.finish()
    frames = stream.text.split("\r\033[K")[1:]
    assert frames[-1] == "embedding memory [############------------------] 400/1000  40% ETA 3s 200.0/s\n"
    monkeypatch.setenv("TERM", "dumb")
    assert StartupProgressPrinter(_Terminal()).terminal is False


def test_tied_order_changes_are_reported_apart_and_do_not_fail(capsys, tmp_path):
    # tied_shuffle.py rotates the documents of each run of equal scores every time a query is asked.
    status, table, out, _ = check(capsys, tmp_path, fixture("tied_shuffle"))
    assert table["determinism"][0] == "pass", out
    assert re.search(r"12 queries asked twice, same rankings; \d+ came back with tied documents \(equal scores\) "
                     r"in another order, which the scores allow: 'parse a configuration file'", table["determinism"][1])


def test_a_real_ranking_change_fails_beside_the_tied_ones(capsys, tmp_path):
    status, table, out, _ = check(capsys, tmp_path, fixture("tied_shuffle", "--ranking"))
    assert status == 1 and table["determinism"][0] == "FAIL", out
    assert re.search(r"^\d+ of 12 queries changed ranking when asked again: .*; \d+ came back with tied documents",
                     table["determinism"][1])


def test_a_restart_never_writes_its_marker_through_a_symlinked_log(tmp_path):
    # the first start opens the log without following links; a log swapped for a link before the restart must
    # be refused as well, not written through (the victim file keeps its bytes)
    from harness.adapter.probe import LiveAdapter
    from harness.adapter.protocol import Request
    from harness.errors import UsageError

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "check.jsonl").write_text('{"id": "d1", "text": "alpha"}\n')
    log, victim = tmp_path / "adapter.log", tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    env = {**os.environ, "HARNESS_CORPUS_DIR": str(corpus)}
    adapter = LiveAdapter(fixture("crash_on", "emoji"), env, log, startup_timeout=30, query_timeout=30)
    try:
        crashed = adapter.ask_one(Request("check", "alpha \U0001F600", 1))
        assert crashed.failure and adapter.starts == 1  # it died on the emoji: the next ask starts it again
        log.unlink()
        log.symlink_to(victim)
        with pytest.raises(UsageError, match=re.escape(str(log))):
            adapter.ask_one(Request("check", "alpha", 1))
    finally:
        adapter.stop(0.0, 0.0)
    assert victim.read_text() == "keep me\n"
