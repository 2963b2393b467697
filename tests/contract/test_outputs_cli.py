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
