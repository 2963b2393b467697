"""Figures a command prints are printed by it: each block of the docs marked as a command's output is
what that command prints today, so no figure in it is typed by hand or left stale.

A block is marked in the Markdown (README.md, docs/*.md, every README.md under tests/) as

    <!-- output of: python -m harness baselines -->
    ...the command's stdout...
    <!-- end of output -->

and the command (a `python -m harness` command) is run from the repository root as a user runs it.
After a change that moves the figures on purpose (a re-baseline), refresh them and read the diff
before committing it:

    REFRESH_DOCS=1 python -m pytest tests/architecture/test_generated_docs.py
    git diff README.md docs/ tests/
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

BLOCK = re.compile(r"^<!-- output of: (?P<command>.+?) -->\n(?P<output>.*?)^<!-- end of output -->$", re.M | re.S)
PAGES = sorted([REPO_ROOT / "README.md", *(REPO_ROOT / "docs").glob("*.md"), *(REPO_ROOT / "tests").rglob("README.md")])


def output_of(command: str) -> str:
    """What `python -m harness ...` prints on stdout, run from the repository root."""
    argv = shlex.split(command)
    if argv[:3] != ["python", "-m", "harness"]:
        raise AssertionError(f"{command!r}: a generated block runs `python -m harness ...` only")
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    environment.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run([sys.executable, *argv[1:]], cwd=REPO_ROOT, env=environment, text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise AssertionError(f"{command!r} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def refreshed(text: str) -> str:
    """`text` with every marked block's output replaced by what its command prints now."""
    return BLOCK.sub(lambda block: f"<!-- output of: {block['command']} -->\n{output_of(block['command'])}"
                                   "<!-- end of output -->", text)


@pytest.mark.parametrize("page", [page for page in PAGES if BLOCK.search(page.read_text(encoding="utf-8"))],
                         ids=lambda page: page.relative_to(REPO_ROOT).as_posix())
def test_every_marked_block_is_its_commands_output(page):
    text = page.read_text(encoding="utf-8")
    fresh = refreshed(text)
    if os.environ.get("REFRESH_DOCS") == "1":
        page.write_text(fresh, encoding="utf-8")
        return
    assert fresh == text, f"{page.relative_to(REPO_ROOT)}: a block is no longer its command's output; refresh it " \
                          f"with REFRESH_DOCS=1 (module docstring) and read the diff"


def test_a_stale_block_is_found_and_refreshed():
    marker = "<!-- output of: python -m harness metrics -->\n"
    stale = f"before\n{marker}| typed | by hand |\n<!-- end of output -->\nafter\n"
    fresh = refreshed(stale)
    assert fresh == f"before\n{marker}{output_of('python -m harness metrics')}<!-- end of output -->\nafter\n"
    assert "| typed | by hand |" not in fresh and "recall" in fresh  # the metrics table, not the typed row
    assert refreshed(fresh) == fresh
    with pytest.raises(AssertionError, match="runs `python -m harness ...` only"):
        refreshed("<!-- output of: ls -->\nx\n<!-- end of output -->\n")
