"""Wrong exit codes and words, each as a user meets it through a real `python -m harness` process: an
unusable user cache folder, a full disk under the baseline or a temp file, `compare --resamples` past any use,
one query called EQUIVALENT, a shard naming an unknown metric or carrying a negative latency, and `--out`
naming no file. Each is exit 2 and one line naming the file or option; never 70, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO_ROOT, TINY_SET
from tests.process_helpers import assert_one_error_line

FULL_DISK = FIXTURES / "harness_side" / "full_disk_driver.py"


def run(*argv: str, cwd: Path = REPO_ROOT, script: Path | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess:
    """`python -m harness ARGV` (or `python SCRIPT ARGV`) importing this worktree."""
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    environment.pop("GITHUB_STEP_SUMMARY", None)
    start = [sys.executable, str(script)] if script else [sys.executable, "-m", "harness"]
    return subprocess.run([*start, *argv], cwd=cwd, env=environment, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    """Two shards and a whole run of the tiny set (BM25), and a run of a one-query copy of it."""
    folder = tmp_path_factory.mktemp("reports")
    for argv, out in (([], "whole.json"), (["--shard", "1/2"], "s1.json"), (["--shard", "2/2"], "s2.json")):
        done = run("--set", str(TINY_SET), "--no-gate", "--quiet", *argv, "--out", str(folder / out))
        assert done.returncode == 0, done.stderr
    one = folder / "one"
    shutil.copytree(TINY_SET, one)
    first = (one / "queries.jsonl").read_text().splitlines()[0]
    (one / "queries.jsonl").write_text(first + "\n")
    done = run("--set", str(one), "--no-gate", "--quiet", "--out", str(folder / "one.json"))
    assert done.returncode == 0, done.stderr
    return folder


def test_an_unusable_user_cache_folder_is_exit_2_naming_it(tmp_path):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder should be")
    done = run("--set", "code", "--no-gate", "--quiet", "--out", str(tmp_path / "r.json"),
               env={"RETRIEVAL_GATE_CACHE": str(not_a_folder)})
    assert_one_error_line(done, str(not_a_folder), "the user cache folder cannot be used", "$RETRIEVAL_GATE_CACHE")


def test_a_full_disk_under_the_baseline_names_the_baseline_not_stdout(tmp_path):
    baseline = tmp_path / "mine.json"
    done = run("--set", str(TINY_SET), "--update-baseline", "--yes", "--baseline", str(baseline), "--quiet",
               "--out", str(tmp_path / "r.json"), script=FULL_DISK, env={"FULL_DISK_NAME": ".mine.json."})
    line = assert_one_error_line(done, f"{baseline}: cannot write the baseline: No space left on device")
    assert "stdout" not in line
    assert not baseline.exists() and not list(tmp_path.glob(".mine.json.*"))  # nothing half-written left


def test_a_full_disk_under_a_temp_corpus_names_that_file(tmp_path):
    done = run("--set", str(TINY_SET), "--no-gate", "--quiet", "--out", str(tmp_path / "r.json"),
               script=FULL_DISK, env={"FULL_DISK_NAME": "tiny.jsonl"})
    line = assert_one_error_line(done, "tiny.jsonl: cannot write: No space left on device")
    assert "stdout" not in line


def test_compare_refuses_resamples_past_any_use(reports):
    whole = str(reports / "whole.json")
    assert_one_error_line(run("compare", whole, whole, "--resamples", "100000000000"), "--resamples: 100000000000",
                   "1,000,000")


def test_compare_calls_one_query_inconclusive_not_equivalent(reports):
    one = str(reports / "one.json")
    done = run("compare", one, one)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("VERDICT: INCONCLUSIVE"), done.stdout
    assert "EQUIVALENT:" not in done.stdout


@pytest.mark.parametrize("edit, field", [
    (lambda row: row["metrics"].__setitem__("bogus@10", 0.5), "sets[0].queries[0].metrics.bogus@10: unknown metric"),
    (lambda row: row.__setitem__("latency_ms", -5.0), "sets[0].queries[0].latency_ms: must be >= 0 milliseconds"),
])
def test_a_forged_shard_is_refused_naming_the_field(reports, tmp_path, edit, field):
    document = json.loads((reports / "s1.json").read_text())
    edit(document["sets"][0]["queries"][0])
    forged = tmp_path / "s1.json"
    forged.write_text(json.dumps(document))
    done = run("merge", str(forged), str(reports / "s2.json"), "--no-gate", "--out", str(tmp_path / "m.json"))
    assert_one_error_line(done, f"{forged}: {field}")
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("out", [".", "", "/"])
def test_out_naming_no_file_is_one_line(tmp_path, out):
    done = run("--set", str(TINY_SET), "--no-gate", "--quiet", "--out", out, cwd=tmp_path)
    assert_one_error_line(done, "--out:", "is a directory; give a file path")


def test_a_distribution_also_named_harness_is_named_instead_of_an_attribute_error(tmp_path):
    """Another `harness` installed over ours replaces its __init__.py; our modules say so, exit 2."""
    site = tmp_path / "site-packages"
    shutil.copytree(REPO_ROOT / "harness", site / "harness", ignore=shutil.ignore_patterns("__pycache__", "_shipped"))
    (site / "harness" / "__init__.py").write_text('"""Another project\'s harness."""\n')
    done = subprocess.run([sys.executable, "-m", "harness", "--version"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True, timeout=120)
    line = assert_one_error_line(done, f"the package 'harness' imported from {site / 'harness' / '__init__.py'} is not "
                                "retrieval-gate's", "pip install --force-reinstall retrieval-gate")
    assert "AttributeError" not in line
