"""Exit codes end to end (docs/commands.md, "Exit codes"): 1 means a gate failed and nothing else.

Proves: every command's bad input is its documented code with one error line and no
traceback (real `python -m harness` subprocesses); a bug anywhere is one
`harness: internal error:` line, exit EXIT_INTERNAL, the traceback in a file and, for a run,
a partial report; a closed stdout ends quietly; the docs table, the --help epilogs and
EXIT_CODES say the same thing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands import cli, outputs, run
from harness.commands.arguments import EXIT_CODES, SUBCOMMANDS, exit_codes_epilog
from harness.errors import EXIT_BACKEND, EXIT_CONFIG, EXIT_GATE_FAILED, EXIT_INTERNAL, EXIT_OK
from tests.conftest import REPO_ROOT, FIXTURES, SCRIPTED_ADAPTER, TINY_SET

ROOT = REPO_ROOT
REPORT = FIXTURES / "reports" / "written-by-0.1.0-fcbe801.json"
INTERNAL_LINE = re.compile(r"^harness: internal error: \w+: .* \(a bug: please report it; traceback in (.+)\)$")


def harness(*argv: str, cwd: Path = ROOT, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """`python -m harness ARGV` as a user runs it, importing this worktree's harness."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environment.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=cwd, env=environment, text=True,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL, **kwargs)


def test_internal_code_is_none_of_the_verdicts():
    assert EXIT_INTERNAL not in (EXIT_OK, EXIT_GATE_FAILED, EXIT_CONFIG, EXIT_BACKEND)
    assert EXIT_INTERNAL < 128  # never mistaken for a signal


# -- one home for the words: EXIT_CODES <-> docs/commands.md <-> --help --------------------------

def docs_table() -> set[tuple[str, str]]:
    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    section = text.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    pairs = set()
    for command, code in re.findall(r"^\| `([^`]+)`[^|]* \| `([^`]+)` \|", section, flags=re.MULTILINE):
        pairs.add(("run" if command == "python -m harness" else command, code))
    return pairs


def test_docs_table_matches_exit_codes():
    expected = {(command, code) for command, codes in EXIT_CODES.items() for code in codes}
    assert docs_table() == expected


def test_every_command_is_in_the_table():
    assert set(EXIT_CODES) == {"run", *SUBCOMMANDS}


@pytest.mark.parametrize("command", sorted(EXIT_CODES))
def test_help_epilog_lists_exit_codes(command, capsys):
    argv = ["--help"] if command == "run" else [command, "--help"]
    assert cli.main(argv) == 0
    shown = " ".join(capsys.readouterr().out.split())  # argparse may rewrap; compare words
    assert " ".join(exit_codes_epilog(command).split()) in shown
    for code, meaning in EXIT_CODES[command].items():
        assert f"{code} {' '.join(meaning.split())}" in shown


# -- bad input: every command, real subprocesses --------------------------------------------------

@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bad")
    garbage = folder / "garbage.json"
    garbage.write_text("{not json", encoding="utf-8")
    not_report = folder / "list.json"
    not_report.write_text("[1, 2]", encoding="utf-8")
    broken_set = folder / "sets" / "broken"
    shutil.copytree(TINY_SET, broken_set)
    (broken_set / "queries.jsonl").write_text('{"qid": "x", "query": 1}\n', encoding="utf-8")
    incomplete = folder / "incomplete.json"
    document = json.loads(REPORT.read_text(encoding="utf-8"))
    document["complete"] = False
    incomplete.write_text(json.dumps(document), encoding="utf-8")
    return {"garbage": garbage, "list": not_report, "broken_set": broken_set, "incomplete": incomplete,
            "missing": folder / "missing.json", "out": folder / "out" / "r.json", "folder": folder}


