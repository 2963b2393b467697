"""What the run command prints on a terminal: colour rules, the progress line, the program name,
"did you mean", the `--` hint and --quiet, through real subprocesses and the command's own functions."""

import io
import json
import os
import subprocess
import sys

import pytest

from harness.commands import arguments
from harness.report.terminal import CLEAR_LINE, ProgressLine, Style, progress_text, wants_colour
from tests.conftest import SCRIPTED_ADAPTER, TINY_SET
from tests.process_helpers import on_a_terminal
from tests.reports import GOOD

# the tiny set answered perfectly: each query's relevant ids
class FakeTTY(io.StringIO):
    def isatty(self):
        return True


# --- colour ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode, environ, tty, expected", [
    ("auto", {}, True, True),
    ("auto", {}, False, False),                       # a pipe or a file: never coloured
    ("auto", {"NO_COLOR": "1"}, True, False),         # https://no-color.org
    ("auto", {"NO_COLOR": ""}, True, True),           # empty NO_COLOR does not count
    ("auto", {"TERM": "dumb"}, True, False),
    ("always", {"NO_COLOR": "1", "TERM": "dumb"}, False, True),  # the option wins
    ("never", {}, True, False),
])
def test_colour_rules(mode, environ, tty, expected):
    stream = FakeTTY() if tty else io.StringIO()
    assert wants_colour(mode, stream, environ) is expected


def test_style_paints_only_when_on():
    assert Style(False).status("fail") == "FAIL"
    assert Style(True).status("warn") == "\033[33mWARN\033[0m"


# --- progress ----------------------------------------------------------------------------------

def test_progress_text_has_rate_and_eta():
    # 40 of 120 queries in 8 s: 5.0 q/s, 80 left -> 16 s
    assert progress_text("code", 40, 120, 8.0) == "[code] 40/120 queries  5.0 q/s  ETA 16s"
    assert progress_text("code", 120, 120, 24.0) == "[code] 120/120 queries  5.0 q/s  in 24s"
    assert progress_text("code", 0, 120, 0.0) == "[code] 0/120 queries"
    # 10 of 5010 in 2 s: 5 q/s, 5000 left -> 1000 s = 16m40s
    assert progress_text("big", 10, 5010, 2.0).endswith("ETA 16m40s")


def clock(times):
    values = iter(times)
    return lambda: next(values)


def test_progress_redraws_in_place_on_a_capable_terminal():
    stream = io.StringIO()
    line = ProgressLine(stream, dumb=False, clock=clock([0.0, 1.0, 1.05, 2.0]))
    line("s", 1, 4)
    line("s", 2, 4)
    line("s", 3, 4)  # 0.05 s after the last draw: skipped
    line("s", 4, 4)
    line.finish()
    assert stream.getvalue() == (CLEAR_LINE + "[s] 1/4 queries" + CLEAR_LINE + "[s] 2/4 queries  2.0 q/s  ETA 1s"
                                 + CLEAR_LINE + "[s] 4/4 queries  2.0 q/s  in 2s" + CLEAR_LINE)


def test_progress_on_a_dumb_terminal_is_plain_lines():
    stream = io.StringIO()
    line = ProgressLine(stream, dumb=True, clock=clock([float(i) for i in range(9)]))
    for done in range(1, 9):
        line("s", done, 8)
    line.finish()
    text = stream.getvalue()
    assert "\033" not in text and "\r" not in text
    # a quarter of the way each time: 2, 4, 6 and 8 of 8 (clock 0..7 s from the first call)
    assert text.splitlines() == ["[s] 2/8 queries  2.0 q/s  ETA 3s", "[s] 4/8 queries  1.3 q/s  ETA 3s",
                                 "[s] 6/8 queries  1.2 q/s  ETA 2s", "[s] 8/8 queries  1.1 q/s  in 7s"]


# --- program name, did you mean, the `--` hint -------------------------------------------------

def run_cli(args, argv0=None, env=None, cwd=None):
    """The run command in a real interpreter; `argv0` stands in for how it was launched."""
    if argv0 is None:
        command = [sys.executable, "-m", "harness", *args]
    else:
        code = (f"import sys; sys.argv[0] = {argv0!r}; from harness.commands.cli import main; "
                "sys.exit(main(sys.argv[1:]))")
        command = [sys.executable, "-c", code, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, **(env or {})), cwd=cwd)


def test_usage_and_errors_name_python_m_harness_when_run_so():
    completed = run_cli(["--basline", "b.json"])
    assert completed.returncode == 2
    assert completed.stderr.startswith("usage: python -m harness ")
    assert "python -m harness: error: unrecognized arguments: --basline b.json" in completed.stderr
    assert completed.stderr.rstrip().endswith("hint: --basline: did you mean --baseline?")


def test_usage_names_the_console_script_when_run_so():
    completed = run_cli(["--help"], argv0="/usr/local/bin/retrieval-gate")
    assert completed.returncode == 0
    assert completed.stdout.startswith("usage: retrieval-gate ")
    assert "  retrieval-gate --set all " in completed.stdout  # the examples too
    assert "python -m harness" not in completed.stdout
    sub = run_cli(["sets", "--bogus"], argv0="/usr/local/bin/retrieval-gate")
    assert "retrieval-gate sets: error:" in sub.stderr


