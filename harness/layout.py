"""The team's layout, found once: where its sets, baseline, budgets and gate policy live, and its defaults.

Every command and `harness.gate` resolve paths here, in one order: the command-line option (or
the API argument) > the config file > the conventional paths of the team's folder (`sets/`,
`baselines/current.json`, `budgets.json`, `gate-policy.json`) > the shipped data
(`harness/shipped.py`). The config is the first `retrieval-gate.toml`, or `pyproject.toml` with a
`[tool.retrieval-gate]` table, found walking up from the working folder (stopping at the
repository root); its folder is the team's folder, and relative paths in it are relative to it.
Without a config the team's folder is the working folder. docs/commands.md, "A team's layout".
"""

from __future__ import annotations

import functools
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from harness.errors import UsageError
from harness.gating.baseline import DEFAULT_BASELINE_PATH, Baseline
from harness.gating.budgets import DEFAULT_BUDGETS_PATH
from harness.gating.policy import DEFAULT_POLICY_FILE
from harness.adapter.backends import BACKENDS, DEFAULT_BACKEND, shipped_baseline
from harness.sets.loader import find_sets, same_folder, sets_found, sets_in
from harness.shipped import shipped_sets_dir

CONFIG_FILE = "retrieval-gate.toml"
PYPROJECT_TABLE = "tool.retrieval-gate"
DEFAULT_SETS_DIR = Path("sets")
DEFAULT_WORKERS = 1
# key -> (what it holds, its default as the config file spells it); `init` writes them all, commented.
CONFIG_KEYS: dict[str, tuple[str, object]] = {
    "sets": ("the team's sets folder (NAME/set.json); shipped sets are found after it", str(DEFAULT_SETS_DIR)),
    "baseline": ("the baseline file gated against and written by --update-baseline", str(DEFAULT_BASELINE_PATH)),
    "budgets": ("the p95 latency budgets file (300 ms per set when absent)", str(DEFAULT_BUDGETS_PATH)),
    "policy": ("the gate policy file (the defaults when absent)", str(DEFAULT_POLICY_FILE)),
    "backend": ("the built-in backend a run uses without --backend, --adapter or --run-file", DEFAULT_BACKEND),
    "workers": ("adapter processes per run without --workers", DEFAULT_WORKERS),
    "history": ("the history store each run and re-baseline is appended to without --history (docs/history.md); "
                "none when unset, e.g.", ".retrieval-gate/history.sqlite"),
}
PATH_KEYS = ("sets", "baseline", "budgets", "policy", "history")


class Config(TypedDict, total=False):
    """A config file's keys (CONFIG_KEYS), as `read_config` checked them."""

    sets: str
    baseline: str
    budgets: str
    policy: str
    backend: str
    workers: int
    history: str


class FromLayout:
    """The API's default for a path argument: whatever the layout resolves (not None, which means "none")."""

    def __repr__(self) -> str:
        return "<the team layout's>"


FROM_LAYOUT = FromLayout()


@dataclass(frozen=True)
class Layout:
    """Where a command finds the team's files. `baseline` None: measured, never gated (the API's
    `baseline=None`); `budgets` / `policy` None: the built-in defaults."""

    sets_dir: Path
    shipped_sets: Path
    baseline: Path | None
    budgets: Path | None
    policy: Path | None
    config: Path | None = None
    backend: str | None = None
    workers: int | None = None
    history: Path | None = None  # the history store runs append to (docs/history.md); None: none
    baseline_given: bool = False  # named on the command line (or to the API): repeated in the notice's command

    @property
    def sets_dir_is_shipped(self) -> bool:
        """True when the team's sets folder is the shipped one (a run from this repository's own checkout)."""
        return same_folder(self.sets_dir, self.shipped_sets)

    def select(self, names: Sequence[str]) -> tuple[list[Path], list[str]]:
        """(set folders, notices). `all` is the sets the baseline records when its file exists (each
        found as a name is), else every set found (the team's, or the shipped ones when it has none);
        a set found but not recorded is not run, and one notice line names them and how to baseline one."""
        recorded = None  # `all` is every set found without a baseline file
        if "all" in names and self.baseline is not None and os.path.lexists(self.baseline):
            recorded = frozenset(self.checked_baseline.sets)
        folders = find_sets(list(names), self.sets_dir, shipped=self.shipped_sets, recorded=recorded)
        missing = [] if recorded is None else [
            folder.name for folder in sets_found(self.sets_dir, self.shipped_sets) if folder.name not in recorded]
        if not missing:
            return folders, []
        one = len(missing) == 1
        command = f"python -m harness --set {missing[0] if one else 'NAME'} --update-baseline" + (
            f" --baseline {self.baseline}" if self.baseline_given else "")
        notices = [f"set {missing[0]} is not in {self.baseline}: not gated (baseline it: {command})" if one else
                   f"sets {', '.join(missing)} are not in {self.baseline}: not gated (baseline one: {command})"]
        return folders, notices

    @functools.cached_property
    def checked_baseline(self) -> Baseline:
        """The baseline file, read and checked once per layout: what `all` selects and the gate both need it."""
        assert self.baseline is not None
        return Baseline.read(self.baseline)

    def origin(self, folder: Path) -> str:
        """Where a set folder comes from, for `sets list`: "shipped" or the team's sets folder."""
        return "shipped" if same_folder(folder.parent, self.shipped_sets) else str(self.sets_dir)


