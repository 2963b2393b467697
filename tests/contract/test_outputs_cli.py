"""Outputs through the real CLI: devices written into, symlinks refused, inputs never overwritten.

Devices are private mknod copies in the test's temp folder; nothing under the real /dev is written.
"""

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from tests.conftest import TINY_SET, REPO_ROOT

REPO = REPO_ROOT
ROOT = os.geteuid() == 0


def harness(*argv, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


@pytest.mark.skipif(not ROOT, reason="mknod needs root")
def test_junit_and_summary_into_a_device_leave_the_device_a_device(tmp_path):
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    done = harness("--set", str(TINY_SET), "--no-gate", "--out", str(tmp_path / "r.json"), "--junit", str(null),
                   "--summary", str(null), "--quiet")
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.major(os.lstat(null).st_rdev) == 1
    assert json.loads((tmp_path / "r.json").read_text())["complete"] is True


def test_an_out_symlink_is_refused_and_its_target_kept(tmp_path):
    victim = tmp_path / "committed.json"
    victim.write_text("keep\n")
    (tmp_path / "r.json").symlink_to(victim)
    done = harness("--set", str(TINY_SET), "--no-gate", "--out", str(tmp_path / "r.json"), "--quiet")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("harness: error:")] == [
        f"harness: error: --out: {tmp_path / 'r.json'}: is a symbolic link; give the real path "
        f"(outputs are never written through or replace links)"]
    assert victim.read_text() == "keep\n" and os.path.islink(tmp_path / "r.json")


def test_sets_pin_refuses_to_replace_a_symlinked_set_json(tmp_path):
    folder = tmp_path / "sets" / "tiny"
    shutil.copytree(TINY_SET, folder)
    meta = json.loads((folder / "set.json").read_text())
    meta["pins"] = {}
    real = tmp_path / "real-set.json"
    real.write_text(json.dumps(meta))
    (folder / "set.json").unlink()
    (folder / "set.json").symlink_to(real)
    done = harness("sets", "--sets-dir", str(tmp_path / "sets"), "pin", "tiny")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "set.json: is a symbolic link" in done.stderr and "Traceback" not in done.stderr
    assert json.loads(real.read_text())["pins"] == {} and os.path.islink(folder / "set.json")


def test_an_out_naming_the_baseline_is_refused_before_any_query(tmp_path):
    baseline = tmp_path / "b.json"
    done = harness("--set", str(TINY_SET), "--baseline", str(baseline), "--update-baseline", "--yes",
                   "--out", str(tmp_path / "first.json"), "--quiet")
    assert done.returncode == 0, done.stderr
    before = baseline.read_bytes()
    done = harness("--set", str(TINY_SET), "--baseline", str(baseline), "--out", str(baseline), "--quiet")
    assert done.returncode == 2, done.stderr
    assert f"--out: {baseline}: is the same file as --baseline" in done.stderr
    assert baseline.read_bytes() == before


# -- $GITHUB_STEP_SUMMARY is an output like every other -------------------------------------------------

def harness_with_step_summary(step_summary, *argv, cwd=REPO):
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(step_summary)}
    return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300, env=env)


@pytest.mark.parametrize("target, label", [
    ("baseline", "--baseline"), ("queries", "set tiny: queries.jsonl"), ("out", "--out"),
    ("config", "config")])
def test_a_step_summary_naming_an_input_or_an_output_is_refused_before_any_query(tmp_path, target, label):
    """Appended to without the check, it corrupted them: exit 0, and the next gate exited 2 "corrupt baseline"."""
    team = tmp_path / "team"
    shutil.copytree(TINY_SET, team / "sets" / "tiny")
    (team / "retrieval-gate.toml").write_text("workers = 1\n")
    baseline = team / "baselines" / "current.json"
    done = harness("--set", "tiny", "--update-baseline", "--yes", "--out", str(team / "first.json"), "--quiet",
                   cwd=team)
    assert done.returncode == 0, done.stderr
    path = {"baseline": baseline, "queries": team / "sets" / "tiny" / "queries.jsonl",
            "out": team / "r.json", "config": team / "retrieval-gate.toml"}[target]
    path.touch()
    before = {p: p.read_bytes() for p in team.rglob("*") if p.is_file()}
    done = harness_with_step_summary(path, "--set", "tiny", "--out", str(team / "r.json"), "--quiet", cwd=team)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("harness: error:")]
    assert len(lines) == 1 and lines[0].startswith(f"harness: error: $GITHUB_STEP_SUMMARY: ")
    assert f"is the same file as {label}; refusing to write into it" in lines[0], lines[0]
    assert {p: p.read_bytes() for p in team.rglob("*") if p.is_file()} == before


def test_a_step_summary_naming_a_merge_shards_set_file_is_refused(tmp_path):
    shard = tmp_path / "shard.json"
    done = harness("--set", str(TINY_SET), "--no-gate", "--shard", "1/1", "--out", str(shard), "--quiet")
    assert done.returncode == 0, done.stderr
    queries = tmp_path / "sets" / "tiny" / "queries.jsonl"
    shutil.copytree(TINY_SET, queries.parent)
    before = queries.read_bytes()
    done = harness_with_step_summary(queries, "merge", str(shard), "--sets-dir", str(tmp_path / "sets"),
                                     "--no-gate", "--out", str(tmp_path / "m.json"), "--quiet")
    assert done.returncode == 2, done.stderr
    assert "$GITHUB_STEP_SUMMARY: " in done.stderr and "is the same file as set tiny: queries.jsonl" in done.stderr
    assert queries.read_bytes() == before and not (tmp_path / "m.json").exists()


def test_a_step_summary_fifo_without_a_reader_is_one_line_never_a_hang(tmp_path):
    fifo = tmp_path / "summary.fifo"
    os.mkfifo(fifo)
    done = harness_with_step_summary(fifo, "--set", str(TINY_SET), "--no-gate", "--out", str(tmp_path / "r.json"),
                                     "--quiet")  # the harness would block in open() forever; the 300 s bound fails it
    assert done.returncode == 2, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("harness: error:")] == [
        f"harness: error: $GITHUB_STEP_SUMMARY: {fifo}: is a FIFO with no reader; start the reader first"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
