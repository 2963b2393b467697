"""Installed, it works anywhere: the wheel built from this checkout, installed in a fresh venv outside it, runs
the main job from an unrelated folder, on a shipped set and on a team's own layout, and lives beside PyPI's
`adapters` (AdapterHub) without either shadowing the other.

Offline: the wheel is built without build isolation (setuptools and wheel of this venv), installed with
--no-index, and numpy, onnxruntime and tokenizers (the extras) are lent to the fresh venv by a .pth naming a
folder that holds this venv's copies of them and nothing else. The AdapterHub wheel is the one `.ci/run` downloads into .ci-wheels/.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, TINY_SET, require_default_model, require_modules

ADAPTERHUB_WHEELS = REPO_ROOT / ".ci-wheels"
# What the [bm25] and [onnx] extras would install, lent from this venv (onnx and sympy, which only make the
# embedder's graph faster, are left out: the adapter runs the plain model and says so).
LENT = ("numpy", "onnxruntime", "tokenizers")
SOURCES = ("pyproject.toml", "README.md", "harness", "adapters", "sets", "baselines")


def run(argv: list, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in argv], capture_output=True, text=True, timeout=600, **kwargs)


def checked(argv: list, **kwargs) -> subprocess.CompletedProcess:
    done = run(argv, **kwargs)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of this checkout's sources (what the wheel is built from, and a git repository is made of)."""
    require_modules("numpy", "setuptools", "wheel")
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        origin = REPO_ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    return source


@pytest.fixture(scope="module")
def wheel(source, tmp_path_factory) -> Path:
    """The wheel of a copy of this checkout's sources (the build leaves its build/ there, not in the checkout)."""
    dist = tmp_path_factory.mktemp("dist")
    checked([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
             "--disable-pip-version-check", "-q", "-w", dist, source])
    [built] = dist.glob("retrieval_gate-*.whl")
    return built


def fresh_venv(folder: Path, *wheels: Path) -> Path:
    """A venv without pip at `folder`, `wheels` installed into it by this venv's pip, numpy lent; its python."""
    env = clean_env(folder / "cache")
    checked([sys.executable, "-m", "venv", "--without-pip", folder], env=env)
    python = folder / "bin" / "python"
    checked([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q",
             "--disable-pip-version-check", *wheels], env=env)
    lent = folder / "lent"
    lent.mkdir()
    for name in LENT:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            package = Path(spec.origin).parent
            for part in (package, package.parent / f"{name}.libs"):
                if part.exists():
                    (lent / part.name).symlink_to(part)
    purelib = checked([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], env=env).stdout.strip()
    Path(purelib, "lent-numpy.pth").write_text(f"{lent}\n")
    return python


