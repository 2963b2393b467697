"""A team's repository end to end (docs/commands.md, "A team's layout"): `init` writes a starter layout that
runs and gates with the real BM25 adapter, never overwrites, never brings back an example set the team
replaced, keeps `.retrieval-gate/` out of git, names the team's adapter in the config and writes CI jobs
that install this harness and that GitHub's published workflow schema accepts; `--set all` with a set not
in the baseline still passes, naming the set and how to baseline it; `import-beir` writes into the team's
sets folder, never the shipped one; `harness.gate(["all"])` selects as the command does."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import harness
from harness.commands.cli import main
from harness.commands.init import policy_document, starter_files
from harness.layout import read_config
from harness.gating.policy import GatePolicy, load_policy
from harness.scoring.evaluate import policy_metric_name
from harness.layout import resolve
from harness.shipped import shipped_sets_dir
from tests.conftest import FIXTURES, require_module

STARTER = sorted(starter_files())


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """An empty team repository (its .git stops the config search), as the working folder."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def test_init_writes_every_starter_file_and_the_starter_set_gates(repo, capsys):
    assert main(["init"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert all(line.startswith("wrote ") for line in out) and sorted(line.split()[1] for line in out) == STARTER
    assert sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts) == STARTER
    # no baseline yet: `all` is every set found (the example), and the gate asks for one
    assert main(["--set", "all", "--out", "r.json", "--quiet"]) == 2
    assert "no baseline file; record one with --update-baseline" in capsys.readouterr().err
    assert main(["--set", "all", "--update-baseline", "--yes", "--out", "r.json", "--quiet"]) == 0
    recorded = json.loads((repo / "baselines" / "current.json").read_text())
    assert list(recorded["sets"]) == ["example"] and recorded["sets"]["example"]["query_count"] == 5
    assert main(["--set", "all", "--out", "r.json", "--quiet"]) == 0
    report = json.loads((repo / "r.json").read_text())
    assert [s["name"] for s in report["sets"]] == ["example"] and report["gates"]
    assert report["provenance"]["policy"]["source"] == "gate-policy.json"


def test_init_never_overwrites_and_says_what_it_kept(repo, capsys):
    mine = {"retrieval-gate.toml": b"sets = \"quality\"\n", "budgets.json": b"not even json",
            ".github/workflows/retrieval-gate.yml": b"name: ours\n"}
    for path, data in mine.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(data)
    (repo / "sets" / "example").mkdir(parents=True)
    (repo / "sets" / "example" / "set.json").symlink_to(repo / "nowhere.json")  # dangling: kept too
    assert main(["init", str(repo)]) == 0
    lines = capsys.readouterr().out.splitlines()
    kept = sorted(line.split()[1] for line in lines if line.startswith("kept "))
    assert kept == sorted(str(repo / path) for path in [*mine, "sets/example/set.json"])
    assert len(lines) == len(STARTER)
    assert {path: (repo / path).read_bytes() for path in mine} == mine
    assert os.readlink(repo / "sets" / "example" / "set.json") == str(repo / "nowhere.json")
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    assert main(["init", str(repo)]) == 0  # a second time: everything kept, byte for byte
    assert all(line.startswith("kept ") for line in capsys.readouterr().out.splitlines())
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()} == before


