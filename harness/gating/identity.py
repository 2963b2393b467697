"""Backend identity: who a baseline was recorded for, and whether this run's backend is the same one.

A baseline gates one backend. Its identity comes from the ready banner (docs/adapters.md):
`name`, `version`, `model_digest` (when the backend has a model), `settings` (what changes
scores), plus a portable command (`python -m adapters.bm25`: the interpreter is written as
`python`, paths inside the working folder relative), so a baseline recorded on one machine
reads the same on another. An adapter without a banner is identified by its command alone.

The rule (`check_identity`): another `name`, another `model_digest`, no banner where the
baseline names one, or, without names, another command is a configuration error (exit 2)
unless the run allows a backend change; another `version` or `settings` is allowed and noted.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BaselineError

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?$")


@dataclass(frozen=True, slots=True)
class BackendIdentity:
    name: str | None
    version: str | None = None
    model_digest: str | None = None
    settings: Mapping[str, object] | None = None
    command: tuple[str, ...] = ()

    @classmethod
    def of(cls, banner: Mapping[str, object] | None, argv: Sequence[str]) -> BackendIdentity:
        """The identity a run shows: its banner's fields (strings only) and its portable command."""
        fields = {key: (banner or {}).get(key) for key in ("name", "version", "model_digest", "settings")}
        return cls.from_record({**fields, "command": list(argv)})

    @classmethod
    def from_record(cls, record: Mapping[str, object]) -> BackendIdentity:
        """The identity a baseline's `backend` object records (older baselines: only its argv)."""
        command = record.get("command") or record.get("argv") or ()
        if not isinstance(command, (list, tuple)):
            command = ()
        settings = record.get("settings")
        return cls(name=text_or_none(record.get("name")), version=text_or_none(record.get("version")),
                   model_digest=text_or_none(record.get("model_digest")),
                   settings=settings if isinstance(settings, Mapping) else None,
                   command=tuple(portable_command([str(part) for part in command])))

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "version": self.version, "model_digest": self.model_digest,
                "settings": dict(self.settings) if self.settings is not None else None,
                "command": list(self.command)}

    def describe(self) -> str:
        """`'bm25' 1.2 (python -m adapters.bm25)`, or the command alone when there is no name."""
        command = " ".join(self.command)
        if self.name is None:
            return f"command `{command}`" if command else "an unnamed backend"
        version = f" {self.version}" if self.version else ""
        digest = f" model {self.model_digest[:12]}" if self.model_digest else ""
        return f"'{self.name}'{version}{digest} (`{command}`)" if command else f"'{self.name}'{version}{digest}"


@dataclass(frozen=True)
class IdentityCheck:
    """The outcome of comparing a run's backend with its baseline's: a refusal, or notes to print."""

    refusal: str | None
    notes: tuple[str, ...] = ()
    changed: bool = False  # another backend, gated anyway (allow_change)


def portable_command(argv: Sequence[str]) -> list[str]:
    """argv as a baseline records it: this interpreter (or any `.../pythonX.Y`) as `python`,
    absolute paths inside the working folder made relative to it."""
    if not argv:
        return []
    first = argv[0]
    if first == sys.executable or (os.path.isabs(first) and _PYTHON.match(os.path.basename(first))):
        first = "python"
    return [_relative(first)] + [_relative(part) for part in argv[1:]]


def _relative(part: str) -> str:
    if not os.path.isabs(part):
        return part
    try:
        return str(Path(part).relative_to(Path.cwd()))
    except ValueError:
        return part


def check_identity(baseline: BackendIdentity, run: BackendIdentity, baseline_path: str, *,
                   allow_change: bool) -> IdentityCheck:
    """Compare before any query is asked; see the module docstring for the rule."""
    named = baseline.name is not None
    if named and run.name is None:
        what = "an adapter that printed no ready banner (docs/adapters.md, \"Backend identity and the gate policy\")"
    elif named and baseline.name != run.name:
        what = "another backend"
    elif named and baseline.model_digest != run.model_digest and (baseline.model_digest or run.model_digest):
        what = "another model"
    elif not named and baseline.command and run.command and baseline.command != run.command:
        what = "another command"
    else:
        notes = []
        if baseline.version != run.version and baseline.version and run.version:
            notes.append(f"backend version changed: {baseline.version} in {baseline_path}, {run.version} now")
        if baseline.settings is not None and run.settings is not None and dict(baseline.settings) != dict(run.settings):
            notes.append(f"backend settings changed: {_compact(baseline.settings)} in {baseline_path}, "
                         f"{_compact(run.settings)} now")
        return IdentityCheck(None, tuple(notes))
    if not allow_change:
        return IdentityCheck(
            f"{baseline_path}: recorded for {baseline.describe()}, but this run is {what}: {run.describe()}; "
            f"record its own baseline with --update-baseline --baseline FILE, or gate (or re-baseline) anyway "
            f"with --allow-backend-change")
    return IdentityCheck(None, (f"backend changed ({what}): {baseline_path} was recorded for {baseline.describe()}, "
                                f"this run is {run.describe()}; gated anyway (--allow-backend-change)",), changed=True)


@dataclass(frozen=True)
class BackendCheck:
    """Who answered a run (one identity for all its workers or shards) and what the check noted."""

    identity: BackendIdentity
    notes: tuple[str, ...] = ()
    changed: bool = False  # gated against another backend's baseline by --allow-backend-change


def check_backend(identities: Sequence[BackendIdentity], recorded: Mapping[str, BackendIdentity] | None,
                  baseline_path: str, *, allow_change: bool, what: str = "workers") -> BackendCheck:
    """The identity check of a run and of `merge` alike: every worker (or shard) is the same backend,
    and the one the baseline recorded for each set (`recorded`: set name -> identity; None: no baseline).

    Sets recorded for one backend are checked once; where the baseline records several, each
    note and refusal names its sets. Raises BaselineError (exit 2) for workers or shards of
    different backends, and for another backend or model than the baseline's unless `allow_change`.
    """
    first = identities[0]
    if any(other != first for other in identities[1:]):
        raise BaselineError(f"the {len(identities)} {what} are different backends: "
                            + "; ".join(dict.fromkeys(i.describe() for i in identities)))
    groups: list[tuple[BackendIdentity, list[str]]] = []  # identities hold a settings dict: compared, not hashed
    for name, identity in (recorded or {}).items():
        names = next((names for known, names in groups if known == identity), None)
        if names is None:
            groups.append((identity, names := []))
        names.append(name)
    notes: list[str] = []
    changed = False
    for identity, names in groups:
        where = baseline_path + (f" (sets {', '.join(names)})" if len(groups) > 1 else "")
        outcome = check_identity(identity, first, where, allow_change=allow_change)
        if outcome.refusal is not None:
            raise BaselineError(outcome.refusal)
        notes += outcome.notes
        changed = changed or outcome.changed
    return BackendCheck(first, tuple(notes), changed)


def text_or_none(value: object) -> str | None:
    """A recorded text field as identities and baselines read it: a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _compact(settings: Mapping[str, object]) -> str:
    return json.dumps(dict(settings), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
