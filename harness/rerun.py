"""The command line that reruns a run: the one home of every command the harness prints for pasting.

A hint such as "re-baseline: python -m harness --update-baseline" pasted in a team's repository asks
the built-in BM25 unless it names what answered, and records that into the team's baseline. So every
printed command (the re-baseline hint after an improvement, the notice naming a set outside the
baseline) is built here, from what answered the run (a built-in backend, the team's adapter with its
banner rule, a run file) and the files named on its command line: pasted in the same folder, it does
what it says for the backend that ran.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PROGRAM = ("python", "-m", "harness")


@dataclass(frozen=True)
class Rerun:
    """What a pasted command repeats: one source of rankings (`backend`, a built-in alias; `adapter`, an argv
    with `expect_banner`; or `run_file`; none: the built-in default) and `options`, the file options the
    command line named (`--sets-dir DIR`, `--baseline FILE`, ...)."""

    backend: str | None = None
    adapter: tuple[str, ...] = ()
    expect_banner: bool = False
    run_file: str | None = None
    options: tuple[str, ...] = ()

    def command(self, sets: Sequence[str], *action: str) -> str:
        """`python -m harness --set NAME ... ACTION... OPTIONS... SOURCE`, quoted for a POSIX shell."""
        argv = [*PROGRAM, *(part for name in sets for part in ("--set", name)), *action, *self.options]
        if self.run_file is not None:
            argv += ["--run-file", self.run_file]
        elif self.adapter:
            argv += ["--adapter", *(["--expect-banner"] if self.expect_banner else []), "--", *self.adapter]
        elif self.backend is not None:
            argv += ["--backend", self.backend]
        return shlex.join(argv)

    @property
    def names_a_source(self) -> bool:
        return bool(self.backend or self.adapter or self.run_file)

    def to_dict(self) -> dict[str, object]:
        return {"backend": self.backend, "adapter": list(self.adapter), "expect_banner": self.expect_banner,
                "run_file": self.run_file, "options": list(self.options)}

    @classmethod
    def from_dict(cls, record: object) -> Rerun:
        """The record a report carries (`provenance.extra["rerun"]`); an older report's absence, or a record not
        of this shape, is the bare command (a report read back is evidence, never trusted to be well formed)."""
        if not isinstance(record, Mapping):
            return cls()
        backend, run_file = record.get("backend"), record.get("run_file")
        adapter, options = record.get("adapter", []), record.get("options", [])
        expect_banner = record.get("expect_banner", False)
        if not (all(isinstance(value, (str, type(None))) for value in (backend, run_file))
                and all(isinstance(value, list) and all(isinstance(part, str) for part in value)
                        for value in (adapter, options)) and isinstance(expect_banner, bool)):
            return cls()
        return cls(backend=backend, adapter=tuple(adapter), expect_banner=expect_banner, run_file=run_file,
                   options=tuple(options))