def clean_env(cache: Path) -> dict:
    """No PYTHONPATH (conftest.py points it at this checkout) and a cache of the test's own."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    return {**env, "RETRIEVAL_GATE_CACHE": str(cache)}


def origins(python: Path, *modules: str, env: dict, cwd: Path) -> dict:
    """Where each top-level module would be imported from in that venv (found, not imported)."""
    code = ("import importlib.util, json, sys; print(json.dumps({name: getattr(importlib.util.find_spec(name), "
            "'origin', None) for name in sys.argv[1:]}))")
    return json.loads(checked([python, "-c", code, *modules], env=env, cwd=cwd).stdout)


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    return fresh_venv(tmp_path_factory.mktemp("venv") / "venv", wheel)


def test_the_wheel_holds_two_import_names_and_every_shipped_file(wheel):
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"harness", "retrieval_gate_adapters",
                                                       wheel.name.split("-py3")[0] + ".dist-info"}
    shipped = {name.removeprefix("harness/_shipped/") for name in names if name.startswith("harness/_shipped/")}
    expected = {path.relative_to(REPO_ROOT).as_posix() for folder in ("sets", "baselines")
                for path in (REPO_ROOT / folder).rglob("*") if path.is_file() and "__pycache__" not in path.parts}
    assert shipped == expected


def test_from_an_unrelated_folder_the_shipped_set_is_gated_against_the_shipped_baseline(installed, tmp_path):
    env = clean_env(tmp_path / "cache")
    where = tmp_path / "elsewhere"
    where.mkdir()
    found = origins(installed, "harness", "retrieval_gate_adapters", "adapters", env=env, cwd=where)
    venv = installed.parent.parent
    assert Path(found["harness"]).is_relative_to(venv) and Path(found["retrieval_gate_adapters"]).is_relative_to(venv)
    assert found["adapters"] is None  # the distribution installs no generic `adapters`
    shipped_baseline = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}),
                            "harness", "_shipped", "baselines", "current.json")
    for command in ([installed, "-m", "harness"], [venv / "bin" / "retrieval-gate"]):
        done = run([*command, "--set", "memory"], env=env, cwd=where)
        assert done.returncode == 0, done.stderr
        report = json.loads((where / ".retrieval-gate" / "report.json").read_text(encoding="utf-8"))
        assert report["provenance"]["baseline"]["path"] == str(shipped_baseline)
        assert report["exit_code"] == 0 and [s["name"] for s in report["sets"]] == ["memory"]
        assert report["provenance"]["backend"]["argv"] == [str(installed), "-m", "retrieval_gate_adapters.bm25"]


@pytest.mark.parametrize("backend, module", [("onnx", "onnx_embed"), ("hybrid", "hybrid")])
def test_the_embedding_backends_start_installed(installed, tmp_path, backend, module):
    require_modules("onnxruntime", "tokenizers")
    model = require_default_model()
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    (cache / "models" / model.name).symlink_to(model)  # read only; its derived graphs go to this cache
    where = tmp_path / "elsewhere"
    where.mkdir()
    done = run([installed, "-m", "harness", "--set", "memory", "--backend", backend, "--known-contract-failures"],
               env=clean_env(cache), cwd=where)
    assert done.returncode == 0, done.stderr
    report = json.loads((where / ".retrieval-gate" / "report.json").read_text(encoding="utf-8"))
    gated_against = Path(report["provenance"]["baseline"]["path"])  # the backend's own shipped baseline
    assert gated_against.is_relative_to(installed.parent.parent) and gated_against.name == f"{backend}.json"
    assert report["provenance"]["backend"]["argv"] == [str(installed), "-m", f"retrieval_gate_adapters.{module}"]
    if backend == "hybrid":  # the tuned fusion table travels with the wheel and is read from there
        tuned = json.loads((REPO_ROOT / "adapters" / "fusion_tuned.json").read_text(encoding="utf-8"))
        (entry,) = [entry for entry in tuned["corpora"] if entry["kind"] == "memory"]
        assert report["provenance"]["adapter"]["banner"]["fusion"] == {"memory": entry["fusion"]}


def test_a_team_layout_in_the_working_folder_is_recorded_and_gated_from_there(installed, tmp_path):
    env = clean_env(tmp_path / "cache")
    team = tmp_path / "team"
    shutil.copytree(TINY_SET, team / "sets" / "tiny")
    checked([installed, "-m", "harness", "--set", "tiny", "--update-baseline", "--yes"], env=env, cwd=team)
    recorded = json.loads((team / "baselines" / "current.json").read_text(encoding="utf-8"))
    assert list(recorded["sets"]) == ["tiny"]
    # the tiny set breaks two hard contracts by design: recorded in the baseline, only new ones fail
    done = run([installed, "-m", "harness", "--set", "tiny", "--known-contract-failures"], env=env, cwd=team)
    assert done.returncode == 0, done.stderr
    report = json.loads((team / ".retrieval-gate" / "report.json").read_text(encoding="utf-8"))
    assert report["provenance"]["baseline"]["path"] == "baselines/current.json"  # the team's, not the shipped one
    assert "baselines/current.json" in done.stdout


def test_a_re_baseline_from_an_unrelated_folder_never_writes_the_shipped_data(installed, tmp_path):
    """The shipped baseline is every user's of the environment: a folder without a baseline of its own gets one."""
    env = clean_env(tmp_path / "cache")
    where = tmp_path / "elsewhere"
    where.mkdir()
    venv = installed.parent.parent
    packaged = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}), "harness",
                    "_shipped")
    before = {path: path.read_bytes() for path in packaged.rglob("*") if path.is_file()}
    checked([venv / "bin" / "retrieval-gate", "--set", "memory", "--update-baseline", "--yes", "--quiet"], env=env,
            cwd=where)
    assert list(json.loads((where / "baselines" / "current.json").read_text(encoding="utf-8"))["sets"]) == ["memory"]
    shipped_baseline = packaged / "baselines" / "current.json"
    for argv in (["--baseline", shipped_baseline], ["--out", packaged / "sets" / "memory" / "queries.jsonl"]):
        done = run([installed, "-m", "harness", "--set", "memory", "--update-baseline", "--yes", *argv], env=env,
                   cwd=where)
        assert done.returncode == 2, done.stderr
        [error] = [line for line in done.stderr.splitlines() if "error:" in line]
        assert f"{argv[1]}: is the installed harness's shipped data" in error, error
    assert {path: path.read_bytes() for path in packaged.rglob("*") if path.is_file()} == before


