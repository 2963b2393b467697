"""The mypy ratchet of .ci/run (.ci/mypy_ratchet.py): it fails when the error count rises above the figure
committed in .ci/mypy-errors. Run as CI runs it, a real subprocess, with a stand-in for mypy that prints a
chosen number of error lines and exits as mypy would."""

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

RATCHET = REPO_ROOT / ".ci" / "mypy_ratchet.py"


def ratchet(tmp_path, allowed, errors, exit_code=None):
    """(exit code, last stdout line) of the ratchet against a stand-in mypy printing `errors` error lines."""
    figure = tmp_path / "mypy-errors"
    figure.write_text(f"{allowed}\n")
    exit_code = (1 if errors else 0) if exit_code is None else exit_code
    lines = [f"harness/x.py:{n}: error: Incompatible types  [assignment]" for n in range(1, errors + 1)]
    lines += ["harness/x.py:1: note: See https://mypy.rtfd.io", f"Found {errors} errors in 1 file"]
    fake_mypy = f"import sys; print({chr(10).join(lines)!r}); sys.exit({exit_code})"
    done = subprocess.run([sys.executable, str(RATCHET), str(figure), "--", sys.executable, "-c", fake_mypy],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout.splitlines()[-1]


def test_above_the_figure_fails(tmp_path):
    assert ratchet(tmp_path, allowed=2, errors=3) == (
        1, "mypy: 3 errors (allowed 2): 1 more than the committed figure; fix them (the errors are above)")


def test_at_the_figure_passes_and_below_it_says_to_lower_it(tmp_path):
    assert ratchet(tmp_path, allowed=2, errors=2) == (0, "mypy: 2 errors (allowed 2)")
    assert ratchet(tmp_path, allowed=2, errors=0) == (0, "mypy: 0 errors (allowed 2): lower the figure in the "
                                                         "allowed file to 0")


@pytest.mark.parametrize("errors, exit_code", [(0, 2), (0, 1), (1, 0)], ids=["crashed", "exit 1 without errors",
                                                                            "errors but exit 0"])
def test_a_mypy_that_did_not_run_to_the_end_fails(tmp_path, errors, exit_code):
    code, line = ratchet(tmp_path, allowed=100, errors=errors, exit_code=exit_code)
    assert code == 1 and line.startswith(f"mypy: did not run to the end (exit {exit_code}")


def test_ci_runs_a_pinned_mypy_against_the_committed_figure():
    script = (REPO_ROOT / ".ci" / "run").read_text()
    assert re.search(r"pip install .*mypy==\d+\.\d+\.\d+", script)
    assert "python .ci/mypy_ratchet.py .ci/mypy-errors -- python -m mypy" in script
    assert re.fullmatch(r"\d+\n", (REPO_ROOT / ".ci" / "mypy-errors").read_text())
