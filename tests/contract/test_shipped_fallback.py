"""The main job from a folder that is not the checkout: set names the folder lacks are the shipped sets, and a
built-in backend over shipped sets alone, without sets or a baseline of the folder's own, is gated against its
shipped baseline (harness/layout.py). The working folder's own files come first.

Installed from a wheel, the same is checked in tests/contract/test_installed.py (a slow group).
"""

import json
import shutil
import subprocess
import sys

from harness.shipped import shipped_baselines_dir, shipped_sets_dir
from tests.conftest import SCRIPTED_ADAPTER, TINY_SET


def harness(cwd, *args):
    done = subprocess.run([sys.executable, "-m", "harness", *args, "--quiet"], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    report_path = cwd / ".retrieval-gate" / "report.json"
    report = json.loads(report_path.read_text(encoding="utf-8")) if report_path.exists() else None
    return done.returncode, done.stderr, report


def test_a_shipped_set_from_another_folder_is_gated_against_the_shipped_baseline(tmp_path):
    code, stderr, report = harness(tmp_path, "--set", "memory")
    assert code == 0, stderr
    assert report["provenance"]["baseline"]["path"] == str(shipped_baselines_dir() / "current.json")
    assert {name: s["path"] for name, s in report["provenance"]["sets"].items()} == {
        "memory": str(shipped_sets_dir() / "memory")}


def test_the_folders_own_sets_and_baseline_come_first(tmp_path):
    shutil.copytree(TINY_SET, tmp_path / "sets" / "tiny")
    code, stderr, _ = harness(tmp_path, "--set", "tiny", "--set", "memory", "--update-baseline", "--yes")
    assert code == 0, stderr
    assert "shipped baseline" not in stderr  # a baseline is written here, none is read
    recorded = json.loads((tmp_path / "baselines" / "current.json").read_text(encoding="utf-8"))
    assert sorted(recorded["sets"]) == ["memory", "tiny"]
    code, stderr, report = harness(tmp_path, "--set", "tiny", "--set", "memory", "--known-contract-failures")
    assert code == 0, stderr
    assert "shipped baseline" not in stderr
    assert {name: s["path"] for name, s in report["provenance"]["sets"].items()} == {
        "tiny": "sets/tiny", "memory": str(shipped_sets_dir() / "memory")}


def test_a_set_of_the_folders_own_gets_no_shipped_baseline(tmp_path):
    shutil.copytree(TINY_SET, tmp_path / "sets" / "tiny")
    code, stderr, _ = harness(tmp_path, "--set", "tiny")
    assert code == 2
    assert stderr.strip() == "harness: error: baselines/current.json: no baseline file; record one with " \
                             "--update-baseline (or run with --no-gate)"


def test_an_adapter_of_ones_own_gets_no_shipped_baseline(tmp_path):
    code, stderr, _ = harness(tmp_path, "--set", "memory", "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER))
    assert code == 2
    assert "shipped baseline" not in stderr and "baselines/current.json: no baseline file" in stderr


def test_a_name_neither_here_nor_shipped_is_still_refused(tmp_path):
    code, stderr, _ = harness(tmp_path, "--set", "nope")
    assert code == 2
    shipped = ", ".join(sorted(path.parent.name for path in shipped_sets_dir().glob("*/set.json")))
    assert stderr.strip() == f"harness: error: set 'nope': no sets/nope/set.json (available: none; shipped: {shipped})"


def test_a_re_baseline_without_a_baseline_of_the_folders_own_writes_its_own_never_the_shipped_one(tmp_path):
    """Installed, the shipped baseline is every user's of that environment (tests/contract/test_installed.py);
    in a checkout it is the repository's. A folder that has none of its own gets its own."""
    shipped = {path: path.read_bytes() for path in shipped_baselines_dir().glob("*.json")}
    code, stderr, _ = harness(tmp_path, "--set", "memory", "--update-baseline", "--yes")
    assert code == 0, stderr
    assert {path: path.read_bytes() for path in shipped_baselines_dir().glob("*.json")} == shipped
    recorded = json.loads((tmp_path / "baselines" / "current.json").read_text(encoding="utf-8"))
    assert list(recorded["sets"]) == ["memory"]
    assert sorted(p.name for p in shipped_baselines_dir().iterdir() if p.name.startswith(".")) == []  # no lock left
    code, stderr, report = harness(tmp_path, "--set", "memory")  # and the folder is gated against it from now on
    assert code == 0, stderr
    assert report["provenance"]["baseline"]["path"] == "baselines/current.json"
