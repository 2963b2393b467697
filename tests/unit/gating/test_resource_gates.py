"""Resource budgets and the resource comparison (harness/gating/gates.py `resource_gates`): budgets.json fails,
the baseline comparison warns by default and fails by policy, figures not measured are said, never passed
silently; budgets and policy limits are read strictly, and limits that could never fail are refused."""

from __future__ import annotations

import json

import pytest

from harness.errors import UsageError
from harness.gating.budgets import MAX_STARTUP_SECONDS, Budgets, load_budgets
from harness.gating.gates import resource_gates
from harness.gating.policy import GatePolicy, load_policy
from harness.measured import Aggregates, Latency, Resources, ScopeNumbers, SetNumbers


def numbers(resources: Resources) -> SetNumbers:
    return SetNumbers(name="s", revision=1, corpus_hash="h", k=10, query_count=0,
                      aggregates=Aggregates(ScopeNumbers(0)), latency=Latency(), queries={}, resources=resources)


def gates(now: Resources, base: Resources, budgets: Budgets = Budgets(), policy: GatePolicy = GatePolicy()):
    return {(g.gate, g.metric): g for g in resource_gates(numbers(now), numbers(base), budgets, policy)}


def test_a_budget_exceeded_fails_and_one_met_exactly_passes():
    budgets = Budgets(resources={"peak_rss_mib": 500.0, "startup_seconds": 3.0})
    result = gates(Resources(startup_seconds=3.0, peak_rss_mib=500.1), Resources(), budgets)
    memory, startup = result["memory", "peak RSS"], result["startup", "start-up"]
    assert memory.status == "fail" and (memory.current, memory.limit, memory.unit) == (500.1, 500.0, "MiB")
    assert memory.message == "s peak RSS 500.1 MiB exceeds the budget of 500.0 MiB"
    assert startup.status == "pass"  # equal passes, as the latency budget
    assert ("index-size", "index size") not in result  # not budgeted: no gate


def test_a_budgeted_figure_not_measured_warns_with_the_reason():
    result = gates(Resources(peak_rss_mib=10.0), Resources(), Budgets(resources={"index_bytes": 1000}))
    (gate,) = result.values()
    assert gate.status == "warn" and gate.current is None
    assert "index size not measured (the adapter's banner reports no index_bytes)" in gate.message


def test_growth_beyond_both_the_percent_and_the_floor_warns_by_default():
    # defaults: +50 % and +64 MiB. 200 -> 300 MiB: allowed max(300, 264) = 300, so 300 passes and 300.1 warns.
    assert gates(Resources(peak_rss_mib=300.0), Resources(peak_rss_mib=200.0))["memory-relative", "peak RSS"].status \
        == "pass"
    grown = gates(Resources(peak_rss_mib=300.1), Resources(peak_rss_mib=200.0))["memory-relative", "peak RSS"]
    assert grown.status == "warn" and grown.limit == 300.0
    assert grown.message.endswith("; warning only (policy: resources.relative_fails)")
    # a small adapter: 20 -> 80 MiB is +300 % but only +60 MiB, under the floor
    assert gates(Resources(peak_rss_mib=80.0), Resources(peak_rss_mib=20.0))["memory-relative", "peak RSS"].status \
        == "pass"


def test_growth_fails_by_policy_and_a_null_limit_switches_the_comparison_off():
    fails = GatePolicy(resources_relative_fails=True)
    grown = gates(Resources(startup_seconds=10.0), Resources(startup_seconds=5.0), policy=fails)
    assert grown["startup-relative", "start-up"].status == "fail"  # allowed max(7.5, 7.0) = 7.5 s
    assert gates(Resources(startup_seconds=10.0), Resources(startup_seconds=5.0),
                 policy=GatePolicy(resources_relative_limit_percent=None)) == {}


def test_no_comparison_when_the_baseline_measured_nothing():
    assert gates(Resources(startup_seconds=1.0, peak_rss_mib=50.0, index_bytes=10), Resources()) == {}


def test_index_bytes_use_their_own_floor():
    base = Resources(index_bytes=10_000_000)
    assert gates(Resources(index_bytes=15_000_000), base)["index-size-relative", "index size"].status == "pass"
    grown = gates(Resources(index_bytes=15_000_001), base)["index-size-relative", "index size"]
    assert grown.status == "warn" and grown.limit == 15_000_000


