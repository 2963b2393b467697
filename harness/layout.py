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

import dataclasses
import difflib
import functools
import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from harness.errors import HarnessError, UsageError
from harness.gating.baseline import DEFAULT_BASELINE_PATH, Baseline
from harness.gating.budgets import DEFAULT_BUDGETS_PATH
from harness.gating.policy import DEFAULT_POLICY_FILE
from harness.adapter.backends import BACKENDS, DEFAULT_BACKEND, shipped_baseline
from harness.rerun import Rerun
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
    "budgets": ("the p95 latency and resource budgets file (300 ms per set when absent)", str(DEFAULT_BUDGETS_PATH)),
    "policy": ("the gate policy file (the defaults when absent)", str(DEFAULT_POLICY_FILE)),
    "adapter": ("the team's adapter command (argv, never a shell; run in this file's folder) a run, harness.gate "
                "and check-adapter use without --backend, --adapter or --run-file; no default: an example",
                ["python", "search/adapter.py"]),
    "expect_banner": ("with adapter: fail unless it prints its ready banner first (--expect-banner)", False),
    "backend": ("the built-in backend used without --backend, --adapter or --run-file (instead of adapter)",
                DEFAULT_BACKEND),
    "workers": ("adapter processes per run without --workers", DEFAULT_WORKERS),
    "history": ("the history store each run and re-baseline is appended to without --history (docs/history.md); "
                "none when unset, e.g.", ".retrieval-gate/history.sqlite"),
    "baseline_adapter": ("the baseline's backend (argv; run in this file's folder), timed beside the run's query "
                         "by query for a paired latency verdict without --baseline-adapter (docs/gate.md, \"Paired latency\"); none when unset, e.g.",
                         ["python", "../base/search/adapter.py"]),
}
PATH_KEYS = ("sets", "baseline", "budgets", "policy", "history")
# A table or file name a person meant as ours ([tool.retrieval_gate], retrieval_gate.toml): said, never ignored.
_SEPARATORS = re.compile(r"[-_. ]")


