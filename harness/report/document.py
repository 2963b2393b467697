"""The run report as a typed `Report`: frozen records, its JSON schema in both directions, its exit code.

Every output (console, Markdown, JUnit, HTML, TREC export, compare) reads a `Report` alone, never
a raw dict nor the baseline beside it: the gates carry the numbers they decided on and the report
the flips against the baseline. The JSON written by `--out` is `Report.to_json()`; it reads back
with `harness.report.reading.report_from_json()`, which checks every field it needs and names the
first bad one in one line.

REPORT_FORMAT history (bump on any change a reader of an older version would misread):
  1 — first version: provenance, sets (aggregates, latency, per-query rows), gates, complete,
      exit_code; optional `what_if`, `previous_baseline` and `warnings`. Gates gained `status`
      ("pass", "warn", "fail") later in version 1; a gate without it reads as pass or fail.
      Later in version 1 (all optional, absent reads as before): `pooled` (means
      over every scored query of every set, with n), per-query `tied` (tied positions, written
      only when > 0), per-query metrics judged@10, unjudged@10 (a count; summed in aggregates)
      and ndcg@10(condensed), and provenance `tied_order_changed` (with --repeats).
  2 — gates carry their numbers (`metric`, `baseline`, `current`, `limit`, `unit`, and for a
      metric drop `ci` and `p_value`); `flips` per gated set (qid, lost and gained relevant ids
      against the baseline); `baseline_latency` per gated set (the baseline's p50, p95, max, n);
      provenance.settings gains `max_window`. Version 1 reports still read (gates without
      numbers, no flips, no baseline latency).
      Later in version 2 (optional, absent reads as nothing measured): per set `resources` (the
      run's adapter start-up seconds, peak RSS MiB, index bytes) and `baseline_resources` per
      gated set (the baseline's).
      Later in version 2 (optional, absent reads as before):
      per set `base_latency_ms` and per query `base_latency_ms`, the baseline's backend timed beside the
      run (paired latency, `--baseline-adapter`); `baseline_latency` of such a set is that one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.errors import EXIT_GATE_FAILED, EXIT_OK, UsageError
from harness.gating.identity import BackendIdentity
from harness.measured import Latency, Resources, ScopeNumbers
from harness.strict_json import strict_json_dumps
from harness.records import GateResult, SetResult
from harness.scoring.flips import Flip

REPORT_FORMAT = 2
SUPPORTED_FORMATS = (1, 2)
OUTCOMES = ("pass", "fail", "xfail", "xpass")


class ReportError(UsageError):
    """A report document is not one this version can read (exit 2, one line naming file and field)."""


# -- provenance ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Backend:
    """Who answered: the alias or command line as the user gave it, and the argv started."""

    label: str
    argv: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"label": self.label, "argv": list(self.argv)}


@dataclass(frozen=True, slots=True)
class AdapterStart:
    """How the adapter started: its ready banner (as it printed it), start-up and warm-up seconds, log."""

    expect_banner: bool = False
    banner: Mapping[str, object] | None = None
    startup_seconds: float | None = None
    warmup_seconds: float | None = None
    log: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"expect_banner": self.expect_banner, "banner": dict(self.banner) if self.banner is not None else None,
                "startup_seconds": self.startup_seconds, "log": self.log,
                **_present(warmup_seconds=self.warmup_seconds)}


@dataclass(frozen=True, slots=True)
class SetSource:
    """What a set was at run time: enough to know whether two runs measured the same thing."""

    revision: int
    corpus_hash: str
    path: str | None = None
    source: str | None = None
    documents: int | None = None
    judgments_hash: str | None = None  # fingerprint of the gold (harness.sets.loader.judgments_hash)

    def to_dict(self) -> dict[str, object]:
        return {"revision": self.revision, "corpus_hash": self.corpus_hash, "path": self.path, "source": self.source,
                "documents": self.documents, **_present(judgments_hash=self.judgments_hash)}


@dataclass(frozen=True, slots=True)
class Provenance:
    """Who ran what, where. `settings`, `machine` and `metric_definitions` are flat records kept as
    given; `extra` keeps keys a newer harness wrote, so a report round-trips unchanged."""

    harness_version: str
    started: str | None
    backend: Backend
    adapter: AdapterStart = AdapterStart()
    git_commit: str | None = None
    condition: str | None = None
    metric_definitions: Mapping[str, object] | None = None
    settings: Mapping[str, object] = field(default_factory=dict)
    sets: Mapping[str, SetSource] = field(default_factory=dict)
    machine: Mapping[str, object] = field(default_factory=dict)
    duration_seconds: float | None = None
    asking_seconds: float | None = None
    nondeterministic_queries: tuple[str, ...] = ()
    run_file: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)

    def identity(self) -> BackendIdentity:
        """Who answered: the identity the run recorded (`backend_identity`), else its banner and command."""
        recorded = self.extra.get("backend_identity")
        if isinstance(recorded, Mapping):
            return BackendIdentity.from_record(recorded)
        return BackendIdentity.of(self.adapter.banner, self.backend.argv)

    def to_dict(self) -> dict[str, object]:
        return {
            "harness_version": self.harness_version, "started": self.started, "git_commit": self.git_commit,
            "backend": self.backend.to_dict(), "adapter": self.adapter.to_dict(), "condition": self.condition,
            "metric_definitions": _plain(self.metric_definitions), "settings": _plain(self.settings),
            "sets": {name: s.to_dict() for name, s in self.sets.items()}, "machine": _plain(self.machine),
            **_present(duration_seconds=self.duration_seconds, asking_seconds=self.asking_seconds,
                       run_file=self.run_file),
            "nondeterministic_queries": list(self.nondeterministic_queries), **_plain_mapping(self.extra),
        }


# -- the report ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Report:
    """One run: provenance, every set's evaluated result, the gates, and the verdict as an exit code.

    `complete` is False when the backend failed or the run was interrupted (`error` says how);
    such a report can never become a baseline. `exit_code` is the run's verdict: 0 pass, 1 a
    gate failed, 2/3/128+n an error (see `exit_code_for`).
    """

    provenance: Provenance
    sets: tuple[SetResult, ...]
    gates: tuple[GateResult, ...] = ()
    complete: bool = True
    error: str | None = None
    exit_code: int = EXIT_OK
    warnings: tuple[str, ...] = ()
    what_if: Mapping[str, object] | None = None
    previous_baseline: Mapping[str, object] | None = None
    pooled: ScopeNumbers | None = None  # means over every scored query of every set
    flips: Mapping[str, tuple[Flip, ...]] | None = None  # per gated set: queries whose found relevant ids moved
    baseline_latency: Mapping[str, Latency] | None = None  # per gated set: the baseline's p50/p95/max
    baseline_resources: Mapping[str, Resources] | None = None  # per gated set whose baseline recorded resources

    @property
    def failed_gates(self) -> tuple[GateResult, ...]:
        return tuple(g for g in self.gates if not g.passed)

    @property
    def warned_gates(self) -> tuple[GateResult, ...]:
        return tuple(g for g in self.gates if g.status == "warn")

    def to_dict(self) -> dict[str, object]:
        return {
            "report_format": REPORT_FORMAT, "complete": self.complete, "error": self.error,
            "provenance": self.provenance.to_dict(), "sets": [s.to_dict() for s in self.sets],
            "gates": [g.to_dict() for g in self.gates], "exit_code": self.exit_code,
            **_plain_mapping(_present(warnings=self.warnings or None, what_if=self.what_if,
                                      previous_baseline=self.previous_baseline, pooled=self.pooled, flips=self.flips,
                                      baseline_latency=self.baseline_latency,
                                      baseline_resources=self.baseline_resources or None)),
        }

    def to_json(self) -> str:
        """Strict JSON (no NaN or Infinity literals), one space indent, UTF-8 text kept as is."""
        return strict_json_dumps(self.to_dict(), what="report", indent=1, ensure_ascii=False) + "\n"


def exit_code_for(error_exit_code: int | None, gates: Sequence[GateResult]) -> int:
    """The exit code of a run: its error's code if it failed, else 1 when any gate failed, else 0."""
    if error_exit_code is not None:
        return error_exit_code
    return EXIT_GATE_FAILED if any(not g.passed for g in gates) else EXIT_OK


def _present(**values: object) -> dict[str, object]:
    """The keys whose value is not None: an optional field is written only when present."""
    return {key: value for key, value in values.items() if value is not None}


def _plain_mapping(value: Mapping[str, object]) -> dict[str, object]:
    return {str(k): _plain(v) for k, v in value.items()}


def _plain(value: object) -> object:
    """Records (as their `to_dict`), mappings and sequences as plain dicts and lists, for json.dumps."""
    if isinstance(value, (Flip, Latency, Resources, ScopeNumbers)):
        return _plain(value.to_dict())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
