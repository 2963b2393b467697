"""Compare rendered text with a golden file in tests/gold/; REFRESH_GOLD=1 rewrites it instead.

Refresh deliberately (tests/gold/README.md): run the renderer tests with REFRESH_GOLD=1, then
read `git diff tests/gold` line by line before committing it.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

GOLD = Path(__file__).parent / "gold"


def assert_matches_golden(name: str, text: str) -> None:
    path = GOLD / name
    if os.environ.get("REFRESH_GOLD") == "1":
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"no golden file {path}; create it with REFRESH_GOLD=1 and review it")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            f"gold/{name}", "rendered"))
        raise AssertionError(f"rendered text differs from tests/gold/{name}:\n{diff}")
