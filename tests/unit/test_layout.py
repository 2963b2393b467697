"""harness/layout.py: where a team's files are found, each level overriding the next (option > config >
the team folder's conventional paths > the shipped data), and every config defect one line, exit 2."""

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from harness.commands.cli import main
from harness.errors import SetError, UsageError
from harness.layout import FROM_LAYOUT, find_config, resolve
from harness.shipped import shipped_baselines_dir, shipped_sets_dir
from tests.conftest import TINY_SET

SHIPPED = sorted(path.parent.name for path in shipped_sets_dir().glob("*/set.json"))  # whatever the folder ships


@pytest.fixture
def team(tmp_path: Path) -> Path:
    """A team's repository: its root holds .git, so no config above it is ever read."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def add_set(sets_dir: Path, name: str) -> Path:
    target = sets_dir / name
    shutil.copytree(TINY_SET, target)
    meta = json.loads((target / "set.json").read_text())
    (target / "set.json").write_text(json.dumps({**meta, "name": name}))
    return target


def baseline_recording(path: Path, *names: str) -> Path:
    """A minimal valid baseline file whose `sets` records `names` (its entries are never compared here)."""
    shipped = json.loads((shipped_baselines_dir() / "current.json").read_text())
    entry = next(iter(shipped["sets"].values()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**shipped, "sets": {name: entry for name in names}}))
    return path


def test_without_anything_the_shipped_sets_and_baseline(team):
    layout = resolve(cwd=team)
    assert layout.sets_dir == team / "sets" and not layout.sets_dir.exists()
    assert layout.shipped_sets == shipped_sets_dir()
    assert layout.baseline == shipped_baselines_dir() / "current.json"
    assert (layout.budgets, layout.policy, layout.config, layout.backend, layout.workers) == (None,) * 5


def test_conventional_paths_override_the_shipped_data(team):
    add_set(team / "sets", "mine")
    layout = resolve(cwd=team)
    # the team has sets: its baseline is its own, even before it exists (--update-baseline writes it there)
    assert layout.sets_dir == team / "sets" and layout.baseline == team / "baselines" / "current.json"
    for name in ("budgets.json", "gate-policy.json"):
        (team / name).write_text("{}")
    layout = resolve(cwd=team)
    assert (layout.budgets, layout.policy) == (team / "budgets.json", team / "gate-policy.json")


def test_the_config_overrides_the_conventional_paths_relative_to_its_folder(team):
    add_set(team / "sets", "mine")
    for name in ("budgets.json", "gate-policy.json"):
        (team / name).write_text("{}")
    (team / "retrieval-gate.toml").write_text('sets = "quality/sets"\nbaseline = "quality/base.json"\n'
                                              'budgets = "quality/b.json"\npolicy = "quality/p.json"\n'
                                              'backend = "onnx"\nworkers = 3\nhistory = "ci/history.sqlite"\n')
    below = team / "src" / "pkg"
    below.mkdir(parents=True)
    layout = resolve(cwd=below)  # found walking up; its paths are the config folder's
    assert layout.config == (team / "retrieval-gate.toml").resolve()
    quality = team.resolve() / "quality"
    assert (layout.sets_dir, layout.baseline, layout.budgets, layout.policy) == (
        quality / "sets", quality / "base.json", quality / "b.json", quality / "p.json")
    assert (layout.backend, layout.workers, layout.history) == ("onnx", 3, team.resolve() / "ci" / "history.sqlite")


def test_the_configs_baseline_adapter_is_the_paired_latency_default(team):
    assert resolve(cwd=team).baseline_adapter == ()  # none: latency compared across runs
    (team / "retrieval-gate.toml").write_text('baseline_adapter = ["python", "../base/adapter.py"]\n')
    assert resolve(cwd=team).baseline_adapter == ("python", "../base/adapter.py")
    (team / "retrieval-gate.toml").write_text('baseline_adapter = "python ../base/adapter.py"\n')
    with pytest.raises(UsageError, match="baseline_adapter: expected the adapter's argv as a list"):
        resolve(cwd=team)


def test_no_history_store_without_the_config_key(team):
    assert resolve(cwd=team).history is None  # a run appends nowhere unless asked


def test_options_override_the_config(team):
    (team / "retrieval-gate.toml").write_text('sets = "a"\nbaseline = "b.json"\nbudgets = "c.json"\npolicy = "d.json"\n')
    given = [Path("/x/sets"), Path("/x/base.json"), Path("/x/budgets.json"), Path("/x/policy.json")]
    layout = resolve(sets_dir=given[0], baseline=given[1], budgets=given[2], policy=given[3], cwd=team)
    assert [layout.sets_dir, layout.baseline, layout.budgets, layout.policy] == given
    assert resolve(baseline=None, cwd=team).baseline is None  # the API's "measure, never gate"
    assert resolve(baseline=FROM_LAYOUT, cwd=team).baseline == team.resolve() / "b.json"


def test_pyproject_table_is_a_config_and_the_walk_stops_at_the_repository_root(team, tmp_path):
    (tmp_path / "retrieval-gate.toml").write_text('sets = "outside"\n')  # above the repository: never read
    (team / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_config(team) is None
    (team / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.retrieval-gate]\nsets = "q"\n')
    assert find_config(team) == (team / "pyproject.toml").resolve()
    assert resolve(cwd=team).sets_dir == team.resolve() / "q"
    (team / "retrieval-gate.toml").write_text('sets = "r"\n')  # the dedicated file first
    assert resolve(cwd=team).sets_dir == team.resolve() / "r"


@pytest.mark.parametrize("text, expected", [
    ('colour = "red"\n', "retrieval-gate.toml: colour: unknown key (known: sets, baseline, budgets, policy, adapter, "
                         "expect_banner, backend, workers, history, baseline_adapter)"),
    ('adapter = "python search/adapter.py"\n', "retrieval-gate.toml: adapter: expected the adapter's argv as a list of "
                                               "non-empty strings"),
    ("adapter = []\n", "retrieval-gate.toml: adapter: expected the adapter's argv"),
    ('adapter = ["python", ""]\n', "retrieval-gate.toml: adapter: expected the adapter's argv"),
    ('adapter = ["./a"]\nexpect_banner = "yes"\n', "retrieval-gate.toml: expect_banner: expected true or false"),
    ("expect_banner = true\n", "retrieval-gate.toml: expect_banner: only with adapter"),
    ('adapter = ["./a"]\nbackend = "bm25"\n', "retrieval-gate.toml: backend: and adapter: give one"),
    ('[tool.retrieval-gate]\nsets = "q"\n', "retrieval-gate.toml: [tool]: no table here: write the keys at the top "
                                             "of retrieval-gate.toml"),
    ('[retrieval_gate]\nsets = "q"\n', "retrieval-gate.toml: [retrieval_gate]: no table here"),
    ("x = " + "[" * 3000 + "]" * 3000 + "\n", "retrieval-gate.toml: not valid TOML: nested too deeply"),
    ("sets = 5\n", "retrieval-gate.toml: sets: expected a path as a non-empty string, got 5"),
    ('history = ""\n', "retrieval-gate.toml: history: expected a path as a non-empty string, got ''"),
    ('workers = "2"\n', "retrieval-gate.toml: workers: expected an integer from 1 to 1024, got '2'"),
    ("workers = true\n", "retrieval-gate.toml: workers: expected an integer from 1 to 1024, got True"),
    ("backend = 1\n", "retrieval-gate.toml: backend: expected one of bm25, hybrid, onnx, got 1"),
    ('backend = ["bm25"]\n', "retrieval-gate.toml: backend: expected one of bm25, hybrid, onnx, got ['bm25']"),
    ('backend = "elastic"\n', "retrieval-gate.toml: backend: expected one of bm25, hybrid, onnx, got 'elastic'"),
    ("sets = \n", "retrieval-gate.toml: not valid TOML: "),
])
def test_a_config_defect_is_one_line_naming_file_and_key_and_exit_2(team, monkeypatch, capsys, text, expected):
    (team / "retrieval-gate.toml").write_text(text)
    monkeypatch.chdir(team)
    assert main(["--set", "all", "--no-gate", "--out", str(team / "r.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err, err


def test_a_pyproject_defect_names_the_table(team):
    (team / "pyproject.toml").write_text("[tool.retrieval-gate]\nbaseline = []\n")
    with pytest.raises(UsageError, match=r"pyproject.toml: tool.retrieval-gate.baseline: expected a path"):
        resolve(cwd=team)


def test_a_name_is_the_teams_set_first_then_a_shipped_one(team):
    mine = add_set(team / "sets", "memory")  # shadows the shipped memory set
    layout = resolve(cwd=team)
    assert layout.select(["memory"])[0] == [mine]
    assert layout.select(["dedupe"])[0] == [shipped_sets_dir() / "dedupe"]
    with pytest.raises(SetError, match=r"set 'nope': no .*sets/nope/set.json "
                                       + re.escape(f"(available: memory; shipped: {', '.join(SHIPPED)})")):
        layout.select(["nope"])[0]


def test_all_is_every_set_found_without_a_baseline_file(team):
    # no sets of the team's: the shipped ones, as the shipped baseline records them (not the companions)
    recorded = sorted(json.loads((shipped_baselines_dir() / "current.json").read_text())["sets"])
    assert [p.name for p in resolve(cwd=team).select(["all"])[0]] == recorded
    add_set(team / "sets", "one")
    add_set(team / "sets", "two")
    assert resolve(cwd=team).select(["all"]) == ([team / "sets" / "one", team / "sets" / "two"], [])


def test_all_is_what_the_baseline_records_and_names_the_others(team):
    add_set(team / "sets", "one")
    add_set(team / "sets", "two")
    baseline = baseline_recording(team / "baselines" / "current.json", "one")
    folders, notices = resolve(cwd=team).select(["all"])
    assert folders == [team / "sets" / "one"]
    assert notices == [f"set two is not in {baseline}: not gated (baseline it: python -m harness --set two "
                       f"--update-baseline)"]
    given = baseline_recording(team / "other.json", "two")
    folders, notices = resolve(baseline=given, cwd=team).select(["all"])  # the command repeats a given baseline
    assert folders == [team / "sets" / "two"] and notices[0].endswith(f"--update-baseline --baseline {given})")
    assert resolve(cwd=team).select(["two"]) == ([team / "sets" / "two"], [])  # named: run, no notice


def test_sets_another_baseline_records_are_named_with_the_command_that_gates_them(team):
    for name in ("one", "two", "three"):
        add_set(team / "sets", name)
    baseline = baseline_recording(team / "baselines" / "current.json", "one")
    (team / "baselines" / "notes.json").write_text('{"not": "a baseline"}')  # not a baseline: passed over
    folders, notices = resolve(cwd=team).select(["all"])
    assert folders == [team / "sets" / "one"]
    assert notices == [f"sets three, two are not in {baseline}: not gated (baseline them: python -m harness --set three "
                       f"--set two --update-baseline)"]
    other = baseline_recording(team / "baselines" / "more" / "current.json", "two", "three")
    folders, notices = resolve(cwd=team).select(["all"])
    assert notices == [f"sets three, two are not in {baseline}: not gated here; {other} records them (gate them: "
                       f"python -m harness --set three --set two --baseline {other})"]
    _, given = resolve(baseline=baseline, cwd=team).select(["all"])  # the given --baseline is replaced, not repeated
    assert given[0].endswith(f"--set three --set two --baseline {other})") and given[0].count("--baseline") == 1
    # from the baseline one folder down, the one above is found too (baselines/companions/ and baselines/)
    _, below = resolve(baseline=other, cwd=team).select(["all"])
    assert below == [f"set one is not in {other}: not gated here; {baseline} records it (gate it: python -m harness "
                     f"--set one --baseline {baseline})"]


def test_sets_list_marks_a_shadowed_shipped_set(team, monkeypatch, capsys):
    add_set(team / "sets", "memory")
    monkeypatch.chdir(team)
    assert main(["sets", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[0] for line in lines] == ["memory", *SHIPPED]
    assert " sets " in lines[0] and "shipped, shadowed by sets/memory" in lines[1 + SHIPPED.index("memory")]
    assert lines[1].split()[4] == "shipped" and "shadowed" not in lines[1]


def test_the_config_record_types_every_key_the_config_may_hold():
    import typing
    from harness.layout import CONFIG_KEYS, Config
    assert typing.get_type_hints(Config) == {key: type(default) for key, (_, default) in CONFIG_KEYS.items()}


def test_a_set_folder_not_named_as_its_set_is_refused_wherever_it_is_found_by_name(team, monkeypatch, capsys):
    add_set(team / "sets", "one")
    (team / "sets" / "one").rename(team / "sets" / "uno")  # set.json still says "one"
    layout = resolve(cwd=team)
    for names in (["all"], ["uno"]):
        with pytest.raises(SetError, match=r"sets/uno/set.json: name: 'one', but its folder is 'uno'; sets are found "
                                           r"by name: rename one so they agree"):
            layout.select(names)
    assert layout.select([str(team / "sets" / "uno")])[0] == [team / "sets" / "uno"]  # a folder given as a path
    monkeypatch.chdir(team)
    assert main(["--set", "all", "--update-baseline", "--yes", "--quiet", "--out", str(team / "r.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "name: 'one', but its folder is 'uno'" in err
    assert not (team / "baselines").exists()  # no baseline recorded under a name `all` could not find again



@pytest.mark.parametrize("text, table", [
    ('[tool.retrieval_gate]\nsets = "q"\n', "[tool.retrieval_gate]"),  # the usual Python spelling
    ('[tool.RetrievalGate]\nsets = "q"\n', "[tool.RetrievalGate]"),
    ('[tool.retrieval-gates]\nsets = "q"\n', "[tool.retrieval-gates]"),
    ('[tool.retrieval.gate]\nsets = "q"\n', "[tool.retrieval]"),
    ('[retrieval-gate]\nsets = "q"\n', "[retrieval-gate]"),  # outside [tool]
])
def test_a_misspelt_pyproject_table_is_said_with_the_right_spelling_exit_2(team, monkeypatch, capsys, text, table):
    (team / "pyproject.toml").write_text('[project]\nname = "x"\n' + text)
    monkeypatch.chdir(team)
    assert main(["--set", "all", "--no-gate", "--out", str(team / "r.json")]) == 2
    err = capsys.readouterr().err
    assert err == f"harness: error: {(team / 'pyproject.toml').resolve()}: {table}: not read; did you mean " \
                  f"[tool.retrieval-gate]?\n"


@pytest.mark.parametrize("name", ["retrieval_gate.toml", ".retrieval-gate.toml", "RetrievalGate.toml"])
def test_a_misspelt_config_file_is_said_with_the_right_name(team, name):
    (team / name).write_text('sets = "q"\n')
    with pytest.raises(UsageError, match=re.escape(f"{name}: not read; did you mean retrieval-gate.toml?")):
        resolve(cwd=team)


@pytest.mark.parametrize("text", ["tool = 5\n", 'tool = "x"\n', "[tool]\nretrieval = 3\n", "[tool.ruff]\nx = 1\n"])
def test_an_odd_tool_key_of_a_pyproject_that_is_not_ours_is_not_our_business(team, text):
    (team / "pyproject.toml").write_text(text)
    assert find_config(team) is None and resolve(cwd=team).config is None


@pytest.mark.parametrize("where", ["config", "option"])
def test_a_named_sets_folder_that_does_not_exist_is_exit_2_not_the_shipped_sets(team, monkeypatch, capsys, where):
    monkeypatch.chdir(team)
    if where == "config":
        (team / "retrieval-gate.toml").write_text('sets = "quality/sets"\n')
        named = f"{(team / 'retrieval-gate.toml').resolve()}: sets: quality/sets"  # relative to the working folder
        option = []
    else:
        named, option = "--sets-dir: quality/sets", ["--sets-dir", "quality/sets"]
    for argv in (["--set", "all"], ["--set", "all", "--update-baseline", "--yes"], ["--set", "memory"]):
        assert main([*argv, *option, "--quiet", "--out", str(team / "r.json")]) == 2
        err = capsys.readouterr().err
        assert err == f"harness: error: {named}: no such folder (a team's sets are FOLDER/NAME/set.json); create it, " \
                      f"or fix the path\n"
    assert main(["sets", *option, "list"]) == 2 and "no such folder" in capsys.readouterr().err
    assert not (team / "r.json").exists() and not (team / "baselines").exists()


def test_the_configs_adapter_is_what_a_run_and_harness_gate_ask(team, monkeypatch, capsys):
    """`adapter` and `expect_banner` in the config stand for `--adapter --expect-banner -- ARGV`; a backend
    given on the command line (or to harness.gate) still wins."""
    import harness
    add_set(team / "sets", "mine")
    (team / "retrieval-gate.toml").write_text(
        f'adapter = ["{sys.executable}", "-m", "adapters.bm25"]\nexpect_banner = true\n')
    monkeypatch.chdir(team)
    assert main(["--set", "all", "--update-baseline", "--yes", "--quiet", "--out", "r.json"]) == 0
    report = json.loads((team / "r.json").read_text())
    assert report["provenance"]["backend"]["argv"] == [sys.executable, "-m", "adapters.bm25"]
    assert report["provenance"]["adapter"]["expect_banner"] is True
    recorded = json.loads((team / "baselines" / "current.json").read_text())
    assert recorded["backend"]["command"] == ["python", "-m", "adapters.bm25"]
    # (BM25 breaks two of the tiny set's contracts, which the baseline records: only new breaks fail)
    assert main(["--set", "all", "--quiet", "--known-contract-failures", "--out", "r.json"]) == 0
    api_report = harness.gate(["all"], known_contract_failures=True)
    assert api_report.provenance.backend.argv == (sys.executable, "-m", "adapters.bm25") and api_report.exit_code == 0
    assert api_report.provenance.adapter.expect_banner is True
    assert harness.gate(["all"], baseline=None, backend="bm25").provenance.backend.label == "bm25"
