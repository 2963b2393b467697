"""The console output of a real `python -m harness` run on the tiny set, against golden files,
with the volatile fields (latencies, start-up seconds, temporary paths) replaced by placeholders."""

import json
import re
import subprocess
import sys

from tests.conftest import SCRIPTED_ADAPTER, TINY_SET
from tests.golden import assert_matches_golden
from tests.reports import GOOD

# (pattern, placeholder): every field of the console text that differs between two identical runs
VOLATILE = [
    (re.compile(r"latency ms: p50 [\d.]+  p95 [\d.]+  max [\d.]+"), "latency ms: p50 <ms>  p95 <ms>  max <ms>"),
    (re.compile(r"latency ms: p50 [\d.]+ \(baseline [\d.]+\)  p95 [\d.]+ \(baseline [\d.]+\)  max [\d.]+"),
     "latency ms: p50 <ms> (baseline <ms>)  p95 <ms> (baseline <ms>)  max <ms>"),
    (re.compile(r"p95 latency [\d.]+ ms"), "p95 latency <ms> ms"),
    (re.compile(r"adapter startup: [\d.]+ s"), "adapter startup: <s> s"),
    (re.compile(r"[\d.]+ MiB"), "<mib> MiB"),  # the adapter's peak memory (docs/gate.md, "Resource budgets")
    (re.compile(r"recorded \d{4}-\d\d-\d\dT[\d:]+\+00:00"), "recorded <time>"),
    (re.compile(r" at [0-9a-f]{12}\)"), " at <commit>)"),
]


def scrub(text: str, tmp: str) -> str:
    text = text.replace(tmp, "<tmp>").replace(sys.executable, "<python>").replace(str(SCRIPTED_ADAPTER), "<adapter>")
    for pattern, placeholder in VOLATILE:
        text = pattern.sub(placeholder, text)
    return text


def run(tmp_path, answers, *extra):
    answers_path = tmp_path / "answers.json"
    answers_path.write_text(json.dumps(answers))
    budgets = tmp_path / "budgets.json"
    budgets.write_text(json.dumps({"format": 1, "default_p95_ms": 60000}))
    return subprocess.run(
        [sys.executable, "-m", "harness", "--set", str(TINY_SET), "--out", str(tmp_path / "r.json"),
         "--budgets", str(budgets), "--baseline", str(tmp_path / "baseline.json"), "--color", "never", *extra,
         "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**__import__("os").environ, "SCRIPTED_ANSWERS": str(answers_path)})


def test_console_of_a_real_failing_run(tmp_path):
    assert run(tmp_path, GOOD, "--update-baseline", "--yes").returncode == 0
    worse = dict(GOOD, **{"how is the config file parsed": ["doc-02"]})
    completed = run(tmp_path, worse)
    assert completed.returncode == 1 and completed.stderr == ""
    text = scrub(completed.stdout, str(tmp_path))
    assert_matches_golden("run-failing.txt", text)
    lines = text.splitlines()
    # By hand: tiny-01 loses its only relevant document: overall 5/5 -> 4/5, category a 3/3 -> 2/3;
    # the verdict names the set-level figure.
    # 8 gates: query count, recall overall and per category (the warning), latency, the peak memory against the
    # baseline's (the scripted adapter prints no banner: no start-up or index figure), contracts, judged coverage
    assert lines[-1] == "FAILED: 1 of 8 gates (worst: tiny overall recall@10 -20.0 points), 1 warning"
    # category a's loss is tiny-01's alone: one query's noise, a warning in its set's table
    assert "WARN a         recall@10     1.000     0.667  -33.3 pts" in lines
    assert lines[-2] == "report: <tmp>/r.json  adapter log: <tmp>/r.adapter.log"
    assert [line.split()[:2] for line in lines if line.startswith(("FAIL ", "PASS "))] == [["FAIL", "recall"]]
    assert ("passed: 6 gates (query-count 1, recall 1, latency 1, memory-relative 1, contract 1, judged 1); "
            "-v lists them") in lines
    assert "resources: peak RSS <mib> MiB (baseline <mib> MiB); the baseline's measured in another run" in lines


def test_console_of_a_real_crash(tmp_path):
    import os
    answers_path = tmp_path / "answers.json"
    answers_path.write_text(json.dumps(GOOD))
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "--set", str(TINY_SET), "--out", str(tmp_path / "r.json"), "--no-gate",
         "--color", "never", "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, "SCRIPTED_ANSWERS": str(answers_path), "SCRIPTED_CRASH_AFTER": "3"})
    assert completed.returncode == 3
    text = scrub(completed.stdout, str(tmp_path))
    assert_matches_golden("run-crashed.txt", text)
    assert text.splitlines()[-1] == "INCOMPLETE: the backend failed after 3 of 7 queries; no gate was checked (exit 3)"
    assert "queries: 3 pass" in text.splitlines()
    assert completed.stderr.startswith("harness: error: query tiny-04: ")
