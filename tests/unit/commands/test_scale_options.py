"""The scale-out options on the command line reach the API as given; the Ray watchdog works without Ray.

The watchdog (harness.adapter.ray_executor.WATCHDOG) is what leaves no adapter behind when an
actor dies; it is plain Python, so it is tested here with a real process group and no Ray.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from harness.adapter.ray_executor import WATCHDOG
from harness.commands import cli
from tests.reports import gated_report


def test_scale_options_reach_the_api(stand_in, tmp_path):  # noqa: F811
    fake = stand_in(gated_report())
    cli.main(["--set", "code", "--out", str(tmp_path / "r.json"), "--quiet", "--shard", "2/4", "--executor", "ray",
              "--ray-address", "head:6379", "--worker-cpus", "0.5", "--worker-gpus", "1", "--workers", "3"])
    (_, _, load), (_, run) = fake.calls
    options = run["options"]
    assert (options.shard, options.executor, options.ray_address, options.worker_cpus, options.worker_gpus,
            options.workers) == ("2/4", "ray", "head:6379", 0.5, 1.0, 3)
    assert load["baseline"] is None  # a shard is gated by `merge`, never alone


def test_defaults_are_unsharded_and_local(stand_in, tmp_path):  # noqa: F811
    fake = stand_in(gated_report())
    cli.main(["--out", str(tmp_path / "r.json"), "--quiet"])
    options = fake.calls[1][1]["options"]
    assert (options.shard, options.executor, options.ray_address) == (None, "local", None)


@pytest.mark.parametrize("argv, message", [
    (["--shard", "5/4"], "--shard: I must be 1..4"),
    (["--worker-gpus", "1"], "need --executor ray"),
    (["--executor", "ray", "--worker-cpus", "-1"], "--worker-cpus: must be a number >= 0"),
])
def test_bad_scale_options_are_exit_2_before_anything_runs(stand_in, tmp_path, capsys, argv, message):  # noqa: F811
    fake = stand_in(gated_report())
    assert cli.main(["--out", str(tmp_path / "r.json"), *argv]) == 2
    assert message in capsys.readouterr().err and fake.calls == []


def _alive(pid):
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _group(tmp_path):
    """A stand-in adapter: a process group of a leader and a child, both sleeping; (leader, child pid)."""
    pids = tmp_path / "pids"
    leader = subprocess.Popen([sys.executable, "-c",
                               "import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', "
                               "'import time; time.sleep(600)']); open(sys.argv[1], 'w').write(str(c.pid)); "
                               "time.sleep(600)", str(pids)], start_new_session=True,
                              preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while not (pids.exists() and pids.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return leader, int(pids.read_text())


def _watchdog(leader, folder):
    return subprocess.Popen([sys.executable, "-c", WATCHDOG, str(leader.pid), str(folder), "2"],
                            stdin=subprocess.PIPE)


def test_the_watchdog_stops_the_group_and_removes_the_corpus_when_its_actor_dies(tmp_path):
    leader, child = _group(tmp_path)
    folder = tmp_path / "corpus"
    folder.mkdir()
    watchdog = _watchdog(leader, folder)
    watchdog.wait()  # the intermediate exits at once: the watchdog proper is its child
    watchdog.stdin.close()  # the actor died: EOF without "done"
    leader.wait(timeout=30)
    deadline = time.monotonic() + 30
    while (_alive(child) or folder.exists()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child) and not folder.exists()


def test_the_watchdog_leaves_the_group_alone_after_done(tmp_path):
    leader, child = _group(tmp_path)
    folder = tmp_path / "corpus"
    folder.mkdir()
    watchdog = _watchdog(leader, folder)
    watchdog.wait()
    watchdog.stdin.write(b"done")
    watchdog.stdin.close()
    deadline = time.monotonic() + 30
    while folder.exists() and time.monotonic() < deadline:  # it removes the folder, then exits
        time.sleep(0.05)
    try:
        assert not folder.exists() and leader.poll() is None and _alive(child)
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