ARGPARSE = "argparse"  # the error is argparse's: `usage: ...` then `PROG: error: ...`
BAD_INPUTS = [
    # (id, argv with {placeholders}, expected code, error style)
    ("run-unknown-option", ["--bogus"], 2, ARGPARSE),
    ("run-missing-set", ["--set", "{missing}", "--no-gate", "--out", "{out}"], 2, "harness"),
    ("run-malformed-set", ["--set", "{broken_set}", "--no-gate", "--out", "{out}"], 2, "harness"),
    ("run-malformed-budgets", ["--set", str(TINY_SET), "--no-gate", "--budgets", "{garbage}", "--out", "{out}"],
     2, "harness"),
    ("run-malformed-baseline", ["--set", str(TINY_SET), "--baseline", "{garbage}", "--out", "{out}"], 2, "harness"),
    ("run-bad-k", ["--set", str(TINY_SET), "--no-gate", "--k", "0", "--out", "{out}"], 2, "harness"),
    ("run-bad-number", ["--set", str(TINY_SET), "--timeout", "soon"], 2, ARGPARSE),
    ("run-missing-run-file", ["--set", str(TINY_SET), "--no-gate", "--run-file", "{missing}", "--out", "{out}"],
     2, "harness"),
    ("run-missing-adapter", ["--set", str(TINY_SET), "--no-gate", "--out", "{out}", "--adapter", "--",
                             "/nonexistent/adapter"], 2, "harness"),
    ("sets-unknown-action", ["sets", "frobnicate"], 2, ARGPARSE),
    ("sets-missing-set", ["sets", "show", "{missing}"], 2, "harness"),
    ("sets-malformed-set", ["sets", "verify", "{broken_set}"], 2, "harness"),
    ("sets-missing-beir", ["sets", "--sets-dir", "{folder}", "import-beir", "{missing}", "--name", "x"], 2,
     "harness"),
    ("metrics-unknown-option", ["metrics", "--bogus"], 2, ARGPARSE),
    ("metrics-extra-argument", ["metrics", "recall"], 2, ARGPARSE),
    ("metrics-short-option", ["metrics", "-x"], 2, ARGPARSE),
    ("check-adapter-no-command", ["check-adapter"], 2, "harness"),
    ("check-adapter-unknown-option", ["check-adapter", "--bogus", "--", "true"], 2, ARGPARSE),
    ("check-adapter-bad-queries", ["check-adapter", "--queries", "0", "--", "true"], 2, "harness"),
    ("check-adapter-bad-kind", ["check-adapter", "--kind", "../x", "--", "true"], 2, "harness"),
    ("check-adapter-missing-set", ["check-adapter", "--set", "{missing}", "--", "true"], 2, "harness"),
    ("compare-unknown-option", ["compare", str(REPORT), str(REPORT), "--bogus"], 2, ARGPARSE),
    ("compare-missing-file", ["compare", "{missing}", str(REPORT)], 2, "harness"),
    ("compare-malformed-file", ["compare", str(REPORT), "{garbage}"], 2, "harness"),
    ("compare-bad-resamples", ["compare", str(REPORT), str(REPORT), "--resamples", "0"], 2, "harness"),
    ("compare-bad-metric", ["compare", str(REPORT), str(REPORT), "--metric", "nosuch@10"], 2, "harness"),
    ("export-unknown-option", ["export", str(REPORT), "--bogus"], 2, ARGPARSE),
    ("export-no-output", ["export", str(REPORT)], 2, "harness"),
    ("export-missing-file", ["export", "{missing}", "--trec-run", "{folder}/run.txt"], 2, "harness"),
    ("export-malformed-file", ["export", "{list}", "--trec-run", "{folder}/run.txt"], 2, "harness"),
    ("export-incomplete", ["export", "{incomplete}", "--trec-run", "{folder}/run.txt"], 2, "harness"),
    ("baselines-unknown-option", ["baselines", "--bogus"], 2, ARGPARSE),
    ("baselines-missing-file", ["baselines", "{missing}"], 2, "harness"),
    ("baselines-malformed-file", ["baselines", "{garbage}"], 2, "harness"),
    ("baselines-wrong-file", ["baselines", "{list}"], 2, "harness"),
    ("baselines-diff-missing-file", ["baselines", "diff", str(ROOT / "baselines/current.json"), "{missing}"], 2,
     "harness"),
    ("baselines-diff-malformed-file", ["baselines", "diff", "{garbage}", str(ROOT / "baselines/current.json")], 2,
     "harness"),
    ("baselines-diff-one-file", ["baselines", "diff", str(ROOT / "baselines/current.json")], 2, ARGPARSE),
    ("merge-unknown-option", ["merge", str(REPORT), "--out", "{out}", "--bogus"], 2, ARGPARSE),
    ("merge-no-out", ["merge", str(REPORT)], 2, ARGPARSE),
    ("merge-missing-file", ["merge", "{missing}", "--out", "{out}"], 2, "harness"),
    ("merge-malformed-file", ["merge", "{garbage}", "--out", "{out}"], 2, "harness"),
    ("merge-not-a-shard", ["merge", str(REPORT), "--out", "{out}", "--no-gate"], 2, "harness"),
    ("init-unknown-option", ["init", "--bogus"], 2, ARGPARSE),
    ("init-two-folders", ["init", "{folder}/a", "{folder}/b"], 2, ARGPARSE),
    ("init-unwritable-folder", ["init", "{garbage}/team"], 2, "harness"),
    ("history-unknown-option", ["history", "--bogus"], 2, ARGPARSE),
    ("history-not-a-store", ["history", "--history", "{garbage}"], 2, "harness"),
    ("history-missing-store", ["history", "drift", "--history", "{missing}"], 2, "harness"),
    ("history-import-nothing", ["history", "import", "--history", "{out}"], 2, "harness"),
    ("history-import-malformed-report", ["history", "import", "{garbage}", "--history", "{out}"], 2, "harness"),
    ("bisect-unknown-option", ["bisect", "a", "b", "--bogus", "--", "x"], 2, ARGPARSE),
    ("bisect-no-command", ["bisect", "HEAD~1", "HEAD", "--set", str(TINY_SET)], 2, "harness"),
    ("bisect-not-a-repository", ["bisect", "HEAD~1", "HEAD", "--set", str(TINY_SET), "--", "x"], 2, "harness"),
    ("bisect-malformed-set", ["bisect", "HEAD~1", "HEAD", "--set", "{broken_set}", "--", "x"], 2, "harness"),
    ("calibrate-unknown-option", ["calibrate", "--bogus"], 2, ARGPARSE),
    ("calibrate-one-run", ["calibrate", "--set", str(TINY_SET), "--runs", "1"], 2, "harness"),
    ("calibrate-malformed-baseline", ["calibrate", "--set", str(TINY_SET), "--baseline", "{garbage}"], 2, "harness"),
    ("calibrate-malformed-set", ["calibrate", "--set", "{broken_set}", "--baseline", "{garbage}"], 2, "harness"),
]


