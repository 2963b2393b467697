"""--executor ray on more than one node: a simulated cluster on this machine (Ray's own
`ray.cluster_utils.Cluster`: a head with no CPUs for actors and two worker nodes of one CPU each,
so two workers must land on two nodes).

One cluster for the module (about 20-40 s to start on a busy 2-core machine). Skipped, with the
reason, when Ray is not importable; under CI=true it must run.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO_ROOT, TINY_SET, require_modules
from tests.process_helpers import alive, default_signals, wait_for

SLOW_WORKER = FIXTURES / "ray" / "slow_worker.py"  # an answer every argv[2] s; writes its pids to argv[1]

NODE_STORE_BYTES = 80 * 1024 * 1024


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(cluster, [worker node, worker node], scratch): every node's temp folders under `scratch`."""
    require_modules("ray", extra="ray")
    from ray.cluster_utils import Cluster
    scratch = tmp_path_factory.mktemp("nodes")
    saved = {name: os.environ.get(name) for name in ("TMPDIR", "RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED",
                                                     "PYTHONPATH")}
    # A throwaway cluster joined by the drivers this module starts (no token, as the other Ray tests);
    # its nodes' temp folders (the corpus folders of the actors) land in `scratch`, to be checked.
    os.environ.update(TMPDIR=str(scratch), RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0",
                      PYTHONPATH=os.pathsep.join([str(REPO_ROOT), *filter(None, [saved["PYTHONPATH"]])]))
    simulated = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": NODE_STORE_BYTES,
                                                              "include_dashboard": False})
    try:
        nodes = [simulated.add_node(num_cpus=1, object_store_memory=NODE_STORE_BYTES) for _ in range(2)]
        simulated.wait_for_nodes(timeout=120)
        yield simulated, nodes, scratch
    finally:
        simulated.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run(arguments, tmp_path, name):
    out = tmp_path / f"{name}.json"
    completed = subprocess.run([sys.executable, "-m", "harness", "--no-gate", "--quiet", "--out", str(out),
                                *arguments], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    return completed, json.loads(out.read_text())


def _rows(report):
    return [(q["qid"], q["ids"], q.get("scores"), q["metrics"]) for s in report["sets"] for q in s["queries"]]


def test_two_nodes_give_the_local_runs_ids_and_metrics(cluster, tmp_path):
    simulated, nodes, _ = cluster
    common = ["--set", "memory", "--backend", "bm25"]
    local, local_report = _run(common, tmp_path, "local")
    remote, remote_report = _run([*common, "--executor", "ray", "--ray-address", simulated.address,
                                  "--workers", "2"], tmp_path, "ray")
    assert local.returncode == remote.returncode == 0, (local.stderr, remote.stderr)
    assert _rows(remote_report) == _rows(local_report) and len(_rows(local_report)) == 55
    placed = remote_report["provenance"]["executor"]["workers"]
    assert {w["node_id"] for w in placed} == {node.node_id for node in nodes}  # one worker on each node


def test_removing_a_node_mid_run_fails_with_exit_3_naming_worker_and_node_and_leaves_nothing(cluster, tmp_path):
    simulated, nodes, scratch = cluster
    folder = tmp_path / "pids"
    folder.mkdir()
    command = [sys.executable, "-m", "harness", "--set", str(TINY_SET), "--no-gate", "--quiet",
               "--out", str(tmp_path / "report.json"), "--executor", "ray", "--ray-address", simulated.address,
               "--workers", "2", "--adapter", "--expect-banner", "--", sys.executable, str(SLOW_WORKER), str(folder), "2"]
    driver = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=default_signals)
    # Both adapters asked a query: the run is past its start, each worker's node known to the driver.
    if not wait_for(lambda: driver.poll() is not None or len(list(folder.glob("*.asked"))) == 2, 180):
        driver.kill()
        pytest.fail(f"the adapters did not start: {driver.communicate()}")
    assert driver.poll() is None, driver.communicate()
    rows = [path.read_text().split() for path in folder.glob("*.pids")]
    simulated.remove_node(nodes[0], allow_graceful=False)  # the node and everything Ray runs on it die
    try:
        _, err = driver.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        driver.kill()
        pytest.fail("the driver did not end")
    code, err = driver.returncode, err.decode()
    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 3, err
    assert report["complete"] is False and len(report["sets"][0]["queries"]) < 7  # a partial report
    assert "died" in report["error"] and f"node {nodes[0].node_id[:12]}" in report["error"], report["error"]
    assert "worker 1" in report["error"] or "worker 2" in report["error"], report["error"]
    for adapter, actor, grandchild, corpus in rows:  # on the lost node and on the surviving one
        assert wait_for(lambda: not alive(int(adapter)) and not alive(int(grandchild)), 30), (adapter, grandchild)
        assert wait_for(lambda: not Path(corpus).exists(), 30), corpus
    assert wait_for(lambda: not list(scratch.glob("retrieval-gate-*")), 30), list(scratch.iterdir())
    simulated.add_node(num_cpus=1, object_store_memory=NODE_STORE_BYTES)  # the module's cluster as it was