def write(tmp_path, name, document):
    path = tmp_path / name
    path.write_text(json.dumps({"format": 1, **document}))
    return path


def test_budgets_read_the_resources_and_refuse_what_is_no_budget(tmp_path):
    budgets = load_budgets(write(tmp_path, "budgets.json", {"resources": {"startup_seconds": 30, "peak_rss_mib": 1024,
                                                                            "index_bytes": 5_000_000}}))
    assert budgets.resources == {"startup_seconds": 30, "peak_rss_mib": 1024, "index_bytes": 5_000_000}
    assert load_budgets(write(tmp_path, "b2.json", {"p95_ms": {"s": 10}})).resources == {}
    for bad, message in (({"peak_rss": 1}, "resources.peak_rss: unknown field"),
                         ({"peak_rss_mib": 0}, "resources.peak_rss_mib: must be a number above 0"),
                         ({"index_bytes": 1.5}, "resources.index_bytes: must be an integer from 1 to"),
                         ({"startup_seconds": 2e6}, "resources.startup_seconds: must be a number above 0 and up to")):
        with pytest.raises(UsageError, match=message):
            load_budgets(write(tmp_path, "bad.json", {"resources": bad}))


def test_the_policy_section_reads_and_refuses_floors_no_run_could_cross(tmp_path):
    def policy(section):
        return load_policy(write(tmp_path, "gate-policy.json", {"resources": section}), str)
    read = policy({"relative_limit_percent": 20, "min_increase_mib": 8, "relative_fails": True})
    assert (read.resources_relative_limit_percent, read.resources_min_increase_mib, read.resources_relative_fails) \
        == (20, 8, True)
    assert read.to_dict()["resources"]["min_increase_seconds"] == 2.0
    assert policy({"relative_limit_percent": None}).resources_relative_limit_percent is None
    with pytest.raises(UsageError, match=r"gate-policy.json: resources.min_increase_seconds: must be a number from 0 "
                                         r"and below 1000000, got 1000000; no run's figure grows"):
        policy({"min_increase_seconds": int(MAX_STARTUP_SECONDS)})
    with pytest.raises(UsageError, match="resources.relative_fails: must be true or false"):
        policy({"relative_fails": "yes"})
    with pytest.raises(UsageError, match="resources.percent: unknown field"):
        policy({"percent": 5})


def test_the_startup_bound_is_the_longest_wait_a_run_allows():
    from harness.adapter.startup import MAX_WAIT_SECONDS
    assert MAX_STARTUP_SECONDS == MAX_WAIT_SECONDS


def test_calibrated_noise_widens_the_comparison_never_the_budget():
    base, now = Resources(startup_seconds=5.0), Resources(startup_seconds=8.0)  # allowed max(7.5, 7.0) = 7.5 s
    assert gates(now, base)["startup-relative", "start-up"].status == "warn"
    widened = {(g.gate, g.metric): g for g in resource_gates(numbers(now), numbers(base),
                                                              Budgets(resources={"startup_seconds": 7.9}),
                                                              GatePolicy(), noise={"startup_seconds": 0.6})}
    relative = widened["startup-relative", "start-up"]
    assert relative.status == "pass" and relative.limit == 8.1
    assert "+0.60 s calibrated noise" in relative.message
    assert widened["startup", "start-up"].status == "fail"  # the budget of 7.9 s stays


def test_a_startup_budget_no_run_can_reach_is_refused_before_the_adapter_starts(tmp_path):
    import harness
    from tests.conftest import TINY_SET
    path = write(tmp_path, "budgets.json", {"resources": {"startup_seconds": 30}})
    load_budgets(path).check_startup_reach(30.5)  # a start-up of 30.2 s would fail it: fine
    with pytest.raises(UsageError) as caught:
        harness.gate([str(TINY_SET)], baseline=None, budgets=path, startup_limit=30.0,
                     log_path=tmp_path / "adapter.log")
    assert str(caught.value) == (f"{path}: resources.startup_seconds: 30 s: no start-up passes the --startup-limit "
                                 f"of 30 s, so this budget could never fail; give less than 30, or a longer "
                                 f"--startup-limit")
    assert not (tmp_path / "adapter.log").exists()  # refused before the adapter started