class Config(TypedDict, total=False):
    """A config file's keys (CONFIG_KEYS), as `read_config` checked them."""

    sets: str
    baseline: str
    budgets: str
    policy: str
    adapter: list
    expect_banner: bool
    backend: str
    workers: int
    baseline_adapter: list
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
    baseline_adapter: tuple[str, ...] = ()  # the config's `baseline_adapter`: paired latency without the option
    history: Path | None = None  # the history store runs append to (docs/history.md); None: none
    sets_named_by: str | None = None  # who named the team's sets folder ("--sets-dir", "FILE: sets"); None: the default
    # What answers and what a printed command repeats: the source given, else the config's (`adapter` and its
    # `expect_banner`, or `backend`); and the file options named.
    rerun: Rerun = Rerun()

    @property
    def folder(self) -> Path | None:
        """The config's folder, where the commands it names start (as its paths are read); None without one."""
        return None if self.config is None else self.config.parent

    def check_sets_dir(self) -> None:
        """UsageError when the team's sets folder was named (option or config) but does not exist: without it every
        name would fall back to the shipped sets, and a gate of the wrong sets would pass."""
        if self.sets_named_by is not None and not os.path.lexists(self.sets_dir):
            raise UsageError(f"{self.sets_named_by}: {self.sets_dir}: no such folder (a team's sets are "
                             f"FOLDER/NAME/set.json); create it, or fix the path")

    @property
    def sets_dir_is_shipped(self) -> bool:
        """True when the team's sets folder is the shipped one (a run from this repository's own checkout)."""
        return same_folder(self.sets_dir, self.shipped_sets)

    def select(self, names: Sequence[str]) -> tuple[list[Path], list[str]]:
        """(set folders, notices). `all` is the sets the baseline records when its file exists (each
        found as a name is), else every set found (the team's, or the shipped ones when it has none);
        a set found but not recorded is not run, and one notice line names them and how to baseline one."""
        self.check_sets_dir()
        recorded = None  # `all` is every set found without a baseline file
        if "all" in names and self.baseline is not None and os.path.lexists(self.baseline):
            recorded = frozenset(self.checked_baseline.sets)
        folders = find_sets(list(names), self.sets_dir, shipped=self.shipped_sets, recorded=recorded)
        missing = [] if recorded is None else [
            folder.name for folder in sets_found(self.sets_dir, self.shipped_sets) if folder.name not in recorded]
        if not missing:
            return folders, []
        one = len(missing) == 1
        which = f"set {missing[0]} is" if one else f"sets {', '.join(missing)} are"
        elsewhere = self._baseline_recording(missing)
        if elsewhere is not None:  # e.g. the shipped companion sets, gated against baselines/companions/
            options = self.rerun.options
            if "--baseline" in options:
                at = options.index("--baseline")
                options = options[:at] + options[at + 2:]
            command = dataclasses.replace(self.rerun, options=options).command(missing, "--baseline", str(elsewhere))
            return folders, [f"{which} not in {self.baseline}: not gated here; {elsewhere} records "
                             f"{'it' if one else 'them'} (gate {'it' if one else 'them'}: {command})"]
        command = self.rerun.command(missing, "--update-baseline")
        return folders, [f"{which} not in {self.baseline}: not gated (baseline {'it' if one else 'them'}: {command})"]

    def _baseline_recording(self, names: Sequence[str]) -> Path | None:
        """Another baseline file in the `baselines` folder this one is in (directly or one folder down, as
        baselines/companions/current.json is), or below it, that records every set of `names`; None for a
        baseline kept anywhere else (a repository's other JSON files are never read)."""
        assert self.baseline is not None
        folders = [f for f in self.baseline.parents[:2] if f.name == DEFAULT_BASELINE_PATH.parent.name]
        for path in sorted(folders[0].rglob("*.json")) if folders else ():
            if path.resolve() == self.baseline.resolve():
                continue
            try:
                if set(names) <= set(Baseline.read(path).sets):
                    return path
            except HarnessError:  # not a baseline, or not a readable one: not the place to say so
                continue
        return None

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
            asking: Rerun = Rerun(), for_update: bool = False) -> Layout:
    """The layout from the given paths (None / FROM_LAYOUT: not given), the config and the team's folder.
    `asking`: the source of rankings given (a built-in backend, whose shipped baseline gates the shipped sets;
    the team's adapter or a run file, which no shipped baseline describes; none: the config's);
    `for_update`: the baseline is to be written (--update-baseline): the team folder's, never a shipped one."""
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
            teams_own = bool(asking.adapter or asking.run_file) or for_update or config is not None \
                or bool(sets_in(team_sets))
            built_in = asking.backend or values.get("backend")  # the default's baseline when no built-in one is named
            chosen_baseline = (base / DEFAULT_BASELINE_PATH if teams_own
                               else shipped_baseline(built_in if built_in in BACKENDS else DEFAULT_BACKEND))
    named_by = "--sets-dir" if sets_dir is not None else (f"{config}: {_key_prefix(config)}sets"
                                                          if config is not None and "sets" in values else None)
    named = {"--sets-dir": sets_dir, "--baseline": None if isinstance(baseline, FromLayout) else baseline,
             "--budgets": budgets, "--policy": policy}
    source = asking if asking.names_a_source else Rerun(
        backend=values.get("backend"), adapter=tuple(values.get("adapter", ())),
        expect_banner=values.get("expect_banner", False))
    rerun = dataclasses.replace(source, options=tuple(
        part for option, path in named.items() if path is not None for part in (option, str(path))))
    return Layout(sets_dir=team_sets, shipped_sets=shipped_sets_dir(), baseline=chosen_baseline,
                  budgets=budgets or configured("budgets") or conventional(DEFAULT_BUDGETS_PATH),
                  policy=policy or configured("policy") or conventional(DEFAULT_POLICY_FILE),
                  config=config, backend=values.get("backend"), workers=values.get("workers"),
                  baseline_adapter=tuple(values.get("baseline_adapter", ())),
                  history=configured("history"), sets_named_by=named_by, rerun=rerun)


def find_config(start: Path) -> Path | None:
    """The first retrieval-gate.toml, or pyproject.toml with [tool.retrieval-gate], from `start` up to
    the repository root (a folder holding .git) or the file-system root. A file or table whose name means
    ours but is spelt otherwise (`retrieval_gate.toml`, `[tool.retrieval_gate]`) is a UsageError naming
    the right spelling: ignored, it would leave every setting at its default unseen."""
    folder = start.resolve()
    while True:
        candidate = folder / CONFIG_FILE
        if candidate.is_file():
            return candidate
        _refuse_misspelt_file(folder)
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            document = _parse(pyproject)
            tool = document.get("tool")
            if isinstance(tool, dict) and "retrieval-gate" in tool:
                return pyproject
            _refuse_misspelt_table(pyproject, document)
        if (folder / ".git").exists() or folder.parent == folder:
            return None
        folder = folder.parent


