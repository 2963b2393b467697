"""--executor ray on a local Ray instance with 2 CPUs: the same ids and metrics as a local run, and
a killed actor, a time-out or SIGTERM to the driver fail the run as locally, leaving no adapter behind.

Skipped, with the reason, when Ray is not importable; under CI=true it must run (.ci/run installs
the [ray] extra), so CI can never pass without it.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import harness
from harness.adapter.options import RunOptions
from harness.errors import SetError, UsageError
from tests.builders import query, write_set
from tests.conftest import FIXTURES, TINY_SET, REPO_ROOT, require_modules

ROOT = REPO_ROOT
SLOW_WORKER = FIXTURES / "ray" / "slow_worker.py"
HANG = FIXTURES / "adapters" / "hang.py"
WINDOWS = FIXTURES / "adapters" / "windows.py"


def _require_ray():
    require_modules("ray", extra="ray")
    import ray
    return ray


@pytest.fixture(scope="module")
def ray_address():
    """A local Ray instance with 2 CPUs for this module; its address, for drivers in subprocesses."""
    ray = _require_ray()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # A throwaway instance on this machine, joined by the drivers the tests start: without token
    # authentication (with it, Ray refused a second driver process in one of our benchmark runs).
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    python_path = os.pathsep.join([str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    # Its session files and logs in a folder of its own, removed after (Ray's default, /tmp/ray, would keep
    # them); short, as Ray's socket paths live under it.
    scratch = tempfile.mkdtemp(prefix="rg-t-", dir="/tmp")
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR", _temp_dir=scratch,
                 object_store_memory=100 * 1024 * 1024, runtime_env={"env_vars": {"PYTHONPATH": python_path}})
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)


def test_without_ray_the_executor_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    from harness.adapter import ray_executor
    with pytest.raises(UsageError, match=r"--executor ray needs Ray: pip install 'retrieval-gate\[ray\]'"):
        ray_executor._import_ray()


def test_ray_options_need_the_ray_executor():
    with pytest.raises(UsageError, match="need --executor ray"):
        RunOptions(worker_gpus=1)
    with pytest.raises(UsageError, match="--executor: one of local, ray"):
        RunOptions(executor="dask")


def test_ray_with_two_workers_gives_the_ids_and_metrics_of_a_local_run(ray_address, tmp_path):
    common = dict(sets_dir=ROOT / "sets", backend="bm25", baseline=None, budgets=None)
    local = harness.gate(["memory"], log_path=tmp_path / "local.log", **common)
    remote = harness.gate(["memory"], executor="ray", workers=2, log_path=tmp_path / "ray.log", **common)
    assert local.exit_code == remote.exit_code == 0 and remote.complete
    mine, theirs = remote.sets[0], local.sets[0]
    assert [(q.qid, q.ids, q.scores, q.metrics, q.outcome) for q in mine.queries] == \
        [(q.qid, q.ids, q.scores, q.metrics, q.outcome) for q in theirs.queries]
    assert mine.aggregates == theirs.aggregates and mine.query_count == len(theirs.queries) == 55
    assert mine.latency.n == 55 and all(q.latency_seconds > 0 for q in mine.queries)
    # each actor samples its adapter's memory on its node, as a local run does: BM25 holds tens of MiB
    assert 5 < mine.resources.peak_rss_mib < 4096 and 5 < theirs.resources.peak_rss_mib < 4096
    executor = remote.provenance.extra["executor"]
    assert executor["name"] == "ray" and len(executor["workers"]) == 2
    assert len({w["actor_pid"] for w in executor["workers"]}) == 2  # two actors, each owning one adapter
    assert remote.provenance.adapter.banner["name"] == "bm25"  # backend identity as in a local run
    assert remote.provenance.settings["workers"] == 2
    # this module's instance keeps Ray's default niceness for its workers: the run says what that costs
    niceness = {worker["niceness"] for worker in executor["workers"]}
    assert len(niceness) == 1 and min(niceness) > os.nice(0)  # Ray's default for workers: 15
    assert any(w.startswith(f"--executor ray: workers at niceness {min(niceness)} (this run: {os.nice(0)})")
               for w in remote.warnings)
    assert not any("niceness" in w for w in local.warnings)


def test_ray_gives_the_passages_of_a_local_run(ray_address, tmp_path):
    # The window 0..27 of `page` holds the set's current evidence: ku@1 is 1 only if the window arrives.
    folder = write_set(tmp_path / "ev", [query()])
    common = dict(backend=[sys.executable, str(WINDOWS), "--window=0,27"], baseline=None, budgets=None)
    local = harness.gate([folder], log_path=tmp_path / "local.log", **common)
    remote = harness.gate([folder], executor="ray", log_path=tmp_path / "ray.log", **common)
    assert local.exit_code == remote.exit_code == 0
    mine, theirs = remote.sets[0].queries[0], local.sets[0].queries[0]
    assert mine.passages == theirs.passages == ((0, 27), None)
    assert mine.evidence == theirs.evidence and mine.evidence["ku@1"] == 1.0


def test_a_drifted_set_stops_the_run_before_any_actor_starts(ray_address, tiny_copy):
    corpus = tiny_copy / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("parses TOML files", "parses YAML files"))
    with pytest.raises(SetError, match="doc-01"):
        harness.gate([tiny_copy], executor="ray", workers=2, baseline=None)


def test_a_query_time_out_in_an_actor_fails_the_run_as_locally(ray_address, tmp_path):
    pids = tmp_path / "hang.pids"
    report = harness.gate([TINY_SET], backend=[sys.executable, str(HANG), str(pids)], baseline=None,
                          executor="ray", workers=1, query_timeout=1.0, log_path=tmp_path / "hang.log")
    assert report.exit_code == 3 and not report.complete
    assert "no answer within 1 s" in report.error and "its process group was killed" in report.error
    assert len(report.sets[0].queries) == 1  # the first answer is kept: a partial report
    for pid in map(int, pids.read_text().split()):
        assert _gone(pid, within=20)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _until(predicate, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _gone(pid: int, within: float) -> bool:
    return _until(lambda: not _alive(pid), within)


def _default_signals():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _start_driver(ray_address, tmp_path, workers=2):
    """A CLI run on the module's cluster, each adapter answering every 2 s; (process, one row per adapter)."""
    folder = tmp_path / "pids"
    folder.mkdir()
    command = [sys.executable, "-m", "harness", "--set", str(TINY_SET), "--no-gate", "--quiet",
               "--out", str(tmp_path / "report.json"), "--executor", "ray", "--ray-address", ray_address,
               "--workers", str(workers), "--adapter", "--expect-banner", "--", sys.executable, str(SLOW_WORKER),
               str(folder), "2"]
    driver = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=_default_signals)
    deadline = time.monotonic() + 180
    while len(list(folder.glob("*.pids"))) < workers:
        if driver.poll() is not None or time.monotonic() > deadline:
            driver.kill()
            pytest.fail(f"the adapters did not start: {driver.communicate()}")
        time.sleep(0.2)
    time.sleep(1)  # both are answering their first query now
    rows = [path.read_text().split() for path in folder.glob("*.pids")]
    rows = [(int(adapter), int(actor), int(grandchild), Path(corpus)) for adapter, actor, grandchild, corpus in rows]
    return driver, rows


