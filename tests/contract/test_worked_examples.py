"""Every command has one worked example (docs/commands.md, "Commands"), the same in that table, its
--help and WORKED_EXAMPLES, and each works.

The examples are run for real, in the table's order, as real `python -m harness`
subprocesses in a scratch folder holding a copy of the shipped sets (so `sets pin` writes
nothing of ours), the committed baselines and budgets, and a BEIR folder where the
import-beir example looks for one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands import cli
from harness.commands.arguments import EXIT_CODES, WORKED_EXAMPLES, example_line
from harness.commands.sets import build_parser as build_sets_parser
from tests.conftest import FIXTURES, REPO_ROOT

ROW = re.compile(r"^\| (?P<command>[a-z -]+) \| `(?P<line>[^`]+)` \| (?P<what>.+) \|$")


def docs_rows() -> dict[str, tuple[str, str]]:
    """The rows of the table in docs/commands.md's "Commands" section, in their order."""
    text = (REPO_ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    section = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    return {m["command"]: (m["line"], m["what"]) for m in map(ROW.match, section.splitlines()) if m}


def sets_actions() -> set[str]:
    parser = build_sets_parser()
    choices = next(action.choices for action in parser._actions if action.dest == "action")
    return set(choices)


def test_every_command_and_every_sets_action_has_an_example():
    commands = (set(EXIT_CODES) - {"sets"}) | {f"sets {action}" for action in sets_actions()}
    assert set(WORKED_EXAMPLES) == commands


def test_the_docs_table_is_the_worked_examples():
    assert list(docs_rows().items()) == list(WORKED_EXAMPLES.items())  # the same rows, in the same order


@pytest.mark.parametrize("command", sorted(WORKED_EXAMPLES))
def test_help_shows_the_commands_example(command, capsys):
    line, what = WORKED_EXAMPLES[command]
    argv = line.split()[3:3 + command.count(" ") + 1] if command != "run" else []
    try:
        code = cli.main([*argv, "--help"])
    except SystemExit as stopped:  # the run's parser exits; subcommands return their code
        code = stopped.code
    assert code == 0
    shown = capsys.readouterr().out
    line = example_line(line)  # as the user started us: `retrieval-gate` here, called as a library
    assert f"example:\n  {line}\n" in shown
    described = shown.split(f"example:\n  {line}\n", 1)[1].split("\n\n", 1)[0]  # wrapped under the line
    assert described.split() == what.split()


def harness(argv: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HOME": str(home),
                   "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))}
    environment.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=environment, text=True, capture_output=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_every_example_works_in_the_readmes_order(tmp_path):
    work, home = tmp_path / "clone", tmp_path / "home"
    work.mkdir()
    shutil.copytree(REPO_ROOT / "sets", work / "sets",
                    ignore=shutil.ignore_patterns("code", "code-agent", "wiki", "*-hard"))
    shutil.copytree(REPO_ROOT / "baselines", work / "baselines")
    shutil.copy(REPO_ROOT / "budgets.json", work / "budgets.json")
    shutil.copytree(FIXTURES / "beir", home / "beir" / "scifact")
    pinned = (work / "sets" / "memory" / "set.json").read_bytes()

    def run(argv: list[str]) -> subprocess.CompletedProcess:
        done = harness(argv, work, home)
        assert done.returncode == 0, (argv, done.returncode, done.stdout[-2000:], done.stderr[-2000:])
        return done

    for command, (line, _) in WORKED_EXAMPLES.items():
        if command == "merge":  # the two shard runs the example combines
            for shard in ("1/2", "2/2"):
                run(["-m", "harness", "--set", "memory", "--shard", shard, "--out", f"shard-{shard[0]}.json"])
        if command == "bisect":  # the folder as a repository of two commits, HEAD~1 and HEAD
            for git in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"], ["commit", "-qm", "two", "--allow-empty"]):
                subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *git], cwd=work,
                               check=True, capture_output=True)
        argv = [os.path.expanduser(part).replace(str(Path.home()), str(home)) if part.startswith("~") else part
                for part in shlex.split(line)[1:]]
        done = run(argv)
        if command == "run":
            report = json.loads((work / "memory.json").read_text(encoding="utf-8"))
            assert report["sets"][0]["name"] == "memory" and (work / "memory.md").is_file()
        elif command == "export":
            assert (work / "memory.run").stat().st_size > 0 and (work / "memory.qrels").stat().st_size > 0
        elif command == "sets pin":  # nothing changed, so nothing moved
            assert (work / "sets" / "memory" / "set.json").read_bytes() == pinned
        elif command == "sets import-beir":
            assert (work / "sets" / "scifact" / "set.json").is_file()
        elif command == "sets export-corpus":
            assert len((work / "corpus" / "memory.jsonl").read_text(encoding="utf-8").splitlines()) == 50
        elif command == "compare":
            assert done.stdout.startswith("VERDICT:") and (work / "compare.md").is_file()
        elif command == "merge":
            merged = json.loads((work / "merged.json").read_text(encoding="utf-8"))
            assert len(merged["sets"][0]["queries"]) == len(report["sets"][0]["queries"])
        elif command == "sets list":  # the team's two, then the shipped ones (two of them shadowed)
            shipped = sorted(path.parent.name for path in (REPO_ROOT / "sets").glob("*/set.json"))
            assert [line.split()[0] for line in done.stdout.splitlines()[1:]] == ["dedupe", "memory", *shipped]
        elif command == "bisect":
            assert "no change detectable between" in done.stdout and done.stdout.endswith("gate runs: 2\n")
        elif command == "history":
            assert done.stdout == "history.sqlite: 1 run and 0 accepted baselines added\n"
        elif command == "init":
            assert (work / "my-team" / "retrieval-gate.toml").is_file()
            assert (work / "my-team" / "sets" / "example" / "set.json").is_file()
