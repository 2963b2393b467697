"""Hostile text stays text: a real adapter (tests/fixtures/cli_adapters/hostile.py) whose banner,
progress stages, stderr and error replies carry terminal escapes and Markdown injection, and a set
whose category does too, run through the real CLI (`--summary`, `$GITHUB_STEP_SUMMARY`, `merge
--summary`, `check-adapter`), on pipes and on a pseudo-terminal. The summaries are rendered by
GitHub's own renderer (tests/gfm.py): no image, link or heading of theirs; every piece of their
text inside its code span, fence or cell. The terminal gets no control but our colours and our
progress line's redraw."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.gfm import assert_valid_gfm, rendered
from tests.process_helpers import on_a_terminal

HOSTILE = FIXTURES / "cli_adapters" / "hostile.py"
CATEGORY = "b ![c](http://127.0.0.1:9/c.png) <b>x</b> | [y](http://127.0.0.1:9/)"
# What we print ourselves: SGR colours, and the progress line's "\r, erase line".
OURS = re.compile(r"\x1b\[[0-9;]*m|\r\x1b\[K")
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture
def hostile_set(tiny_copy: Path) -> Path:
    """The tiny set with category b renamed to CATEGORY (judgments change; pins do not)."""
    queries = tiny_copy / "queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if row.get("category") == "b":
            row["category"] = CATEGORY
    queries.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return tiny_copy


def harness(*args: str, mode: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, "HOSTILE_MODE": mode, **(env or {})})


def run_argv(hostile_set: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["--set", str(hostile_set), "--no-gate", "--expect-banner", "--out", str(tmp_path / "r.json"), *extra,
            "--adapter", "--", sys.executable, str(HOSTILE)]


def assert_inert_summary(markdown: str):
    """GitHub shows our headings, tables, code and fence only; returns the rendered page."""
    assert_valid_gfm(markdown)
    assert not CONTROLS.search(markdown)
    page = rendered(markdown)
    assert not page.find_all("img") and not page.find_all("a") and not page.find_all("b")
    headings = [h.text() for h in page.walk() if h.tag in ("h1", "h2", "h3", "h4", "h5", "h6")]
    ours = ("retrieval-gate: ", "set tiny ", "Metrics", "Failures", "Warnings", "Gated values", "Improvements",
            "Categories of ", "Resources")
    assert headings and all(h.startswith(ours) for h in headings), headings
    assert not [h for h in headings if "gates passed" in h.lower()]  # no planted verdict
    return page


def assert_banner_and_category_inert(markdown: str) -> None:
    """A complete run's summary: the banner's text in its code span, the category in its cell."""
    page = assert_inert_summary(markdown)
    backend = [c.text() for c in page.find_all("code") if "evil" in c.text()]
    # the banner's name, backticks and all, is one code span; its version's fake verdict stays in it
    assert len(backend) == 1 and "evil ``x`` ![pixel](http://127.0.0.1:9/p.png)" in backend[0]
    assert "\\x1b]0;PWNED\\x07" in backend[0] and "\\rPASSED: 7 gates\\r### All gates passed\\n" in backend[0]
    cells = [cell.text().strip() for cell in page.find_all("td")]
    assert CATEGORY in cells  # the category is one table cell, as written


def summary_of_a_run(hostile_set, tmp_path, mode: str, exit_code: int) -> str:
    """The --summary of a run with the hostile adapter in `mode`, checked equal to $GITHUB_STEP_SUMMARY's."""
    step_summary = tmp_path / "step-summary.md"
    completed = harness(*run_argv(hostile_set, tmp_path, "--summary", str(tmp_path / "s.md")), mode=mode,
                        env={"GITHUB_STEP_SUMMARY": str(step_summary)})
    assert completed.returncode == exit_code, completed.stderr
    markdown = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert step_summary.read_text(encoding="utf-8") == markdown
    return markdown


def test_summary_and_step_summary_keep_a_banner_and_a_category_inert(hostile_set, tmp_path):
    assert_banner_and_category_inert(summary_of_a_run(hostile_set, tmp_path, "answer", 0))


def test_summary_keeps_an_error_reply_and_a_stderr_tail_inert(hostile_set, tmp_path):
    page = assert_inert_summary(summary_of_a_run(hostile_set, tmp_path, "error", 3))
    # the error reply (quoted on the error line) and the stderr tail, five backticks and all, in the fence
    error = next(p.text() for p in page.find_all("p") if p.text().startswith("Error:"))
    assert "adapter answered with an error: 'no index\\r### All gates passed\\n``x``" in error
    fenced = [pre.text() for pre in page.find_all("pre")]
    assert len(fenced) == 1
    assert "\n  | `````\n  | ### All gates passed\n" in fenced[0]
    assert "  | loading\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[H" in fenced[0]
    assert "\n  | \\x9b31mred\n" in fenced[0] + "\n"