def resolve(*, sets_dir: Path | None = None, baseline: Path | None | FromLayout = FROM_LAYOUT,
            budgets: Path | None = None, policy: Path | None = None, cwd: Path | None = None,
            backend: str | None = None, own_adapter: bool = False) -> Layout:
    """The layout from the given paths (None / FROM_LAYOUT: not given), the config and the team's folder.
    `backend`: the built-in backend the run asks, whose shipped baseline gates the shipped sets;
    `own_adapter`: the team's adapter (or run file) is measured, which no shipped baseline describes."""
    here = Path.cwd() if cwd is None else cwd
    config = find_config(here)
    values: Config = read_config(config) if config is not None else {}
    # Paths relative to the team's folder: the config's, else the working folder (kept relative there).
    base = Path() if config is None or same_folder(config.parent, here) else config.parent
    if cwd is not None and base == Path():
        base = cwd

    def configured(key: Literal["sets", "baseline", "budgets", "policy", "history"]) -> Path | None:
        return base / values[key] if key in values else None

    def conventional(name: Path) -> Path | None:
        return base / name if (base / name).exists() else None

    team_sets = sets_dir if sets_dir is not None else configured("sets") or base / DEFAULT_SETS_DIR
    if not isinstance(baseline, FromLayout):
        chosen_baseline = baseline
    else:
        chosen_baseline = configured("baseline") or conventional(DEFAULT_BASELINE_PATH)
        if chosen_baseline is None:  # the shipped baseline describes the shipped sets only
            teams_own = own_adapter or config is not None or bool(sets_in(team_sets))
            built_in = backend or values.get("backend")  # the default's baseline when no built-in one is named
            chosen_baseline = (base / DEFAULT_BASELINE_PATH if teams_own
                               else shipped_baseline(built_in if built_in in BACKENDS else DEFAULT_BACKEND))
    return Layout(sets_dir=team_sets, shipped_sets=shipped_sets_dir(), baseline=chosen_baseline,
                  budgets=budgets or configured("budgets") or conventional(DEFAULT_BUDGETS_PATH),
                  policy=policy or configured("policy") or conventional(DEFAULT_POLICY_FILE),
                  config=config, backend=values.get("backend"), workers=values.get("workers"),
                  history=configured("history"),
                  baseline_given=not isinstance(baseline, FromLayout) and baseline is not None)


def find_config(start: Path) -> Path | None:
    """The first retrieval-gate.toml, or pyproject.toml with [tool.retrieval-gate], from `start` up to
    the repository root (a folder holding .git) or the file-system root."""
    folder = start.resolve()
    while True:
        candidate = folder / CONFIG_FILE
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "retrieval-gate" in _parse(pyproject).get("tool", {}):
            return pyproject
        if (folder / ".git").exists() or folder.parent == folder:
            return None
        folder = folder.parent


def read_config(path: Path) -> Config:
    """The config's keys, checked: an unknown key or a wrong type is one UsageError `FILE: KEY: expected ...`."""
    document = _parse(path)
    where = f"{path}: {PYPROJECT_TABLE}." if path.name == "pyproject.toml" else f"{path}: "
    values = document.get("tool", {}).get("retrieval-gate") if path.name == "pyproject.toml" else document
    if not isinstance(values, dict):
        raise UsageError(f"{where.rstrip('. ')}: must be a table of keys ({', '.join(CONFIG_KEYS)})")
    for key, value in values.items():
        if key not in CONFIG_KEYS:
            raise UsageError(f"{where}{key}: unknown key (known: {', '.join(CONFIG_KEYS)})")
        if key in PATH_KEYS and (not isinstance(value, str) or not value):
            raise UsageError(f"{where}{key}: expected a path as a non-empty string, got {value!r:.60}")
        if key == "backend" and (not isinstance(value, str) or value not in BACKENDS):  # a list is unhashable
            raise UsageError(f"{where}{key}: expected one of {', '.join(sorted(BACKENDS))}, got {value!r:.60}")
        if key == "workers" and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024):
            raise UsageError(f"{where}{key}: expected an integer from 1 to 1024, got {value!r:.60}")
    return Config(**values)


def _parse(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read: {getattr(exc, 'strerror', None) or exc}") from None

