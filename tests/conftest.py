"""Shared fixtures: the tiny committed set and a copy of it that a test may break."""

import os
import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
TINY_SET = FIXTURES / "sets" / "tiny"
SCRIPTED_ADAPTER = FIXTURES / "cli_adapters" / "scripted.py"

# Every process a test starts imports this checkout's `harness` and `adapters`, whether or not it
# was installed (`pip install -e`), and never another copy installed in the same environment: a
# script in tmp_path doing `from harness.adapter import serve`, or `python -m harness` run from
# another folder, finds them through PYTHONPATH. Set once, here, for the whole session.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO_ROOT)] + [part for part in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                        if part and Path(part).resolve() != REPO_ROOT])


# The slow groups: skipped by default so `python -m pytest` stays fast on a 2-core machine, run
# under CI=true (so `.ci/run` runs everything) or with `--slow`. Node-id prefixes; tests/README.md
# gives each group's measured time. The one place that decides what is slow.
SLOW_GROUPS = (
    # the fuzz pass (its regression tests stay in the default)
    "tests/properties/test_fuzz.py::test_fuzz_",
    # every command's worked example, run in the README's order
    "tests/contract/test_worked_examples.py::test_every_example_works_in_the_readmes_order",
    # a team's new set outside its baseline, through four real runs (tests/unit/test_layout.py checks the
    # selection and the notice without processes in the default)
    "tests/contract/test_team_layout.py::test_a_set_not_in_the_baseline_is_named_not_run_and_the_gate_passes",
    # the hypothesis sweeps and the trec_eval / ir_measures equivalence on generated runs (the hand
    # tables of unit/scoring stay in the default)
    "tests/properties/test_properties.py", "tests/properties/test_metrics_properties.py",
    "tests/properties/test_metrics_trec_eval.py", "tests/properties/test_metrics_ir_measures.py",
    # the embedding adapters on real ONNX models (tiny and default): building, fusing and running them
    "tests/unit/adapters/test_onnx_adapter.py", "tests/unit/adapters/test_model_optimise.py",
    "tests/unit/adapters/test_model_store.py", "tests/unit/adapters/test_hybrid.py",
    "tests/unit/adapters/test_long_documents.py", "tests/unit/adapters/test_embedding_cache.py",
    "tests/unit/adapters/test_embedder.py",
    "tests/unit/adapter/test_passages.py::test_onnx_and_hybrid_in_passage_mode_show_a_window_of_each_hit",
    "tests/unit/adapters/test_startup.py::test_reference_adapters_report_progress_before_the_banner[adapters.onnx",
    "tests/unit/adapters/test_startup.py::test_reference_adapters_report_progress_before_the_banner[adapters.hybrid",
    # tests that wait out a timeout, a grace period or a kill by design (the quick fault, signal and
    # watchdog cases stay in the default)
    "tests/contract/test_child.py::test_two_signals_to_the_harness_while_it_stops_a_hung_adapter",
    "tests/contract/test_check_adapter.py::test_a_slow_answer_past_the_timeout_is_caught_and_the_checks_go_on",
    "tests/contract/test_check_adapter.py::test_an_adapter_that_never_prints_nor_reads_fails_once_after_the_start",
    "tests/contract/test_runner.py::test_slow_progress_keeps_each_silence_under_the_timeout_and_succeeds",
    "tests/contract/test_watchdog.py::test_a_sigkilled_harness_has_its_adapter_group_stopped_and_its_folder_removed",
    "tests/contract/test_watchdog.py::test_guards_running_sees_the_guard_of_its_own_run_and_no_other",
    "tests/contract/test_bisect_repository.py::test_a_killed_bisect_leaves_nothing_once_its_guard_has_run",
    # Ray starting instances of its own: a simulated two-node cluster (about 40 s), and runs that start
    # their own local instance (about 10-15 s each)
    "tests/contract/test_ray_cluster.py",
    # every Ray executor test: a local Ray instance per module (about 45 s)
    "tests/contract/test_ray_executor.py",
    # every shipped set, unsharded and merged from 2, 3 and 7 shards, under three policies (about 30 s)
    "tests/contract/test_one_gate.py",
    # arbitrary text through every renderer, GitHub's Markdown renderer and an HTML parser (about 15 s)
    "tests/properties/test_inert_text.py",
    # a pytest of its own per case (about 8 s)
    "tests/contract/test_pytest_plugin.py",
    # the exhaustive real-process matrices: every fault, every signal to a subcommand, every
    # closed-stdout case, every input and environment exit, hostile text through real adapters,
    # adapter garbage on the wire, and both statistics engines side by side (the default keeps the
    # faults of tests/contract/test_runner.py, the exit codes of tests/contract/test_exit_codes.py
    # and the signals of tests/contract/test_check_adapter.py and tests/contract/test_interrupt.py)
    "tests/contract/test_fault_matrix.py", "tests/contract/test_input_and_environment_exits.py",
    "tests/contract/test_hostile_text.py", "tests/contract/test_wire_garbage.py",
    "tests/contract/test_exit_codes.py::test_signal_during_a_subcommand",
    "tests/contract/test_exit_codes.py::test_closed_stdout", "tests/contract/test_exit_codes.py::test_head_one_in_a_shell",
    "tests/unit/scoring/test_stats_engines.py",
    "tests/unit/commands/test_terminal_output.py::test_a_gated_run_ends_with_its_verdict_and_colours_only_when_asked",
    # the wheel built, installed in fresh venvs (beside AdapterHub's `adapters` in one) and run from other folders
    "tests/contract/test_installed.py",
    # real pip and concurrent writers
    "tests/unit/sets/test_sdist_source.py::test_fetch_with_pip_verifies_caches_and_then_works_offline",
    "tests/unit/gating/test_baseline_safety.py::test_concurrent_updates_of_different_sets_all_survive",
)
SLOW_REASON = "slow group: runs under CI=true or with --slow (tests/README.md)"


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="also run the slow groups (on under CI=true)")