def read_config(path: Path) -> Config:
    """The config's keys, checked: an unknown key or a wrong type is one UsageError `FILE: KEY: expected ...`."""
    document = _parse(path)
    where = f"{path}: {_key_prefix(path)}"
    values = document.get("tool", {}).get("retrieval-gate") if path.name == "pyproject.toml" else document
    if not isinstance(values, dict):
        raise UsageError(f"{where.rstrip('. ')}: must be a table of keys ({', '.join(CONFIG_KEYS)})")
    for key, value in values.items():
        if key not in CONFIG_KEYS:
            if _holds_our_table(key, value):
                raise UsageError(f"{where}[{key}]: no table here: write the keys at the top of {path.name}")
            raise UsageError(f"{where}{key}: unknown key (known: {', '.join(CONFIG_KEYS)})")
        if key in PATH_KEYS and (not isinstance(value, str) or not value):
            raise UsageError(f"{where}{key}: expected a path as a non-empty string, got {value!r:.60}")
        if key == "backend" and (not isinstance(value, str) or value not in BACKENDS):  # a list is unhashable
            raise UsageError(f"{where}{key}: expected one of {', '.join(sorted(BACKENDS))}, got {value!r:.60}")
        if key in ("adapter", "baseline_adapter") and (not isinstance(value, list) or not value
                                 or not all(isinstance(part, str) and part for part in value)):
            raise UsageError(f"{where}{key}: expected the adapter's argv as a list of non-empty strings, e.g. "
                             f'["python", "search/adapter.py"], got {value!r:.60}')
        if key == "expect_banner" and not isinstance(value, bool):
            raise UsageError(f"{where}{key}: expected true or false, got {value!r:.60}")
        if key == "workers" and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024):
            raise UsageError(f"{where}{key}: expected an integer from 1 to 1024, got {value!r:.60}")
    if "adapter" in values and "backend" in values:
        raise UsageError(f"{where}backend: and adapter: give one (the team's adapter, or a built-in backend)")
    if values.get("expect_banner") and "adapter" not in values:
        raise UsageError(f"{where}expect_banner: only with adapter (the built-in backends always print their banner)")
    return Config(**values)


def _key_prefix(config: Path) -> str:
    """How an error line names a key of this config file: `tool.retrieval-gate.` in pyproject.toml, else nothing."""
    return f"{PYPROJECT_TABLE}." if config.name == "pyproject.toml" else ""


def _means_ours(name: str, value: object = None) -> bool:
    """True for a name spelt as ours in another way: retrieval_gate, RetrievalGate, retrieval-gates, `retrieval`
    holding `gate` ([tool.retrieval.gate]), but not retrieval-gate itself."""
    if isinstance(value, dict) and _SEPARATORS.sub("", name.lower()) == "retrieval" and "gate" in value:
        return True
    return name != "retrieval-gate" and _close_to_ours(name)


def _close_to_ours(name: str) -> bool:
    """`name` is retrieval-gate once case and separators are set aside, or one letter from it."""
    return difflib.SequenceMatcher(None, _SEPARATORS.sub("", name.lower()), "retrievalgate").ratio() >= 0.9


def _holds_our_table(key: str, value: object) -> bool:
    """[retrieval-gate], [tool.retrieval-gate] or a misspelling of either, as a table of retrieval-gate.toml."""
    if not isinstance(value, dict):
        return False
    if key == "tool":
        return any(_holds_our_table(inner, table) for inner, table in value.items())
    return key == "retrieval-gate" or _means_ours(key, value)


def _refuse_misspelt_table(pyproject: Path, document: dict) -> None:
    """[tool.retrieval_gate] and the like, or [retrieval-gate] outside [tool]: said, with the right spelling."""
    tool = document.get("tool")
    for key, value in (tool.items() if isinstance(tool, dict) else ()):
        if _means_ours(key, value):
            raise UsageError(f"{pyproject}: [tool.{key}]: not read; did you mean [tool.retrieval-gate]?")
    for key, value in document.items():
        if key != "tool" and (key == "retrieval-gate" or _means_ours(key, value)):
            raise UsageError(f"{pyproject}: [{key}]: not read; did you mean [tool.retrieval-gate]?")


def _refuse_misspelt_file(folder: Path) -> None:
    """retrieval_gate.toml, .retrieval-gate.toml, RetrievalGate.toml ...: said, with the right name."""
    try:
        names = [entry.name for entry in os.scandir(folder) if entry.name.lower().endswith(".toml")]
    except OSError:
        return
    for name in names:
        if name != CONFIG_FILE and _close_to_ours(name[:-len(".toml")]):
            raise UsageError(f"{folder / name}: not read; did you mean {CONFIG_FILE}?")


def _parse(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise UsageError(f"{path}: not valid TOML: nested too deeply") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