def _finish(driver):
    try:
        out, err = driver.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        driver.kill()
        pytest.fail("the driver did not end")
    return driver.returncode, err.decode()


def test_killing_an_actor_fails_the_run_with_exit_3_and_leaves_no_adapter(ray_address, tmp_path):
    driver, rows = _start_driver(ray_address, tmp_path)
    adapter, actor, grandchild, corpus = rows[0]
    os.kill(actor, signal.SIGKILL)  # the actor (the adapter's parent) dies, as on a lost node
    code, err = _finish(driver)
    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 3, err
    assert report["complete"] is False and "ray actor" in report["error"] and "died" in report["error"]
    assert report["sets"][0]["query_count"] == 7 and len(report["sets"][0]["queries"]) < 7
    for adapter, actor, grandchild, corpus in rows:  # the killed actor's adapter and the other worker's
        assert _gone(adapter, within=30) and _gone(grandchild, within=30), (adapter, grandchild)
        assert _until(lambda: not corpus.exists(), 30)  # the corpus materialised on the node is removed too


@pytest.mark.parametrize("signum, workers", [(signal.SIGTERM, 2), (signal.SIGINT, 1)])
def test_a_signal_to_the_driver_stops_every_actors_adapter(ray_address, tmp_path, signum, workers):
    driver, rows = _start_driver(ray_address, tmp_path, workers)
    driver.send_signal(signum)
    code, err = _finish(driver)
    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 128 + signum, err
    assert report["complete"] is False and report["error"] == f"interrupted by {signal.Signals(signum).name}"
    for adapter, actor, grandchild, corpus in rows:
        assert _gone(adapter, within=30) and _gone(grandchild, within=30), (adapter, grandchild)
        assert _until(lambda: not corpus.exists(), 30)


