"""What goes into the history store: a run's report, an accepted baseline, and the baselines already in git.

A report is appended as one `run` entry, a baseline file as one `baseline` entry per backend it
records. Re-appending either adds nothing (their `source` keys are stable: a report's provenance,
a baseline's path and bytes), so a CI job may import every artifact it has, and the baselines'
whole git history (`git log` of `baselines/*.json`), as often as it likes.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BaselineError
from harness.gating.baseline import Baseline
from harness.gating.policy import FOUNDING_METRIC
from harness.measured import SetNumbers
from harness.history.store import BASELINE, RUN, Entry, HistoryError, SetRecord, source_key, stored_numbers, utc_time
from harness.report.document import Report
from harness.strict_json import strict_decode

GIT_TIMEOUT_SECONDS = 120.0


def report_problem(report: Report) -> str | None:
    """Why a report is not a run of the history (a backend failure, a shard), or None."""
    if not report.complete:
        return "incomplete (the backend failed or the run was interrupted)"
    if report.provenance.extra.get("shard") is not None:
        return "one shard of a run (append the merged report)"
    return None


def entry_from_report(report: Report) -> Entry:
    """A complete, unsharded report as a `run` entry: its sets' numbers, the per-query values of the
    metrics its policy gated, who answered, where and how long it took."""
    provenance = report.provenance
    policy = provenance.extra.get("policy")
    metrics = tuple(policy.get("metrics") or ()) if isinstance(policy, Mapping) else ()
    sources = provenance.sets
    records = tuple(_set_record(result.numbers(sources[result.name].judgments_hash if result.name in sources else None),
                                metrics or (FOUNDING_METRIC,)) for result in report.sets)
    resources = {name: value for name, value in (
        ("duration_seconds", provenance.duration_seconds), ("asking_seconds", provenance.asking_seconds),
        ("startup_seconds", provenance.adapter.startup_seconds),
        ("warmup_seconds", provenance.adapter.warmup_seconds)) if value is not None}
    return Entry(
        source=source_key(RUN, provenance.to_dict(), [r.name for r in report.sets]), kind=RUN,
        time=utc_time(provenance.started), git_commit=provenance.git_commit, backend=provenance.backend.label,
        sets=records, identity=provenance.identity().describe(), condition=provenance.condition,
        machine=dict(provenance.machine), exit_code=report.exit_code, resources=resources)


def entries_from_baseline(text: bytes, label: str, *, accepted: str | None = None) -> list[Entry]:
    """A baseline file's bytes (read from `label`: a path, or `path@commit`) as `baseline` entries, one
    per backend label its sets record; `accepted` is when it was accepted (a commit's time), else the
    time the file says it was created. Its `git_commit` is the commit the baseline measured."""
    try:
        baseline = Baseline.from_document(strict_decode(text.decode("utf-8")), Path(label), label)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise BaselineError(f"{label}: corrupt baseline, not valid strict JSON ({exc})") from None
    document = baseline.document
    by_backend: dict[str, list[SetRecord]] = {}
    identities: dict[str, str] = {}
    for name, numbers in baseline.sets.items():
        identity = baseline.identity_for(name).describe()
        backend = baseline.backends[name].label or identity
        identities.setdefault(backend, identity)
        by_backend.setdefault(backend, []).append(_set_record(numbers, _baseline_metrics(numbers)))
    digest = hashlib.sha256(text).hexdigest()  # the same file wherever it was read: the same baseline
    return [Entry(source=source_key(BASELINE, digest, backend), kind=BASELINE,
                  time=utc_time(accepted) or utc_time(document.get("created")),
                  git_commit=document.get("git_commit") if isinstance(document.get("git_commit"), str) else None,
                  backend=backend, sets=tuple(records), identity=identities[backend],
                  condition=document.get("condition") if isinstance(document.get("condition"), str) else None)
            for backend, records in by_backend.items()]


def _set_record(numbers: SetNumbers, metrics: Sequence[str]) -> SetRecord:
    """A set's numbers (a run's or a baseline's) as an entry records them, with the per-query values of `metrics`."""
    return SetRecord(name=numbers.name, revision=numbers.revision, corpus_hash=numbers.corpus_hash,
                     judgments_hash=numbers.judgments_hash, k=numbers.k, query_count=numbers.query_count,
                     numbers=stored_numbers(numbers, metrics))


def _baseline_metrics(numbers: SetNumbers) -> tuple[str, ...]:
    """Every metric a baseline's query rows carry: re-baselines are few, so all of them are kept."""
    names = dict.fromkeys(metric for row in numbers.queries.values() for metric in row.metrics)
    return tuple(names) or (FOUNDING_METRIC,)


@dataclass(frozen=True, slots=True)
class BaselineVersion:
    """One committed version of a baseline file: the commit that wrote it, when, the file, its bytes."""

    commit: str
    time: str
    path: str
    text: bytes

    @property
    def label(self) -> str:
        return f"{self.path}@{self.commit[:12]}"


def git_baseline_versions(repository: Path, pathspecs: Sequence[str]) -> Iterator[BaselineVersion]:
    """Every version of the baseline files matching `pathspecs` that the current branch accepted, oldest
    first: along its first parents, so a version written on a side branch counts when its merge landed
    (and at that time); a deleted file is skipped."""
    log = _git(repository, "log", "--reverse", "--first-parent", "--diff-merges=first-parent", "--no-renames",
               "--format=%x00%H %cI", "--name-only", "--diff-filter=AM", "--", *pathspecs)
    for block in log.decode("utf-8", errors="replace").split("\0")[1:]:
        header, *names = block.strip("\n").split("\n")
        commit, time = header.split(" ", 1)
        for name in filter(None, names):
            yield BaselineVersion(commit, time, name, _git(repository, "show", f"{commit}:{name}"))


def _git(repository: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(repository), *args], capture_output=True,
                              timeout=GIT_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HistoryError(f"git {args[0]}: cannot run git in {repository}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.decode("utf-8", errors="replace").strip().splitlines() or ["failed"])[-1]
        raise HistoryError(f"git {args[0]} in {repository}: {last}")
    return done.stdout
