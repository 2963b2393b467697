"""harness.adapter.backends: the built-in aliases start our reference adapters with this interpreter."""

import os
import subprocess
import sys

import pytest

from harness.adapter.backends import (BACKENDS, DEFAULT_BACKEND, INSTALLED_ADAPTERS, backend_argv,
                                      reference_adapters_package, shipped_baseline)
from harness.errors import UsageError
from tests.conftest import REPO_ROOT


def test_every_alias_is_a_python_module_run_with_this_interpreter():
    assert DEFAULT_BACKEND == "bm25" and set(BACKENDS) == {"bm25", "onnx", "hybrid"}
    assert backend_argv("bm25") == [sys.executable, "-m", "adapters.bm25"]
    assert backend_argv("hybrid", ["--weight", "0.3"])[-2:] == ["--weight", "0.3"]


def test_an_unknown_alias_names_the_choices():
    with pytest.raises(UsageError, match="'bm52' is not one of bm25, hybrid, onnx"):
        backend_argv("bm52")


def test_each_built_in_backend_has_its_shipped_baseline():
    assert {name: shipped_baseline(name).name for name in BACKENDS} == {
        "bm25": "current.json", "onnx": "onnx.json", "hybrid": "hybrid.json"}
    assert all(shipped_baseline(name).is_file() for name in BACKENDS)


def test_in_a_checkout_the_reference_adapters_are_its_own_adapters_folder():
    assert reference_adapters_package() == "adapters"


def test_another_distributions_adapters_is_never_started(tmp_path):
    # AdapterHub's `adapters` first on the path: the installed name is started instead, never theirs.
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "__init__.py").write_text("raise SystemExit('imported the wrong adapters')\n")
    code = "from harness.adapter.backends import reference_adapters_package as r; print(r())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO_ROOT)])})
    assert (done.returncode, done.stdout.strip()) == (0, INSTALLED_ADAPTERS), done.stderr