def test_bad_inputs_cover_every_command():
    per_command: dict[str, int] = {}
    for _, argv, _, _ in BAD_INPUTS:
        command = argv[0] if argv[0] in SUBCOMMANDS else "run"
        per_command[command] = per_command.get(command, 0) + 1
    assert set(per_command) == set(EXIT_CODES)
    assert min(per_command.values()) >= 3, per_command


@pytest.mark.parametrize("argv, code, style", [case[1:] for case in BAD_INPUTS], ids=[case[0] for case in BAD_INPUTS])
def test_bad_input_exit_code(argv, code, style, bad_files):
    places = {name: str(path) for name, path in bad_files.items()}
    result = harness(*(arg.format(**places) for arg in argv), cwd=bad_files["folder"])
    assert result.returncode == code, result.stderr
    assert str(code) in EXIT_CODES[argv[0] if argv[0] in SUBCOMMANDS else "run"]
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    if style == ARGPARSE:
        assert lines[0].startswith("usage: ")
        assert sum(": error: " in line for line in lines) == 1, result.stderr
        assert not any(line.startswith("harness: error:") for line in lines)
    else:
        assert [line for line in lines if line.startswith("harness: error:")] == lines[-1:], result.stderr
        assert len([line for line in lines if "error" in line]) == 1, result.stderr


# -- internal errors: in-process ------------------------------------------------------------------

def boom(*args, **kwargs):
    raise RuntimeError("a bug\nover two lines")


def test_run_internal_error_in_process(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run.api, "run_gate", boom)
    out = tmp_path / "o" / "report.json"
    code = cli.main(["--set", str(TINY_SET), "--no-gate", "--out", str(out)])
    assert code == EXIT_INTERNAL
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    match = INTERNAL_LINE.match(line)
    assert match and "RuntimeError: a bug over two lines" in line
    traceback_path = tmp_path / "o" / "report.traceback.txt"
    assert match.group(1) == str(traceback_path)
    assert "Traceback (most recent call last)" in traceback_path.read_text()
    report = json.loads(out.read_text())
    assert report["complete"] is False and report["exit_code"] == EXIT_INTERNAL
    assert report["error"] == line.removeprefix("harness: ")
    assert list(report["provenance"]["sets"]) == ["tiny"] and report["sets"] == []


def test_run_internal_error_while_writing_outputs(tmp_path, monkeypatch, capsys):
    """The bug is past the run (in a renderer): the report is still written, marked incomplete."""
    monkeypatch.setattr(outputs, "OUTPUTS", tuple((option, dest, text, boom if dest == "junit" else render)
                                                  for option, dest, text, render in outputs.OUTPUTS))
    out = tmp_path / "report.json"
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "cache"))  # cold, whatever this machine cached
    code = cli.main(["--set", str(TINY_SET), "--no-gate", "--out", str(out), "--junit", str(tmp_path / "j.xml")])
    assert code == EXIT_INTERNAL
    (line,) = without_progress(capsys.readouterr().err)
    assert INTERNAL_LINE.match(line)
    report = json.loads(out.read_text())
    assert (report["exit_code"], report["complete"]) == (EXIT_INTERNAL, False)
    assert [s["name"] for s in report["sets"]] == ["tiny"]  # the run had finished: its results are kept
    assert len(report["sets"][0]["queries"]) == 7