def test_merge_summary_keeps_a_shards_text_inert(hostile_set, tmp_path):
    shard = tmp_path / "shard.json"
    completed = harness("--set", str(hostile_set), "--shard", "1/1", "--expect-banner", "--out", str(shard),
                        "--adapter", "--", sys.executable, str(HOSTILE), mode="answer")
    assert completed.returncode == 0, completed.stderr
    merged = harness("merge", str(shard), "--out", str(tmp_path / "m.json"), "--no-gate",
                     "--sets-dir", str(hostile_set.parent), "--summary", str(tmp_path / "m.md"), mode="answer")
    assert merged.returncode == 0, merged.stderr
    assert_banner_and_category_inert((tmp_path / "m.md").read_text(encoding="utf-8"))
    assert not CONTROLS.search(merged.stdout) and merged.stderr == ""
    assert "backend: " in merged.stdout and "\\x1b]0;PWNED\\x07" in merged.stdout


def assert_inert_terminal(text: str) -> str:
    """Everything the terminal got, without our own sequences: no control but newlines; returned."""
    shown = OURS.sub("", text.replace("\r\n", "\n"))
    assert not CONTROLS.search(shown), CONTROLS.findall(shown)
    assert "PWNED\x07" not in text and "\x1b]" not in text and "\x1b[2J" not in text
    assert not [line for line in shown.splitlines() if line.startswith(("PASSED", "###"))]
    return shown


def test_a_terminal_shows_an_adapters_escapes_as_text(hostile_set, tmp_path):
    code, text = on_a_terminal([sys.executable, "-m", "harness", *run_argv(hostile_set, tmp_path)], "xterm-256color",
                               HOSTILE_MODE="answer")
    assert code == 0
    assert "\033[32m" in text  # colour is on: this is the terminal a user sees
    shown = assert_inert_terminal(text)
    # the start-up progress stage and the banner: each escaped, where it was
    assert "index\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[H\\x9b31m" in shown
    assert "backend: " in shown and "(evil ``x`` ![pixel](http://127.0.0.1:9/p.png)" in shown
    assert shown.rstrip().endswith("MEASURED: 7 queries in 1 set, not gated")
    code, text = on_a_terminal([sys.executable, "-m", "harness", *run_argv(hostile_set, tmp_path)], "xterm-256color",
                               HOSTILE_MODE="error")
    assert code == 3
    shown = assert_inert_terminal(text)
    # the error reply and the stderr tail
    assert "adapter answered with an error: 'no index\\r### All gates passed\\n" in shown
    assert "  | loading\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[H\n" in shown
    assert shown.rstrip().endswith("INCOMPLETE: the backend failed after 0 of 7 queries; no gate was checked (exit 3)")


def test_a_ci_log_gets_no_control_from_an_adapter(hostile_set, tmp_path):
    completed = harness(*run_argv(hostile_set, tmp_path, "--color", "never"), mode="error")
    assert completed.returncode == 3
    for stream in (completed.stdout, completed.stderr):
        assert_inert_terminal(stream)
    assert "\nharness: error: query tiny-01: adapter answered with an error: 'no index\\r### " in completed.stderr
    answered = harness(*run_argv(hostile_set, tmp_path, "--color", "never"), mode="answer")
    assert answered.returncode == 0
    assert_inert_terminal(answered.stdout + answered.stderr)
    assert [line for line in answered.stdout.splitlines() if line.startswith(f"  {CATEGORY}  ")]  # its table row


def test_check_adapter_shows_an_adapters_escapes_as_text(tmp_path):
    code, text = on_a_terminal([sys.executable, "-m", "harness", "check-adapter", "--queries", "3",
                                "--log", str(tmp_path / "check.log"), "--", sys.executable, str(HOSTILE)],
                               "xterm-256color", HOSTILE_MODE="error")
    assert code == 1
    shown = assert_inert_terminal(text)
    assert "index\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[H\\x9b31m" in shown  # the start-up bar's stage
    assert "ready after" in shown and "evil ``x``" in shown and "\\x1b]0;PWNED\\x07" in shown  # banner check
    assert "  | loading\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[H\n" in shown  # the stderr tail


def test_sets_show_and_list_show_a_sets_escapes_as_text(tiny_copy):
    meta = json.loads((tiny_copy / "set.json").read_text(encoding="utf-8"))
    meta["description"] = "tiny\x1b]0;PWNED\x07\x1b[2J"
    (tiny_copy / "set.json").write_text(json.dumps(meta), encoding="utf-8")
    queries = tiny_copy / "queries.jsonl"
    queries.write_text(queries.read_text(encoding="utf-8").replace('"category": "b"', '"category": "b\\u001b[2J"'),
                       encoding="utf-8")
    shown = harness("sets", "show", str(tiny_copy), mode="answer")
    assert shown.returncode == 0, shown.stderr
    assert_inert_terminal(shown.stdout)
    assert "  tiny\\x1b]0;PWNED\\x07\\x1b[2J\n" in shown.stdout and "b\\x1b[2J " in shown.stdout
    listed = harness("sets", "--sets-dir", str(tiny_copy.parent), "list", mode="answer")
    assert listed.returncode == 0, listed.stderr
    assert_inert_terminal(listed.stdout)
    assert "tiny\\x1b]0;PWNED\\x07\\x1b[2J" in listed.stdout
