"""harness/rerun.py: the command line a printed hint repeats, quoted for a shell, from a report's record."""

import shlex

import pytest

from harness.rerun import Rerun


def test_the_command_names_the_sets_the_action_the_files_and_one_source_last():
    rerun = Rerun(adapter=("python", "search/my adapter.py", "--index", "it's"), expect_banner=True,
                  options=("--baseline", "quality/base line.json"))
    command = rerun.command(["code", "docs"], "--update-baseline")
    assert shlex.split(command) == ["python", "-m", "harness", "--set", "code", "--set", "docs", "--update-baseline",
                                    "--baseline", "quality/base line.json", "--adapter", "--expect-banner", "--",
                                    "python", "search/my adapter.py", "--index", "it's"]
    assert Rerun(backend="onnx").command(["code"]) == "python -m harness --set code --backend onnx"
    assert Rerun(run_file="run.txt", backend="bm25").command(["code"]) == "python -m harness --set code --run-file run.txt"
    assert Rerun().command(["code"], "--update-baseline") == "python -m harness --set code --update-baseline"


def test_a_record_reads_back_and_anything_else_is_the_bare_command():
    rerun = Rerun(adapter=("./a",), expect_banner=True, options=("--sets-dir", "q"))
    assert Rerun.from_dict(rerun.to_dict()) == rerun
    assert Rerun.from_dict(None) == Rerun()  # a report written before the record existed


@pytest.mark.parametrize("record", [
    "python -m harness", [], {"adapter": "./a"}, {"adapter": [1]}, {"options": ["--x", None]},
    {"expect_banner": "yes"}, {"backend": 5}, {"run_file": ["r"]}])
def test_a_record_not_of_its_shape_is_never_trusted(record):
    assert Rerun.from_dict(record) == Rerun()
