"""What the wheel installs (pyproject.toml): every harness package, the reference adapters under a distinct
name and never a generic `adapters`, the shipped sets and baselines as package data.

The wheel itself is built, installed and run in tests/contract/test_installed.py (a slow group).
"""

import pytest

from tests.conftest import REPO_ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11+


def setuptools_config() -> dict:
    with (REPO_ROOT / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)["tool"]["setuptools"]


def code_packages(folder: str, name: str) -> set[str]:
    root = REPO_ROOT / folder
    return {".".join((name, *init.parent.relative_to(root).parts)) for init in root.rglob("__init__.py")
            if "__pycache__" not in init.parts}


def test_every_package_of_the_repository_is_listed_and_nothing_else():
    config = setuptools_config()
    assert set(config["packages"]) == (code_packages("harness", "harness")
                                       | code_packages("adapters", "retrieval_gate_adapters")
                                       | {"harness._shipped.sets", "harness._shipped.baselines"})
    assert config["package-dir"] == {"retrieval_gate_adapters": "adapters", "harness._shipped.sets": "sets",
                                     "harness._shipped.baselines": "baselines"}


def test_no_generic_top_level_name_is_installed():
    top_level = {name.split(".")[0] for name in setuptools_config()["packages"]}
    assert top_level == {"harness", "retrieval_gate_adapters"}


def test_the_shipped_sets_and_baselines_travel_whole_and_so_does_the_tuned_fusion_table():
    data = setuptools_config()["package-data"]
    assert data == {"harness._shipped.sets": ["**/*"], "harness._shipped.baselines": ["**/*.json"],
                    "retrieval_gate_adapters": ["fusion_tuned.json"]}
    assert (REPO_ROOT / "adapters" / "fusion_tuned.json").is_file()  # adapters/fusion.py TUNED_TABLE
    assert not [path for path in (REPO_ROOT / "baselines").rglob("*") if path.is_file() and path.suffix != ".json"]


def test_the_version_has_one_home():
    """harness/version.py: the wheel's version is read from it, and `harness.__version__` is it."""
    import harness
    from harness import version
    with (REPO_ROOT / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert setuptools_config()["dynamic"]["version"] == {"attr": "harness.version.__version__"}
    assert harness.__version__ == version.__version__