def run_slow_groups(config) -> bool:
    return os.environ.get("CI") == "true" or config.getoption("--slow")


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason=SLOW_REASON)
    for item in items:
        if item.nodeid.startswith(SLOW_GROUPS):
            item.add_marker(pytest.mark.slow)
            if not run_slow_groups(config):
                item.add_marker(skip)


@pytest.fixture
def tiny_copy(tmp_path: Path) -> Path:
    """A writable copy of the tiny set, at tmp_path/sets/tiny."""
    target = tmp_path / "sets" / "tiny"
    shutil.copytree(TINY_SET, target)
    return target


def require_module(name: str):
    """Import an optional test dependency (`require_modules` decides: skip without it, fail under CI=true)."""
    import importlib
    require_modules(name)
    return importlib.import_module(name)


def require_default_model() -> Path:
    """The verified default model folder; skip when it is not cached, except under CI=true, where it fails.

    The one place that decides this, so CI can never pass without the tests that need the model.
    """
    from adapters import model_store  # needs the [onnx] extra only when a test asks for the model

    folder = model_store.model_dir()
    if not model_store.is_fetched(folder=folder):
        message = f"default model not in {folder}; run `{model_store.FETCH_COMMAND}`"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: .ci/run must fetch it before the tests)")
        pytest.skip(message)
    return model_store.verify(folder=folder)


def require_modules(*names: str, extra: str = "test") -> None:
    """Skip the calling test (or module) when an optional package (of the [test] extra, or `extra`)
    is missing, naming it; under CI=true fail instead, so CI can never pass without the tests that need it.

    The one place that decides this for optional imports (onnxruntime, tokenizers, onnx,
    pytrec_eval ...), as `require_default_model` does for the model.
    """
    import importlib.util

    missing = [name for name in names if importlib.util.find_spec(name) is None]
    if not missing:
        return
    message = f"needs {', '.join(missing)}: pip install -e '.[{extra}]'"
    if os.environ.get("CI") == "true":
        pytest.fail(message + f" (CI=true: .ci/run installs the [{extra}] extra before the tests)", pytrace=False)
    pytest.skip(message, allow_module_level=True)


@pytest.fixture(scope="session")
def pytrec_eval_required() -> None:
    """For `@pytest.mark.usefixtures("pytrec_eval_required")`: trec_eval itself (pytrec-eval-terrier,
    the [test] extra), skipped with the reason outside CI=true and failed under it."""
    require_modules("pytrec_eval")
