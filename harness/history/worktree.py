"""A commit measured for real, for bisect: a git worktree of it, the adapter started in it, the sets asked.

Each step gets a `git worktree` of its commit in a guarded temp folder; the adapter command starts
with that worktree as its working folder (so `./build-and-serve` or `python -m mypackage.adapter`
is the commit's), and the sets are asked through `harness.api` exactly as a run asks them. The
worktree and its record in the repository (`.git/worktrees/NAME`) are removed after each step,
on any error or signal (harness/interrupts.py), and by the watchdog's guard if the harness is
killed outright (harness/watchdog.py): nothing is left behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import api
from harness.errors import Interrupted, UsageError
from harness.gating.inputs import GateInputs
from harness.history.bisect import SetMeasure, StepFailed
from harness.records import SetResult
from harness.watchdog import guard_folder, guarded_temp_folder, release_folder

GIT_TIMEOUT_SECONDS = 600.0
# Starts the adapter command in the worktree: chdir, then exec (the same process, so its group stays the one
# the driver stops).
CHDIR_AND_EXEC = "import os, sys; os.chdir(sys.argv[1]); os.execvp(sys.argv[2], sys.argv[2:])"


def first_parent_commits(repository: Path, good: str, bad: str) -> list[str]:
    """GOOD, then the commits from GOOD (excluded) to BAD along BAD's first parents, oldest first."""
    good_sha, bad_sha = _commit(repository, good), _commit(repository, bad)
    if _git_status(repository, "merge-base", "--is-ancestor", good_sha, bad_sha) != 0:
        raise UsageError(f"bisect: {good} is not an ancestor of {bad}: give GOOD first, then BAD")
    return [good_sha, *_git(repository, "rev-list", "--reverse", "--first-parent", f"{good_sha}..{bad_sha}").split()]


def _commit(repository: Path, name: str) -> str:
    if _git_status(repository, "rev-parse", "--git-dir") != 0:
        raise UsageError(f"bisect: {repository}: not a git repository")
    if _git_status(repository, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}") != 0:
        raise UsageError(f"bisect: {name}: not a commit of {repository}")
    return _git(repository, "rev-parse", "--verify", f"{name}^{{commit}}")


@dataclass
class WorktreeMeasure:
    """Measure a commit: its worktree, the adapter command started in it, the sets asked through the API."""

    repository: Path
    command: Sequence[str]
    inputs: GateInputs
    options: api.RunOptions
    metric: str

    def __call__(self, commit: str, set_names: Sequence[str]) -> dict[str, SetMeasure]:
        inputs = dataclasses.replace(self.inputs, query_sets=tuple(
            s for s in self.inputs.query_sets if s.name in set_names))
        with guarded_temp_folder("retrieval-gate-bisect-") as folder, worktree(self.repository, commit, folder) as tree:
            _check_command(self.command, tree, commit)
            options = dataclasses.replace(self.options, log_path=folder / "adapter.log")
            report = api.run_gate(inputs, backend=[sys.executable, "-c", CHDIR_AND_EXEC, str(tree), *self.command],
                                  options=options)
        if report.exit_code >= 128:  # the run was interrupted: so is the bisection (its worktree is gone)
            raise Interrupted(report.exit_code - 128)
        if not report.complete:
            raise StepFailed(f"at {commit[:12]}: {(report.error or 'the run did not complete').splitlines()[0]}")
        return {result.name: _set_measure(result, self.metric) for result in report.sets}


def _set_measure(result: SetResult, metric: str) -> SetMeasure:
    scored = [q for q in result.queries if q.scored]
    return SetMeasure(values={q.qid: q.metrics[metric] for q in scored if metric in q.metrics},
                      units={q.qid: q.resampling_unit for q in scored},
                      found={q.qid: tuple(q.found) for q in scored}, queries={q.qid: q.query for q in scored})


def _check_command(command: Sequence[str], tree: Path, commit: str) -> None:
    """The adapter command exists at this commit (a path inside the worktree, or a program on PATH)."""
    program = command[0]
    where = (tree / program) if os.sep in program and not os.path.isabs(program) else None
    if where is not None and not where.exists():
        raise StepFailed(f"at {commit[:12]}: {program} is not in the commit's tree")
    if where is None and os.sep not in program and shutil.which(program) is None:
        raise UsageError(f"bisect: adapter command {program!r} not found on PATH")


@contextlib.contextmanager
def worktree(repository: Path, commit: str, folder: Path) -> Iterator[Path]:
    """A detached worktree of `commit` at `folder`/tree, removed on leaving with its record in the repository.

    The record (the repository's `worktrees/NAME` folder) is guarded like a temp folder, so a harness
    killed outright leaves no worktree behind either: the watchdog's guard removes both.
    """
    tree = folder / "tree"
    _git(repository, "worktree", "add", "--detach", "--quiet", str(tree), commit)
    record = Path(_git(tree, "rev-parse", "--absolute-git-dir"))
    guard_folder(record)
    try:
        yield tree
    finally:
        _git_status(repository, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(record, ignore_errors=True)  # gone already unless `remove` failed
        release_folder(record)


def _git(repository: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(repository), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"bisect: cannot run git in {repository}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise UsageError(f"bisect: git {args[0]} in {repository}: {last}")
    return done.stdout.strip()


def _git_status(repository: Path, *args: str) -> int:
    try:
        return subprocess.run(["git", "-C", str(repository), *args], capture_output=True, timeout=GIT_TIMEOUT_SECONDS,
                              stdin=subprocess.DEVNULL).returncode
    except (OSError, subprocess.TimeoutExpired):
        return -1


def describe_commit(repository: Path, commit: str) -> str:
    """`a1b2c3d4e5f6 its subject line`, as a bisection names a commit (the hash alone if git cannot say)."""
    try:
        return _git(repository, "log", "-1", "--format=%H %s", commit).replace(commit, commit[:12], 1)
    except UsageError:
        return commit[:12]
