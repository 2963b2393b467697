"""Every command the harness prints for pasting does, pasted, what it says for the backend that ran
(harness/rerun.py): the IMPROVED re-baseline hint and the notice naming a set outside the baseline.

Printed without the adapter, `--baseline` or `--set`, they recorded the built-in BM25 into a team's
baseline when pasted in its repository. Here a team's adapter (the scripted one, its banner named
"scripted") runs in a team's folder through real `python -m harness` processes; each printed command
is taken from the output, pasted (run as a shell would split it, in the same folder) and its effect
read back from the baseline file.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, SCRIPTED_ADAPTER, TINY_SET

ADAPTER = [sys.executable, str(SCRIPTED_ADAPTER)]
# What the scripted adapter answers for the tiny set: every relevant document (GOOD), or tiny-03's missing (WORSE).
GOOD = {"how is the config file parsed": ["doc-01"], "retry backoff for failed requests": ["doc-02"],
        "do migrations roll back": ["doc-03"], "cache eviction policy": ["doc-04", "doc-05"],
        "where are Falcon secrets": ["doc-07"], "which log format wins": ["doc-06"]}
WORSE = {**GOOD, "do migrations roll back": []}


@pytest.fixture
def team(tmp_path: Path) -> Path:
    """A team's repository: the tiny set as `tiny` and `extra`, generous budgets, the scripted adapter's answers."""
    root = tmp_path / "team"
    (root / ".git").mkdir(parents=True)
    for name in ("tiny", "extra"):
        shutil.copytree(TINY_SET, root / "sets" / name)
        meta = json.loads((root / "sets" / name / "set.json").read_text())
        (root / "sets" / name / "set.json").write_text(json.dumps({**meta, "name": name}))
    (root / "budgets.json").write_text(json.dumps({"format": 1, "default_p95_ms": 60000}))
    return root


def harness(team: Path, *argv: str, answers: dict) -> subprocess.CompletedProcess:
    return paste(team, ["python", "-m", "harness", *argv], answers=answers)


def paste(team: Path, argv: list[str], *, answers: dict) -> subprocess.CompletedProcess:
    """`argv` run as typed in `team`: `python` is this interpreter, this checkout importable, stdin not a terminal."""
    script = team.parent / "answers.json"
    script.write_text(json.dumps(answers))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "SCRIPTED_ANSWERS": str(script), "SCRIPTED_BANNER": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    command = [sys.executable if argv[0] == "python" else argv[0], *argv[1:]]
    return subprocess.run(command, cwd=team, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=300)


def printed_command(text: str, lead: str) -> list[str]:
    """The command after `lead` on the line that holds it, split as a POSIX shell splits it."""
    line, = [line for line in text.splitlines() if lead in line]
    return shlex.split(line.split(lead, 1)[1].rstrip(")"))


def recorded(team: Path, baseline: str = "baselines/current.json") -> dict:
    return json.loads((team / baseline).read_text())


@pytest.mark.parametrize("how", ["options", "config"])
def test_the_improved_hint_pasted_re_baselines_with_the_teams_adapter(team, how):
    source = ["--adapter", "--expect-banner", "--", *ADAPTER] if how == "options" else []
    if how == "config":
        (team / "retrieval-gate.toml").write_text(f"adapter = {json.dumps(ADAPTER)}\nexpect_banner = true\n")
    done = harness(team, "--set", "tiny", "--baseline", "quality.json", "--update-baseline", "--yes", *source,
                   answers=WORSE)
    assert done.returncode == 0, done.stderr
    done = harness(team, "--set", "tiny", "--baseline", "quality.json", *source, answers=GOOD)
    assert done.returncode == 0, done.stderr
    assert "IMPROVED" in done.stdout
    argv = printed_command(done.stdout, "what moves is shown before it is written): ")
    assert argv == ["python", "-m", "harness", "--set", "tiny", "--update-baseline", "--baseline", "quality.json",
                    "--adapter", "--expect-banner", "--", *ADAPTER]
    pasted = paste(team, argv, answers=GOOD)
    assert pasted.returncode == 0, pasted.stderr
    entry = recorded(team, "quality.json")["sets"]["tiny"]
    assert entry["backend"]["name"] == "scripted"  # not the built-in bm25
    assert entry["aggregates"]["overall"]["recall@10"] == 1.0  # the improvement is kept
    assert harness(team, "--set", "tiny", "--baseline", "quality.json", *source, answers=GOOD).returncode == 0


@pytest.mark.parametrize("how", ["options", "config"])
def test_the_not_gated_set_notice_pasted_baselines_it_with_the_teams_adapter(team, how):
    source = ["--adapter", "--expect-banner", "--", *ADAPTER] if how == "options" else []
    if how == "config":
        (team / "retrieval-gate.toml").write_text(f"adapter = {json.dumps(ADAPTER)}\nexpect_banner = true\n")
    assert harness(team, "--set", "tiny", "--update-baseline", "--yes", *source, answers=GOOD).returncode == 0
    done = harness(team, "--set", "all", *source, answers=GOOD)
    assert done.returncode == 0, done.stderr
    argv = printed_command(done.stderr, "not gated (baseline it: ")
    assert argv == ["python", "-m", "harness", "--set", "extra", "--update-baseline", "--adapter", "--expect-banner",
                    "--", *ADAPTER]
    pasted = paste(team, argv, answers=GOOD)
    assert pasted.returncode == 0, pasted.stderr
    assert {name: entry["backend"]["name"] for name, entry in recorded(team)["sets"].items()} == {
        "tiny": "scripted", "extra": "scripted"}
    done = harness(team, "--set", "all", *source, answers=GOOD)
    assert done.returncode == 0 and "not gated" not in done.stderr, done.stderr
