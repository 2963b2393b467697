"""harness.gate as a Python caller meets it: wrong argument types are one UsageError line, never a
TypeError from deep in the run; the errors it raises are importable from `harness` (README)."""

from __future__ import annotations

import pytest

import harness
from harness.errors import HarnessError, UsageError
from tests.conftest import TINY_SET


def test_gates_failed_is_exported_as_the_readme_names_it():
    from harness.errors import GatesFailed
    assert harness.GatesFailed is GatesFailed and "GatesFailed" in harness.__all__
    assert issubclass(harness.GatesFailed, harness.HarnessError)


def test_harness_error_and_usage_error_are_importable_from_harness():
    from harness import HarnessError as exported, UsageError as exported_usage
    assert exported is HarnessError and exported_usage is UsageError
    assert {"HarnessError", "UsageError", "gate", "Report"} <= set(harness.__all__)


@pytest.mark.parametrize("arguments, message", [
    ({"workers": "2"}, "workers: must be int, got str '2'"),
    ({"workers": True}, "workers: must be int, got bool True"),
    ({"repeats": 2.5}, "repeats: must be int, got float 2.5"),
    ({"query_timeout": "30"}, "query_timeout: must be int or float, got str '30'"),
    ({"expect_banner": 1}, "expect_banner: must be bool, got int 1"),
    ({"log_path": 5}, "log_path: must be str or PathLike, got int 5"),
    ({"backend": 123}, "backend: must be a backend name or an adapter argv (a list of strings), got 123"),
    ({"backend": ["./adapter", 1]}, "backend: must be a backend name or an adapter argv"),
    ({"backend": []}, "backend: must be a backend name or an adapter argv"),
    ({"baseline": 5}, "baseline: must be a path (str or os.PathLike), got int 5"),
    ({"sets_dir": None}, "sets_dir: must be a path"),
    ({"query_timeout": 1e10}, "--timeout: must be a positive number of seconds up to 1e+06, got 1e+10"),
    ({"no_such_option": 1}, "no_such_option: not an option of harness.gate"),
    # the gating and report options (GateOptions), checked alike
    ({"known_contract_failures": "yes"}, "known_contract_failures: must be bool, got str 'yes'"),
    ({"condition": "hot"}, "--condition: 'cold' or 'warm', got 'hot'"),
    ({"what_if_min_score": float("nan")}, "--what-if-min-score: must be a finite number, got nan"),
    ({"shard": "5/4"}, "--shard: I must be 1..4"),
])
def test_wrong_types_are_one_usage_error_line(arguments, message):
    arguments = {"baseline": None, **arguments}
    with pytest.raises(UsageError) as caught:
        harness.gate([str(TINY_SET)], **arguments)
    assert str(caught.value).startswith(message)
    assert caught.value.exit_code == 2 and "\n" not in str(caught.value)


def test_sets_must_be_names_and_one_name_alone_is_one_set():
    with pytest.raises(UsageError, match=r"^sets: must be a list of set names or folders, got \[1\]"):
        harness.gate([1], baseline=None)
    report = harness.gate(str(TINY_SET), baseline=None)  # not its letters
    assert report.exit_code == 0 and [s.name for s in report.sets] == ["tiny"]