@pytest.mark.parametrize("command, module, name, argv", [
    ("sets", "harness.commands.sets", "list_sets", ["sets", "list"]),
    ("metrics", "harness.commands.metrics", "render", ["metrics"]),
    ("compare", "harness.commands.compare", "compare_many", ["compare", str(REPORT), str(REPORT)]),
    ("export", "harness.commands.export", "write_run", ["export", str(REPORT), "--trec-run", "run.txt"]),
    ("baselines", "harness.commands.baselines", "render_table", ["baselines", str(ROOT / "baselines/current.json")]),
    ("merge", "harness.commands.merge", "read_report", ["merge", str(REPORT), "--out", "m.json"]),
    ("check-adapter", "harness.commands.check_adapter", "_check", ["check-adapter", "--", "true"]),
])
def test_subcommand_internal_error_in_process(command, module, name, argv, tmp_path, monkeypatch, capsys):
    import importlib
    monkeypatch.setattr(importlib.import_module(module), name, boom)
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == EXIT_INTERNAL
    lines = capsys.readouterr().err.splitlines()
    # one internal-error line, the last (export may warn first about the unscored queries it writes)
    internal = [line for line in lines if INTERNAL_LINE.match(line)]
    assert len(internal) == 1 and lines[-1] == internal[0] and all(line.startswith("harness: ") for line in lines)
    line = internal[0]
    assert INTERNAL_LINE.match(line).group(1) == f".retrieval-gate/{command}.traceback.txt"
    assert "RuntimeError: a bug" in (tmp_path / ".retrieval-gate" / f"{command}.traceback.txt").read_text()


def test_unwritable_traceback_folder_still_one_line(tmp_path, monkeypatch, capsys):
    import harness.commands.metrics
    monkeypatch.setattr(harness.commands.metrics, "render", boom)
    (tmp_path / ".retrieval-gate").write_text("a file where the folder would go")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["metrics"]) == EXIT_INTERNAL
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("harness: internal error: RuntimeError: a bug") and "nowhere:" in line


def test_bug_in_a_thread_is_one_line_and_exit_internal(tmp_path, monkeypatch, capsys):
    """An exception escaping a helper thread: no "Exception in thread" traceback, exit 70."""
    import threading
    import harness.commands.metrics
    real_render = harness.commands.metrics.render

    def render_with_a_crashing_thread():
        worker = threading.Thread(target=boom)
        worker.start()
        worker.join()
        return real_render()

    monkeypatch.setattr(harness.commands.metrics, "render", render_with_a_crashing_thread)
    monkeypatch.chdir(tmp_path)
    hook_before = threading.excepthook
    assert cli.main(["metrics"]) == EXIT_INTERNAL
    (line,) = capsys.readouterr().err.splitlines()
    assert INTERNAL_LINE.match(line).group(1) == ".retrieval-gate/metrics.traceback.txt"
    assert threading.excepthook is hook_before  # restored for the rest of the process


# -- internal errors: real subprocesses, the bug injected by a sitecustomize shim --------------------

SHIM = '''\
import importlib
module = importlib.import_module({module!r})
def _bug(*args, **kwargs):
    raise KeyError("injected by the test's sitecustomize")
setattr(module, {name!r}, _bug)
'''


def shimmed(tmp_path: Path, module: str, name: str) -> dict[str, str]:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(SHIM.format(module=module, name=name))
    return {"PYTHONPATH": f"{shim}{os.pathsep}{ROOT}"}


def test_run_internal_error_subprocess(tmp_path):
    out = tmp_path / "ci" / "run.json"
    result = harness("--set", str(TINY_SET), "--no-gate", "--out", str(out), cwd=tmp_path,
                     env=shimmed(tmp_path, "harness.api", "run_gate"))
    assert result.returncode == EXIT_INTERNAL
    assert "Traceback" not in result.stderr + result.stdout
    (line,) = result.stderr.splitlines()
    assert INTERNAL_LINE.match(line).group(1) == str(tmp_path / "ci" / "run.traceback.txt")
    assert "KeyError" in (tmp_path / "ci" / "run.traceback.txt").read_text()
    report = json.loads(out.read_text())
    assert (report["complete"], report["exit_code"]) == (False, EXIT_INTERNAL)