@pytest.fixture
def short_tmp():
    """An empty folder to be a run's TMPDIR, short enough that Ray's socket paths fit under it
    (a pytest tmp_path is not; the harness would then put Ray's folder in /tmp, out of sight)."""
    folder = Path(tempfile.mkdtemp(prefix="rg-t-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _carrying(marker: str) -> list[int]:
    """Live processes whose environment holds `marker` (this test's TMPDIR): only what this test started."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if marker.encode() in (entry / "environ").read_bytes() and _alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_ctrl_c_while_a_local_instance_starts_exits_130_and_leaves_no_ray_process_or_file(tmp_path, short_tmp):
    """A real run starting its own Ray instance, a real SIGINT once Ray's session folder appears."""
    _require_ray()
    scratch = short_tmp
    marker = f"TMPDIR={scratch}"
    command = [sys.executable, "-m", "harness", "--set", str(TINY_SET), "--no-gate", "--quiet",
               "--out", str(tmp_path / "report.json"), "--executor", "ray", "--backend", "bm25"]
    driver = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "TMPDIR": str(scratch)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_default_signals)
    try:
        if not _until(lambda: driver.poll() is not None or any(scratch.rglob("session_*")), 180):
            pytest.fail("Ray's session folder never appeared")
        assert driver.poll() is None, driver.communicate()
        driver.send_signal(signal.SIGINT)
        code, err = _finish(driver)
        assert code == 130, err
        assert json.loads((tmp_path / "report.json").read_text())["error"] == "interrupted by SIGINT"
        assert list(scratch.iterdir()) == []  # no corpus folder, no Ray session files or logs
        assert _until(lambda: not _carrying(marker), 30), [Path(f"/proc/{pid}/cmdline").read_bytes()[:200]
                                                           for pid in _carrying(marker)]
    finally:
        for pid in _carrying(marker):  # on a failure, what this test started, and only that
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_run_with_its_own_local_instance_leaves_no_ray_process_or_session_log(tmp_path, short_tmp):
    _require_ray()
    scratch = short_tmp
    marker = f"TMPDIR={scratch}"
    command = [sys.executable, "-m", "harness", "--set", str(TINY_SET), "--no-gate", "--quiet",
               "--out", str(tmp_path / "report.json"), "--executor", "ray", "--workers", "2", "--backend", "bm25"]
    try:
        completed = subprocess.run(command, cwd=ROOT, env={**os.environ, "TMPDIR": str(scratch)},
                                   capture_output=True, text=True, timeout=300)
        assert completed.returncode == 0, completed.stderr
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["complete"] and report["provenance"]["executor"]["local_instance"] is True
        # Ray's workers (and so their adapters) run at the driver's niceness, not Ray's default 15
        assert [worker["niceness"] for worker in report["provenance"]["executor"]["workers"]] == [os.nice(0)] * 2
        assert list(scratch.iterdir()) == []  # Ray's session files and logs went with its temp folder
        assert _until(lambda: not _carrying(marker), 30), [Path(f"/proc/{pid}/cmdline").read_bytes()[:200]
                                                           for pid in _carrying(marker)]
    finally:
        for pid in _carrying(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