def test_a_mistyped_subcommand_gets_a_suggestion():
    completed = run_cli(["stes", "list"])
    assert completed.returncode == 2
    assert completed.stderr.rstrip().endswith("hint: stes: did you mean the subcommand sets?")


def test_adapter_command_without_the_separator_gets_the_hint():
    completed = run_cli(["--adapter", "./my-adapter", "--index", "prod"])
    assert completed.returncode == 2
    assert completed.stderr.rstrip().endswith(
        "hint: put '--' between --adapter and the adapter command: --adapter -- ./my-adapter --index prod")


def test_program_name_helper(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/repo/harness/__main__.py"])
    assert arguments.program_name("sets") == "python -m harness sets"
    monkeypatch.setattr(sys, "argv", ["/venv/bin/retrieval-gate"])
    assert arguments.program_name() == "retrieval-gate"
    monkeypatch.setattr(sys, "argv", ["/something/else.py"])
    assert arguments.program_name() == "retrieval-gate"


# --- a real run: colour, --quiet with --update-baseline, the closing verdict ------------------

@pytest.fixture
def scripted_run(tmp_path):
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(GOOD))
    budgets = tmp_path / "budgets.json"
    budgets.write_text(json.dumps({"format": 1, "default_p95_ms": 60000}))

    def run(*extra, env=None):
        return run_cli(["--set", str(TINY_SET), "--out", str(tmp_path / "r.json"), "--budgets", str(budgets),
                        "--baseline", str(tmp_path / "baseline.json"), *extra,
                        "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)],
                       env={"SCRIPTED_ANSWERS": str(answers), **(env or {})})
    return run


def test_quiet_update_baseline_prints_nothing(scripted_run, tmp_path):
    completed = scripted_run("--update-baseline", "--quiet")
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "", "")
    assert (tmp_path / "baseline.json").exists()
    again = scripted_run("--update-baseline", "--quiet")  # with a previous baseline: no diff printed either
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_a_gated_run_ends_with_its_verdict_and_colours_only_when_asked(scripted_run):
    assert scripted_run("--update-baseline").returncode == 0
    plain = scripted_run()
    assert plain.returncode == 0 and "\033[" not in plain.stdout
    lines = plain.stdout.splitlines()
    # 8 gates on tiny: query count, recall overall / a / b, latency, the adapter's peak memory against the
    # baseline's (the scripted adapter prints no banner: no start-up, no index size), contract, judged; all pass
    assert lines[-1] == "PASSED: 8 gates"
    assert lines[-2].startswith("report: ")
    assert ("passed: 8 gates (query-count 1, recall 3, latency 1, memory-relative 1, contract 1, judged 1); -v lists "
            "them") in lines
    assert lines[0] == f"backend: {sys.executable} {SCRIPTED_ADAPTER} (no ready banner)"  # no `condition: None`
    assert "None" not in plain.stdout and plain.stderr == ""
    coloured = scripted_run("--color", "always")
    assert coloured.stdout.splitlines()[-1] == "\033[32mPASSED: 8 gates\033[0m"
    no_colour = scripted_run("--color", "auto", env={"NO_COLOR": "1"})
    assert "\033[" not in no_colour.stdout + no_colour.stderr


# --- on a real (pseudo-)terminal ---------------------------------------------------------------

def run_on_a_terminal(scripted_args, term, expect=0, **extra_env):
    """The run command with stdout and stderr on a pseudo-terminal, as a user at a shell sees it."""
    code, text = on_a_terminal(scripted_args, term, **extra_env)
    assert code == expect
    return text


@pytest.fixture
def terminal_argv(tmp_path):
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(GOOD))
    return [sys.executable, "-c",
            f"import os; os.environ['SCRIPTED_ANSWERS'] = {str(answers)!r}; "
            "from harness.commands.cli import main; import sys; sys.exit(main(sys.argv[1:]))",
            "--set", str(TINY_SET), "--no-gate", "--out", str(tmp_path / "r.json"),
            "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)]


def test_a_terminal_gets_colour_and_a_live_progress_line(terminal_argv):
    text = run_on_a_terminal(terminal_argv, "xterm-256color")
    assert CLEAR_LINE + "[tiny] 7/7 queries" in text and " q/s  in " in text
    assert "\033[32mMEASURED: 7 queries in 1 set, not gated\033[0m" in text


def test_a_dumb_terminal_gets_plain_progress_lines_and_no_escapes(terminal_argv):
    text = run_on_a_terminal(terminal_argv, "dumb")
    assert "\033" not in text
    assert "[tiny] 7/7 queries" in text and " q/s  in " in text
    assert text.replace("\r\n", "\n").rstrip().endswith("MEASURED: 7 queries in 1 set, not gated")


def test_a_crash_on_a_terminal_shows_tables_then_the_error_then_the_verdict(terminal_argv):
    text = run_on_a_terminal(terminal_argv, "dumb", expect=3, SCRIPTED_CRASH_AFTER="3").replace("\r\n", "\n")
    tables = text.index("set tiny (revision 1, 7 queries, k=10)  INCOMPLETE (3 of 7 answered)")
    error = text.index("harness: error: query tiny-04: ")
    verdict = text.index("INCOMPLETE: the backend failed after 3 of 7 queries; no gate was checked (exit 3)")
    assert tables < error < verdict and text.rstrip().endswith("(exit 3)")
    assert "simulated crash" in text[error:verdict]  # the adapter's stderr tail, with the error