def test_init_into_a_folder_that_cannot_be_written_is_exit_2(repo, capsys):
    (repo / "a-file").write_text("x")
    assert main(["init", "a-file/team"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "init: a-file/team/retrieval-gate.toml: cannot be written" in err


def test_the_starter_policy_is_the_default_policy(tmp_path):
    path = tmp_path / "gate-policy.json"
    path.write_text(json.dumps(policy_document()))
    loaded = load_policy(path, policy_metric_name)
    assert loaded == GatePolicy(source=str(path))
    # and the file spells out every field a policy has (none left implicit): the defaults, hand-listed
    assert policy_document() == {
        "format": 1, "metrics": ["recall@10"], "drop_limit_points": 2.0,
        "categories": {"gate": True, "min_queries": 1, "rule": "holm", "discount_queries": 1},
        "significance": {"require_ci_below_zero": False},
        "latency": {"relative_p95_limit_percent": 100.0, "min_increase_ms": 10.0, "min_samples": 20,
                    "relative_fails": False, "paired_warn_ratio": 1.5, "paired_fails_ratio": 3.0},
        "judged": {"warn_drop_points": 10.0}, "ratchet": {"improvement_points": None},
        "drift": {"limit_points": None, "baselines": 10, "days": None, "fails": False},
        "resources": {"relative_limit_percent": 50.0, "min_increase_seconds": 2.0, "min_increase_mib": 64.0,
                      "min_increase_bytes": 1048576.0, "relative_fails": False}}


def test_a_set_not_in_the_baseline_is_named_not_run_and_the_gate_passes(repo, capsys):
    assert main(["init"]) == 0
    assert main(["--set", "all", "--update-baseline", "--yes", "--out", "r.json", "--quiet"]) == 0
    shutil.copytree(repo / "sets" / "example", repo / "sets" / "extra")
    meta = json.loads((repo / "sets" / "extra" / "set.json").read_text())
    (repo / "sets" / "extra" / "set.json").write_text(json.dumps({**meta, "name": "extra"}))
    capsys.readouterr()
    assert main(["--set", "all", "--out", "r.json"]) == 0
    err = capsys.readouterr().err
    notice = ("set extra is not in baselines/current.json: not gated (baseline it: python -m harness --set extra "
              "--update-baseline)")
    assert err.count(notice) == 1
    report = json.loads((repo / "r.json").read_text())
    assert [s["name"] for s in report["sets"]] == ["example"] and notice in report["warnings"]
    # the same selection everywhere `all` is expanded: sets verify, and the Python API
    assert main(["sets", "verify"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ok  example:") and "extra" not in out and notice in err
    api_report = harness.gate(["all"], backend="bm25")  # the backend named is repeated in the notice's command
    assert [s.name for s in api_report.sets] == ["example"]
    assert notice.replace("--update-baseline)", "--update-baseline --backend bm25)") in api_report.warnings
    # baselining it as the notice says makes it part of `all`
    assert main(["--set", "extra", "--update-baseline", "--yes", "--out", "r.json", "--quiet"]) == 0
    assert [p.name for p in resolve().select(["all"])[0]] == ["example", "extra"]


def test_import_beir_writes_into_the_teams_sets_folder_never_the_shipped_one(repo, capsys):
    (repo / "retrieval-gate.toml").write_text('sets = "quality/sets"\n')
    assert main(["sets", "import-beir", str(FIXTURES / "beir"), "--name", "bakery"]) == 0
    assert (repo / "quality" / "sets" / "bakery" / "set.json").is_file()
    assert capsys.readouterr().out.startswith("quality/sets/bakery: 4 queries, 7 documents")
    assert main(["sets", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:1] == ["bakery"]
    shipped_before = sorted(p.name for p in shipped_sets_dir().iterdir())
    assert main(["sets", "--sets-dir", str(shipped_sets_dir()), "import-beir", str(FIXTURES / "beir"),
                 "--name", "bakery2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is the shipped sets folder" in err
    assert sorted(p.name for p in shipped_sets_dir().iterdir()) == shipped_before


def test_pin_never_writes_into_a_shipped_set(repo, capsys):
    before = (shipped_sets_dir() / "memory" / "set.json").read_bytes()
    assert main(["sets", "pin", "memory"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pin: set memory is a shipped set" in err
    assert (shipped_sets_dir() / "memory" / "set.json").read_bytes() == before


def test_init_never_brings_back_the_example_set_a_team_replaced(repo, capsys):
    assert main(["init"]) == 0
    shutil.copytree(repo / "sets" / "example", repo / "sets" / "mine")
    meta = json.loads((repo / "sets" / "mine" / "set.json").read_text())
    (repo / "sets" / "mine" / "set.json").write_text(json.dumps({**meta, "name": "mine"}))
    shutil.rmtree(repo / "sets" / "example")
    capsys.readouterr()
    assert main(["init"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert not (repo / "sets" / "example").exists()
    assert out[-1] == "skip  sets/example/ (the example set: sets holds the team's own)"
    assert all(line.startswith("kept ") for line in out[:-1]) and not any("example" in line for line in out[:-1])
    # a new folder with a config naming its sets folder: the team's sets there count too
    team = repo / "other"
    (team / "quality" / "sets").mkdir(parents=True)
    shutil.copytree(repo / "sets" / "mine", team / "quality" / "sets" / "mine")
    (team / "retrieval-gate.toml").write_text('sets = "quality/sets"\n')
    assert main(["init", str(team)]) == 0
    assert not (team / "sets").exists() and "skip " in capsys.readouterr().out


def test_init_never_brings_back_the_example_set_a_team_deleted(repo, capsys):
    assert main(["init"]) == 0
    shutil.rmtree(repo / "sets" / "example")  # deleted, nothing in its place yet
    capsys.readouterr()
    assert main(["init"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert not (repo / "sets" / "example").exists()
    assert out[-1] == ("skip  sets/example/ (the example set: deleted since an earlier init wrote "
                       "retrieval-gate.toml; init never brings back what a team removed)")
    assert all(line.startswith("kept ") for line in out[:-1])


def test_reports_runs_write_stay_out_of_git(repo, capsys):
    """A 600 KB report got committed: init's .retrieval-gate/.gitignore keeps everything a run writes there out
    of git, itself committed with the layout (checked by git itself)."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    subprocess.run([git, "init", "-q"], cwd=repo, check=True)
    assert main(["init"]) == 0
    assert main(["--set", "all", "--update-baseline", "--yes", "--quiet"]) == 0
    assert (repo / ".retrieval-gate" / "report.json").is_file()
    status = subprocess.run([git, "status", "--porcelain", "--untracked-files=all"], cwd=repo, check=True,
                            capture_output=True, text=True).stdout.splitlines()
    untracked = sorted(line[3:] for line in status)
    assert ".retrieval-gate/.gitignore" in untracked and "baselines/current.json" in untracked
    assert not [path for path in untracked if path.startswith(".retrieval-gate/") and path != ".retrieval-gate/.gitignore"]


def test_init_names_the_teams_adapter_in_the_config_and_its_ci_gates_it(repo, capsys):
    adapter = [sys.executable, "-m", "adapters.bm25"]
    assert main(["init", "--expect-banner", "--install", "git+https://example.org/retrieval-gate@v1", "--adapter",
                 "--", *adapter]) == 0
    assert read_config(repo / "retrieval-gate.toml") == {"adapter": adapter, "expect_banner": True}
    workflow = (repo / ".github" / "workflows" / "retrieval-gate.yml").read_text()
    # the team's adapter brings its own dependencies: no [bm25] extra
    assert "python -m pip install 'retrieval-gate @ git+https://example.org/retrieval-gate@v1'\n" in workflow
    assert "python -m pip install 'retrieval-gate @ git+https://example.org/retrieval-gate@v1'\n" in (
        repo / ".akurai.yml").read_text()
    # the run line names no backend: the config's adapter answers, and check-adapter checks it
    assert main(["--set", "all", "--update-baseline", "--yes", "--quiet", "--out", "r.json"]) == 0
    assert json.loads((repo / "r.json").read_text())["provenance"]["backend"]["argv"] == adapter
    capsys.readouterr()
    assert main(["check-adapter", "--set", "example", "--queries", "20", "--log", "check.log"]) == 0
    assert capsys.readouterr().out.startswith(f"adapter: {' '.join(adapter)}\n")


@pytest.mark.parametrize("argv, error", [
    (["init", "--adapter"], "init: --adapter takes the adapter's command after '--'"),
    (["init", "--", "./a"], "init: a command after '--' needs --adapter"),
    (["init", "--expect-banner"], "init: --expect-banner: only with --adapter"),
    (["init", "--install", "numpy"], "init: --install: 'numpy': give a wheel file"),
    (["init", "--install", "retrieval-gate; rm -rf ~"], "init: --install: 'retrieval-gate; rm -rf ~': give a wheel"),
])
def test_init_refuses_what_it_cannot_write_as_one_line(repo, capsys, argv, error):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and error in err, err
    assert not any(repo.iterdir()) or [p.name for p in repo.iterdir()] == [".git"]


@pytest.mark.parametrize("install, line", [
    ("ci/retrieval_gate-0.1.0-py3-none-any.whl", "'./ci/retrieval_gate-0.1.0-py3-none-any.whl[bm25]'"),
    ("git+https://example.org/o/retrieval-gate@v0.1.0", "'retrieval-gate[bm25] @ git+https://example.org/o/"
                                                        "retrieval-gate@v0.1.0'"),
    ("retrieval-gate==0.1.0", "'retrieval-gate[bm25]==0.1.0'"),
    (None, None),  # how this harness was installed
])
def test_the_workflow_is_valid_under_githubs_published_schema(repo, capsys, install, line):
    """Checked against the schema GitHub's editors use (SchemaStore's github-workflow.json, as check-jsonschema
    ships it, licence beside it: offline), and a broken copy is not, so the check can fail."""
    require_module("check_jsonschema")
    assert main(["init", *(["--install", install] if install else [])]) == 0
    workflow = repo / ".github" / "workflows" / "retrieval-gate.yml"
    if line is not None:
        assert f"          python -m pip install {line}\n" in workflow.read_text()

    def valid(path):
        done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                               str(path)], capture_output=True, text=True, timeout=300)
        return done.returncode == 0, done.stdout + done.stderr
    ok, why = valid(workflow)
    assert ok, why
    broken = repo / "broken.yml"
    broken.write_text(workflow.read_text().replace("    runs-on: ubuntu-latest\n", "    runs_on: ubuntu-latest\n"))
    assert not valid(broken)[0]


def test_the_configs_adapters_start_in_the_configs_folder_from_any_folder_below(repo, monkeypatch, capsys):
    # the config's relative paths are the team folder's; its adapter commands too, so a run, check-adapter and
    # harness.gate from a folder below (the config found walking up) start `search/adapter.py` where it is
    adapter = [sys.executable, os.path.join("search", "adapter.py")]
    assert main(["init", "--expect-banner", "--adapter", "--", *adapter]) == 0
    (repo / "search").mkdir()
    (repo / "search" / "adapter.py").write_text(
        "import runpy\nrunpy.run_module('adapters.bm25', run_name='__main__')\n")
    with (repo / "retrieval-gate.toml").open("a") as config:
        config.write(f"baseline_adapter = {json.dumps(adapter)}\n")  # paired latency: the baseline's, the same one
    below = repo / "src" / "deep"
    below.mkdir(parents=True)
    monkeypatch.chdir(below)
    assert main(["--set", "all", "--update-baseline", "--yes", "--quiet", "--out", "r.json"]) == 0
    assert (repo / "baselines" / "current.json").is_file() and (below / "r.json").is_file()
    assert main(["--set", "all", "--quiet", "--out", "r.json"]) == 0
    report = json.loads((below / "r.json").read_text())
    assert report["provenance"]["backend"]["argv"] == adapter and report["provenance"]["paired_latency"]
    capsys.readouterr()
    assert main(["check-adapter", "--set", "example", "--queries", "20", "--log", "check.log"]) == 0
    assert harness.gate(["all"]).complete
    # a command given on the command line starts in the working folder, where this relative path names nothing
    assert main(["--set", "all", "--quiet", "--out", "r.json", "--adapter", "--", *adapter]) == 3
