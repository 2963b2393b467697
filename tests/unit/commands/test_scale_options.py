"""The scale-out options on the command line reach the API as given.

What leaves no adapter behind when an actor dies is the guard of harness/watchdog.py, tested
with real process groups in tests/contract/test_watchdog.py.
"""

import pytest

from harness.commands import cli
from tests.reports import gated_report


def test_scale_options_reach_the_api(stand_in, tmp_path):  # noqa: F811
    fake = stand_in(gated_report())
    cli.main(["--set", "code", "--out", str(tmp_path / "r.json"), "--quiet", "--shard", "2/4", "--executor", "ray",
              "--ray-address", "head:6379", "--worker-cpus", "0.5", "--worker-gpus", "1", "--workers", "3"])
    (_, _, load), (_, run) = fake.calls
    options = run["options"]
    assert (run["gating"].shard, options.executor, options.ray_address, options.worker_cpus, options.worker_gpus,
            options.workers) == ("2/4", "ray", "head:6379", 0.5, 1.0, 3)
    assert load["gated"] is False  # a shard is gated by `merge`, never alone


def test_defaults_are_unsharded_and_local(stand_in, tmp_path):  # noqa: F811
    fake = stand_in(gated_report())
    cli.main(["--out", str(tmp_path / "r.json"), "--quiet"])
    options, gating = fake.calls[1][1]["options"], fake.calls[1][1]["gating"]
    assert (gating.shard, options.executor, options.ray_address) == (None, "local", None)


@pytest.mark.parametrize("argv, message", [
    (["--shard", "5/4"], "--shard: I must be 1..4"),
    (["--worker-gpus", "1"], "need --executor ray"),
    (["--executor", "ray", "--worker-cpus", "-1"], "--worker-cpus: must be a number >= 0"),
])
def test_bad_scale_options_are_exit_2_before_anything_runs(stand_in, tmp_path, capsys, argv, message):  # noqa: F811
    fake = stand_in(gated_report())
    assert cli.main(["--out", str(tmp_path / "r.json"), *argv]) == 2
    assert message in capsys.readouterr().err and fake.calls == []
