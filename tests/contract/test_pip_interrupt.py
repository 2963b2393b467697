"""A signal while pip fetches a corpus archive: pip's whole process group is killed and its staging folder removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.process_helpers import alive, default_signals
from tests.conftest import FIXTURES as FIXTURES_DIR, REPO_ROOT

FIXTURES = FIXTURES_DIR / "harness_side"
REPO = REPO_ROOT






@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_kills_pips_group_and_removes_its_staging_folder(tmp_path, signum):
    cache = tmp_path / "cache"
    pid_file = tmp_path / "pids"
    env = dict(os.environ, PYTHONPATH=str(REPO), RETRIEVAL_GATE_CACHE=str(cache))
    env.pop("RETRIEVAL_GATE_OFFLINE", None)
    fetcher = subprocess.Popen([sys.executable, str(FIXTURES / "fetch_driver.py"), str(pid_file)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                               preexec_fn=default_signals)
    try:
        for _ in range(1000):
            if pid_file.exists():
                break
            time.sleep(0.02)
        pids = [int(pid) for pid in pid_file.read_text().split()]
        staging = [path for path in (cache / "archives").iterdir() if path.name.startswith(".fetch-")]
        assert len(staging) == 1 and (staging[0] / "requirements.txt").exists()  # pip is running in it
        fetcher.send_signal(signum)
        _, err = fetcher.communicate(timeout=30)
    finally:
        if fetcher.poll() is None:
            fetcher.kill()
    assert fetcher.returncode == 128 + signum, err
    assert err == f"interrupted: interrupted by {signum.name}\n"
    assert not any(alive(pid) for pid in pids)
    assert list((cache / "archives").iterdir()) == []  # staging folder removed
