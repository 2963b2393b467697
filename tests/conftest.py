"""Shared fixtures: the tiny committed set and a copy of it that a test may break."""

import os
import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
TINY_SET = FIXTURES / "sets" / "tiny"
SCRIPTED_ADAPTER = FIXTURES / "cli_adapters" / "scripted.py"


@pytest.fixture
def tiny_copy(tmp_path: Path) -> Path:
    """A writable copy of the tiny set, at tmp_path/sets/tiny."""
    target = tmp_path / "sets" / "tiny"
    shutil.copytree(TINY_SET, target)
    return target


def require_default_model() -> Path:
    """The verified default model folder; skip when it is not cached, except under CI=true, where it fails.

    The one place that decides this, so CI can never pass without the tests that need the model.
    """
    from adapters import model_store  # needs the [onnx] extra only when a test asks for the model

    folder = model_store.model_dir()
    if not model_store.is_fetched(folder=folder):
        message = f"default model not in {folder}; run `{model_store.FETCH_COMMAND}`"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: .ci/run must fetch it before the tests)")
        pytest.skip(message)
    return model_store.verify(folder=folder)


def require_optional(module: str, extra: str):
    """`module` imported; when it is missing, skip (saying which extra to install), except under
    CI=true, where the test fails: CI can never pass without the tests that need it."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"{module} is not importable ({exc}); install the extra: pip install -e '.[{extra}]'"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: .ci/run must install it before the tests)")
        pytest.skip(message)
