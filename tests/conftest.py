"""Shared fixtures: the tiny committed set and a copy of it that a test may break."""

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
TINY_SET = FIXTURES / "sets" / "tiny"
SCRIPTED_ADAPTER = FIXTURES / "cli_adapters" / "scripted.py"


@pytest.fixture
def tiny_copy(tmp_path: Path) -> Path:
    """A writable copy of the tiny set, at tmp_path/sets/tiny."""
    target = tmp_path / "sets" / "tiny"
    shutil.copytree(TINY_SET, target)
    return target
