"""`python -m harness bisect` against a real repository (benchmarks/bisect_fixture.py): it names the culprit
in log2 + 2 gate runs, says when nothing changed, and leaves no worktree, temp folder or adapter behind,
whether it finishes, is interrupted or is killed outright. Rates over many seeds are the benchmark's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bisect_fixture
from tests.conftest import REPO_ROOT
from tests.process_helpers import alive, default_signals, wait_for


def _harness(argv: list[str], cwd: Path, scratch: Path, **popen) -> subprocess.Popen:
    scratch.mkdir(exist_ok=True)
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(scratch)}
    environment.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.Popen([sys.executable, "-m", "harness", *argv], cwd=cwd, env=environment, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals, **popen)


def _worktrees(repository: Path) -> list[str]:
    listing = subprocess.run(["git", "-C", str(repository), "worktree", "list", "--porcelain"], check=True,
                             capture_output=True, text=True).stdout
    return [line.split(" ", 1)[1] for line in listing.splitlines() if line.startswith("worktree ")]


def _nothing_left(fixture: bisect_fixture.Fixture, scratch: Path) -> bool:
    records = fixture.repository / ".git" / "worktrees"
    return (_worktrees(fixture.repository) == [str(fixture.repository)]
            and not (records.exists() and any(records.iterdir()))
            and not any(scratch.glob("retrieval-gate-*")))


def test_bisect_names_the_culprit_with_what_it_flipped_and_leaves_nothing(tmp_path):
    fixture = bisect_fixture.build(tmp_path / "fixture", seed=3, commits=16)
    scratch = tmp_path / "scratch"
    answer = tmp_path / "bisect.json"
    process = _harness(["bisect", fixture.good, fixture.bad, "--set", str(fixture.set_folder), "--json", str(answer),
                        "--", *fixture.adapter], fixture.repository, scratch)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    culprit = fixture.commits[fixture.culprit]
    assert f"first bad commit: {culprit[:12]} commit {fixture.culprit}\n" in out
    result = json.loads(answer.read_text())
    assert result["verdict"] == "found" and result["first_bad"] == culprit
    assert result["gate_runs"] <= 2 + 4  # 15 commits after GOOD: 4 halvings
    [change] = result["sets"]
    assert change["affected"] and change["change"] == pytest.approx(-0.05, abs=0.011)
    lost = {flip["qid"] for flip in result["flips"] if flip["lost"]}
    assert len(lost) >= bisect_fixture.DROP_QUERIES  # the culprit's 20, and the noise of two commits
    assert _nothing_left(fixture, scratch)


def test_a_noise_only_range_answers_no_change_detectable_with_the_size(tmp_path):
    fixture = bisect_fixture.build(tmp_path / "fixture", seed=4, commits=8, culprit=False)
    scratch = tmp_path / "scratch"
    process = _harness(["bisect", fixture.good, fixture.bad, "--set", str(fixture.set_folder), "--",
                        *fixture.adapter], fixture.repository, scratch)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    assert "no change detectable between" in out and "the smallest change these queries can detect is" in out
    assert out.rstrip().endswith("gate runs: 2")
    assert _nothing_left(fixture, scratch)


HANGING = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"


def _hanging_step(tmp_path: Path) -> tuple[bisect_fixture.Fixture, Path, subprocess.Popen, int]:
    """A bisection whose adapter starts (writing its pid) and never answers: the harness waits in a step."""
    fixture = bisect_fixture.build(tmp_path / "fixture", seed=5, commits=4)
    scratch, pid_file = tmp_path / "scratch", tmp_path / "adapter.pid"
    process = _harness(["bisect", fixture.good, fixture.bad, "--set", str(fixture.set_folder),
                        "--startup-timeout", "600", "--timeout", "600", "--",
                        sys.executable, "-c", HANGING, str(pid_file)], fixture.repository, scratch)
    assert wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 120), process.stderr.read()
    assert len(_worktrees(fixture.repository)) == 2 and any(scratch.glob("retrieval-gate-bisect-*"))
    return fixture, scratch, process, int(pid_file.read_text())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_step_stops_the_adapter_and_removes_the_worktree(tmp_path, signum):
    fixture, scratch, process, adapter = _hanging_step(tmp_path)
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signum
    assert err.strip().splitlines()[-1] == f"harness: error: interrupted by {signal.Signals(signum).name}"
    assert not alive(adapter)
    assert _nothing_left(fixture, scratch)


def test_a_killed_bisect_leaves_nothing_once_its_guard_has_run(tmp_path):
    fixture, scratch, process, adapter = _hanging_step(tmp_path)
    process.kill()
    process.communicate(timeout=120)
    assert wait_for(lambda: not alive(adapter) and _nothing_left(fixture, scratch), 60)


def test_a_backend_that_fails_at_good_is_exit_3_and_one_line(tmp_path):
    fixture = bisect_fixture.build(tmp_path / "fixture", seed=6, commits=4)
    scratch = tmp_path / "scratch"
    process = _harness(["bisect", fixture.good, fixture.bad, "--set", str(fixture.set_folder), "--",
                        sys.executable, "-c", "import sys; sys.exit('no index at this commit')"], fixture.repository,
                       scratch)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 3
    [line] = [line for line in err.splitlines() if line.startswith("harness: error:")]
    assert line.startswith(f"harness: error: at {fixture.good[:12]}: ") and err.endswith(line + "\n")
    assert _nothing_left(fixture, scratch)
