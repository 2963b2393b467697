"""mypy as a ratchet: fail when its error count on harness/ rises above the committed figure.

Usage: python .ci/mypy_ratchet.py FIGURE_FILE -- MYPY_COMMAND...
  (.ci/run: `python .ci/mypy_ratchet.py .ci/mypy-errors -- python -m mypy`; the files and
  options are pyproject.toml's [tool.mypy]). Prints `mypy: N errors (allowed M)`; exits 1 when
  N > M, or when mypy itself could not run (its exit code 2 or more, or an exit 1 without an
  error line), 0 otherwise. Below the figure it says to lower it: each change may only lower it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def count_errors(output: str) -> int:
    """The `path:line: error: ...` lines of mypy's output (notes and the summary line are not errors)."""
    return sum(1 for line in output.splitlines() if ": error: " in line)


def verdict(output: str, returncode: int, allowed: int) -> tuple[int, str]:
    """(exit code, the line to print) for a mypy run's output and exit code against the allowed figure."""
    errors = count_errors(output)
    if returncode not in (0, 1) or (returncode == 1) != (errors > 0):
        return 1, f"mypy: did not run to the end (exit {returncode}, {errors} error lines); its output is above"
    line = f"mypy: {errors} error{'' if errors == 1 else 's'} (allowed {allowed})"
    if errors > allowed:
        return 1, line + f": {errors - allowed} more than the committed figure; fix them (the errors are above)"
    if errors < allowed:
        return 0, line + f": lower the figure in the allowed file to {errors}"
    return 0, line


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    figure = Path(argv[0])
    try:
        allowed = int(figure.read_text(encoding="utf-8").strip())
    except (OSError, ValueError) as exc:
        print(f"mypy: {figure}: must hold the allowed error count, one integer ({exc})", file=sys.stderr)
        return 2
    completed = subprocess.run(argv[2:], capture_output=True, text=True)
    sys.stdout.write(completed.stdout)
    sys.stderr.write(completed.stderr)
    code, line = verdict(completed.stdout, completed.returncode, allowed)
    print(line, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
