"""harness.adapter.backends: the built-in aliases start our reference adapters with this interpreter."""

import sys

import pytest

from harness.adapter.backends import BACKENDS, DEFAULT_BACKEND, backend_argv
from harness.errors import UsageError


def test_every_alias_is_a_python_module_run_with_this_interpreter():
    assert DEFAULT_BACKEND == "bm25" and set(BACKENDS) == {"bm25", "onnx", "hybrid"}
    assert backend_argv("bm25") == [sys.executable, "-m", "adapters.bm25"]
    assert backend_argv("hybrid", ["--weight", "0.3"])[-2:] == ["--weight", "0.3"]


def test_an_unknown_alias_names_the_choices():
    with pytest.raises(UsageError, match="'bm52' is not one of bm25, hybrid, onnx"):
        backend_argv("bm52")