def test_beside_adapterhub_adapters_import_is_theirs_and_our_bm25_still_runs(wheel, tmp_path):
    theirs = sorted(ADAPTERHUB_WHEELS.glob("adapters-*.whl"))
    if not theirs:
        message = f"no AdapterHub wheel in {ADAPTERHUB_WHEELS} (.ci/run downloads it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: .ci/run must download it before the tests)", pytrace=False)
        pytest.skip(message)
    python = fresh_venv(tmp_path / "venv", wheel, theirs[-1])
    env = clean_env(tmp_path / "cache")
    where = tmp_path / "elsewhere"
    where.mkdir()
    code = ("import importlib.metadata, importlib.util, pathlib; dist = importlib.metadata.distribution('adapters'); "
            "origin = pathlib.Path(importlib.util.find_spec('adapters').origin); "
            "print(any(pathlib.Path(dist.locate_file(f)) == origin for f in dist.files))")
    assert checked([python, "-c", code], env=env, cwd=where).stdout.strip() == "True"  # `import adapters`: theirs
    done = run([python, "-m", "harness", "--set", "memory", "--backend", "bm25"], env=env, cwd=where)
    assert done.returncode == 0, done.stderr
    report = json.loads((where / ".retrieval-gate" / "report.json").read_text(encoding="utf-8"))
    assert report["exit_code"] == 0
    assert report["provenance"]["backend"]["argv"] == [str(python), "-m", "retrieval_gate_adapters.bm25"]


# -- the install line `init` writes into a team's CI jobs ----------------------------------------------------

# Lent to the venv the line installs into, with their metadata (so pip counts them as installed): pip to run
# the line, setuptools (and the modules it imports beside it), wheel and packaging to build from git without build isolation,
# numpy for the [bm25] extra.
LENT_WITH_METADATA = ("pip", "setuptools", "_distutils_hack", "pkg_resources", "wheel", "packaging", "numpy")


def venv_with_lent_pip(folder: Path) -> Path:
    """A venv without pip of its own, lent this venv's pip, setuptools, wheel and numpy (metadata included)."""
    env = clean_env(folder / "cache")
    checked([sys.executable, "-m", "venv", "--without-pip", folder / "venv"], env=env)
    python = folder / "venv" / "bin" / "python"
    lent = folder / "lent"
    lent.mkdir()
    purelib = Path(sysconfig.get_path("purelib"))
    for name in LENT_WITH_METADATA:
        for part in [purelib / name, purelib / f"{name}.libs", *purelib.glob(f"{name}-*.dist-info")]:
            if part.exists():
                (lent / part.name).symlink_to(part)
    venv_purelib = checked([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                           env=env).stdout.strip()
    Path(venv_purelib, "lent.pth").write_text(f"{lent}\n")
    return python


@pytest.mark.parametrize("form", ["wheel", "git", "index"])
def test_the_install_line_init_writes_installs_from_a_wheel_file_a_git_url_and_an_index(source, wheel, tmp_path,
                                                                                      form):
    """`init --install` writes one line into the CI jobs; run as the job runs it (bash, the venv's python first on
    PATH), offline: the wheel committed to the repository, a git URL (file://, built without isolation, as a
    runner with network would build it with), or an index (a find-links folder standing in for it). Then the
    team's first baseline and gate run with what it installed."""
    from harness.commands.cli import main as harness_main
    team = tmp_path / "team"
    (team / ".git").mkdir(parents=True)
    env = {**clean_env(tmp_path / "cache"), "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if form == "wheel":
        (team / "ci").mkdir()
        shutil.copy2(wheel, team / "ci" / wheel.name)
        spec = f"ci/{wheel.name}"
    elif form == "git":
        git = shutil.which("git")
        if git is None:
            pytest.skip("git is not installed")
        identity = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
                    "GIT_COMMITTER_EMAIL": "t@example.org"}
        repository = tmp_path / "retrieval-gate"
        shutil.copytree(source, repository, ignore=shutil.ignore_patterns("build", "*.egg-info"))
        for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "release"], ["tag", "v1"]):
            checked([git, *argv], cwd=repository, env={**env, **identity})
        spec = f"git+file://localhost{repository}@v1"  # a URL with a host, as PEP 508 wants
        env["PIP_NO_BUILD_ISOLATION"] = "0"  # pip reads it as --no-build-isolation (setuptools and wheel lent)
    else:
        spec = "retrieval-gate==" + wheel.name.split("-")[1]
        env["PIP_FIND_LINKS"] = str(wheel.parent)
    assert harness_main(["init", str(team), "--install", spec]) == 0
    workflow = (team / ".github" / "workflows" / "retrieval-gate.yml").read_text()
    [line] = [line.strip() for line in workflow.splitlines() if line.strip().startswith("python -m pip install ")]
    python = venv_with_lent_pip(tmp_path)
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    done = run(["bash", "-c", line], cwd=team, env=env)
    assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    found = origins(python, "harness", env=env, cwd=team)
    assert Path(found["harness"]).is_relative_to(python.parent.parent)  # installed, not lent nor the checkout
    checked([python, "-m", "harness", "--set", "all", "--update-baseline", "--yes", "--quiet"], env=env, cwd=team)
    checked([python, "-m", "harness", "--set", "all", "--quiet"], env=env, cwd=team)