def test_subcommand_internal_error_subprocess(tmp_path):
    result = harness("sets", "--sets-dir", str(ROOT / "sets"), "list", cwd=tmp_path,
                     env=shimmed(tmp_path, "harness.commands.sets", "list_sets"))
    assert result.returncode == EXIT_INTERNAL
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert INTERNAL_LINE.match(line).group(1) == ".retrieval-gate/sets.traceback.txt"
    assert (tmp_path / ".retrieval-gate" / "sets.traceback.txt").is_file()


# -- a closed stdout ------------------------------------------------------------------------------

def closed_pipe_run(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run with stdout a pipe nobody reads any more: the first write is a BrokenPipeError, every time.

    The BM25 cache is a fresh folder, so the adapter always builds its index and a start-up
    progress line always comes first on stderr (as on a fresh machine), whatever this machine cached.
    """
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=cwd, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(ROOT), "RETRIEVAL_GATE_CACHE": str(cwd / "cache")})
    finally:
        os.close(write_end)


def without_progress(stderr: str) -> list[str]:
    """stderr's lines but the start-up progress ones (`harness: starting: ...`), which a cold start
    prints before anything else and which say nothing about how the command ended."""
    return [line for line in stderr.splitlines() if not line.startswith("harness: starting: ")]


def test_closed_stdout_keeps_the_runs_exit_code(tmp_path):
    out = tmp_path / "r.json"
    result = closed_pipe_run("--set", str(TINY_SET), "--no-gate", "--out", str(out), cwd=tmp_path)
    assert (result.returncode, without_progress(result.stderr)) == (EXIT_OK, [])
    assert json.loads(out.read_text())["complete"] is True


def test_closed_stdout_keeps_a_failed_gate(tmp_path):
    from harness.sets.loader import load_set
    perfect = {q.query: list(q.relevant) for q in load_set(TINY_SET).queries}
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(perfect))
    adapter = ["--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)]
    env = {"SCRIPTED_ANSWERS": str(answers)}
    baseline, out = tmp_path / "baseline.json", tmp_path / "r.json"
    common = ["--set", str(TINY_SET), "--baseline", str(baseline), "--out", str(out)]
    assert harness(*common, "--update-baseline", "--yes", *adapter, cwd=tmp_path, env=env).returncode == 0
    answers.write_text(json.dumps({"*": []}))  # nothing found: recall@10 drops to 0
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "harness", *common, *adapter], cwd=tmp_path, stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    finally:
        os.close(write_end)
    assert result.returncode == EXIT_GATE_FAILED, result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    assert json.loads(out.read_text())["exit_code"] == EXIT_GATE_FAILED


@pytest.mark.parametrize("argv", [["metrics"], ["sets", "--sets-dir", str(ROOT / "sets"), "list"],
                                  ["baselines", str(ROOT / "baselines" / "current.json")]])
def test_closed_stdout_subcommand_ends_as_sigpipe(argv, tmp_path):
    result = closed_pipe_run(*argv, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (128 + 13, "")


def test_head_one_in_a_shell(tmp_path):
    """What the issue showed: `... | head -1` prints one line, no traceback, no "Exception ignored"."""
    command = (f"{sys.executable} -m harness --set {TINY_SET} --no-gate --out {tmp_path / 'r.json'} | head -1; "
               f"exit ${{PIPESTATUS[0]}}")
    result = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "RETRIEVAL_GATE_CACHE": str(tmp_path / "c")})
    assert result.returncode == EXIT_OK and len(result.stdout.splitlines()) == 1
    assert without_progress(result.stderr) == []


# -- signals reach every subcommand the same way ---------------------------------------------------

SLEEP_SHIM = '''\
import importlib, sys, time
module = importlib.import_module({module!r})
def _slow(*args, **kwargs):
    print("started", file=sys.stderr, flush=True)
    time.sleep(60)
setattr(module, {name!r}, _slow)
'''


@pytest.mark.parametrize("signame, code", [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
@pytest.mark.parametrize("argv, module, name", [
    (["metrics"], "harness.commands.metrics", "render"),
    (["compare", str(REPORT), str(REPORT)], "harness.commands.compare", "compare_many"),
])
def test_signal_during_a_subcommand(signame, code, argv, module, name, tmp_path):
    import signal
    from tests.process_helpers import default_signals
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(SLEEP_SHIM.format(module=module, name=name))
    process = subprocess.Popen([sys.executable, "-m", "harness", *argv], cwd=tmp_path, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals,
                               env={**os.environ, "PYTHONPATH": f"{shim}{os.pathsep}{ROOT}"})
    try:
        assert process.stderr.readline().strip() == "started"
        process.send_signal(getattr(signal, signame))
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == code
    assert err.splitlines() == [f"harness: error: interrupted by {signame}"]
