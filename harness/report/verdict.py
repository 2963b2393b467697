"""What every output says first: the verdict line, gate counts, the worst failure, who answered, which baseline.

Console, Markdown and HTML all read these, from the report alone, so a verdict reads the same in
a terminal, on a CI job page and in the HTML header. The gates carry the numbers they decided on;
the baseline file's identity is `provenance.extra["baseline"]` (`{"path", "backend", "created",
"git_commit"}`, and `calibrated` when the baseline carries calibrated noise) when the run recorded it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.gating.gates import COUNT, FRACTION, MILLISECONDS
from harness.measured import RESOURCE_FIGURES, Resources, resource_text
from harness.records import GateResult, SetResult
from harness.rerun import Rerun
from harness.report.document import Provenance, Report
from harness.text import plural

# Gates in the order a reader should meet them: failures, then warnings, then passes.
STATUS_ORDER = {"fail": 0, "warn": 1, "pass": 2}


@dataclass(frozen=True, slots=True)
class Verdict:
    """`word` is FAILED / PASSED / INCOMPLETE / MEASURED; `line` the whole closing line."""

    word: str
    line: str
    status: str  # "fail", "warn" or "pass": how to colour it


def ordered_gates(report: Report) -> list[GateResult]:
    """Failures first, then warnings, then passes; the gates' own order within each."""
    return sorted(report.gates, key=lambda g: STATUS_ORDER[g.status])


def rebaseline_hint(report: Report) -> str:
    """The command that keeps the improvements: the improved sets re-baselined by the backend that ran
    (harness/rerun.py), pasted in the folder the run ran in; it shows what moves before it writes."""
    names = list(dict.fromkeys(gate.set_name for gate in improvements(report))) or [s.name for s in report.sets]
    command = Rerun.from_dict(report.provenance.extra.get("rerun")).command(names, "--update-baseline")
    return f"re-baseline to keep them (what moves is shown before it is written): {command}"


def set_level(gates: Sequence[GateResult]) -> list[GateResult]:
    """The gates about a whole set (a category's are grouped apart, `category_problems`)."""
    return [gate for gate in gates if gate.category is None]


def category_problems(report: Report) -> dict[str, list[GateResult]]:
    """Per set, its categories' gates that failed or warned, failures first: one compact table each."""
    grouped: dict[str, list[GateResult]] = {}
    for gate in ordered_gates(report):
        if gate.category is not None and gate.status != "pass":
            grouped.setdefault(gate.set_name, []).append(gate)
    return grouped


def improvements(report: Report) -> list[GateResult]:
    """The set-level figures that moved the good way, largest first."""
    return sorted((gate for gate in report.gates if gate.improved and gate.category is None),
                  key=lambda gate: -abs(gate.change or 0.0))


def improvement_text(gate: GateResult) -> str:
    """`code overall recall@10 +5.0 points (0.800 -> 0.850)`."""
    return (f"{gate.set_name} {gate.scope} {gate.metric} {points(gate.change or 0.0)} points "
            f"({gate.baseline:.3f} -> {gate.current:.3f})")


_RESOURCE_UNITS = {unit for _, unit, _ in RESOURCE_FIGURES}
# How the resource figures were measured, said wherever they are shown beside the baseline's.
RESOURCES_HOW = ("the adapter's start-up to its banner, the peak resident memory of its process group, the index "
                 "size its banner reports; the baseline's from the run that recorded it (across runs and machines)")


def resource_figures(result: SetResult, report: Report) -> list[tuple[str, str, str, str]]:
    """(field, words, this run's figure, the baseline's) per resource figure measured on either side, as text;
    empty when neither measured any (a run file; reports written before resources were recorded)."""
    now = result.resources
    was = (report.baseline_resources or {}).get(result.name, Resources())
    return [(name, words, resource_text(now.figure(name), unit),
             resource_text(was.figure(name), unit) if was.measured else "-")
            for name, unit, words in RESOURCE_FIGURES if now.figure(name) is not None or was.figure(name) is not None]


def resources_line(result: SetResult, report: Report) -> str | None:
    """`start-up 0.19 s (baseline 0.20 s), peak RSS 34.9 MiB (baseline 34.9 MiB), index size 16,324 bytes
    (baseline not measured); the baseline's measured in another run`: the run's adapter cost beside the
    baseline's; None when nothing was measured."""
    figures = resource_figures(result, report)
    if not figures:
        return None
    gated = (report.baseline_resources or {}).get(result.name) is not None
    return (", ".join(f"{words} {now}" + (f" (baseline {was})" if gated else "") for _, words, now, was in figures)
            + ("; the baseline's measured in another run" if gated else ""))


def change_text(gate: GateResult) -> str:
    """A gate's change in its unit: `-33.3 pts`, `+243.0 ms`, `+1`; `-` without both values."""
    if gate.change is None:
        return "-"
    if gate.unit == FRACTION:
        return points(gate.change) + " pts"
    if gate.unit == MILLISECONDS:
        rounded = round(gate.change, 1)
        return "0.0 ms" if rounded == 0 else f"{rounded:+.1f} ms"
    if gate.unit in _RESOURCE_UNITS:
        return ("+" if gate.change >= 0 else "-") + resource_text(abs(gate.change), gate.unit)
    return "0" if gate.change == 0 else f"{gate.change:+g}"


def value_text(gate: GateResult, value: float | None) -> str:
    """A gate's baseline or current value as tables show it."""
    if value is None:
        return "-"
    if gate.unit == COUNT:
        return f"{value:g}"
    if gate.unit in _RESOURCE_UNITS:
        return resource_text(value, gate.unit)
    return f"{value + 0.0:.{1 if gate.unit == MILLISECONDS else 3}f}"


def points(change: float) -> str:
    """A change of a [0, 1] mean in points, one decimal, never `-0.0`."""
    value = round(change * 100, 1)
    return "0.0" if value == 0 else f"{value:+.1f}"


def short_message(gate: GateResult) -> str:
    """A gate's message up to its first parenthesis or semicolon: what fits in a verdict line."""
    message = gate.message
    for stop in (" (", "; ", ": baseline"):
        if stop in message:
            message = message.split(stop, 1)[0]
    return message


def worst_failure(report: Report) -> str | None:
    """The largest set-level drop of a [0, 1] metric among the failed gates (a category's only when no
    set-level figure failed), else the first failed gate's gist."""
    failed = report.failed_gates
    if not failed:
        return None
    drops = [(gate.category is not None, gate.change, gate) for gate in failed
             if gate.unit == FRACTION and gate.change is not None]
    if drops:  # a set-level figure before any category's, then the largest drop
        _, change, gate = min(drops, key=lambda row: row[:2])
        return f"{gate.set_name} {gate.scope} {gate.metric} {points(change)} points"
    return short_message(failed[0])


def verdict_of(report: Report) -> Verdict:
    """The run's one-line verdict, e.g. `FAILED: 3 of 27 gates (worst: dedupe overall recall@10 -19.8 points)`."""
    warned = len(report.warned_gates)
    warning_note = f", {plural(warned, 'warning')}" if warned else ""
    if not report.complete:
        answered = sum(len(s.queries) for s in report.sets)
        asked = sum(s.query_count for s in report.sets)
        return Verdict("INCOMPLETE", f"INCOMPLETE: the backend failed after {answered} of {asked} queries; "
                                     f"no gate was checked (exit {report.exit_code})", "fail")
    if not report.gates:
        queries = sum(len(s.queries) for s in report.sets)
        return Verdict("MEASURED", f"MEASURED: {plural(queries, 'query', 'queries')} "
                                   f"in {plural(len(report.sets), 'set')}, not gated", "pass")
    failed = report.failed_gates
    if failed:
        return Verdict("FAILED", f"FAILED: {len(failed)} of {plural(len(report.gates), 'gate')} "
                                 f"(worst: {worst_failure(report)}){warning_note}", "fail")
    if warned:  # a WARN verdict says what warned: the first warning's gist, and how many more
        first = report.warned_gates[0]
        more = f"; +{warned - 1} more" if warned > 1 else ""
        warning_note += f" ({short_message(first)}{more})"
    return Verdict("PASSED", f"PASSED: {plural(len(report.gates), 'gate')}{warning_note}",
                   "warn" if warned else "pass")


def counts_line(report: Report) -> str:
    """`4 failed, 0 warned, 2 passed` over the gates."""
    failed, warned = len(report.failed_gates), len(report.warned_gates)
    return f"{failed} failed, {warned} warned, {len(report.gates) - failed - warned} passed"


def backend_identity(provenance: Provenance) -> str:
    """Who answered, as the adapter introduced itself: `bm25 (bm25 1.2, model ...)`; the label alone without a banner."""
    label = provenance.backend.label
    banner = provenance.adapter.banner or {}
    parts = [str(banner[key]) for key in ("name", "version") if isinstance(banner.get(key), (str, int, float))]
    said = " ".join(parts)
    model = banner.get("model")
    if isinstance(model, str) and model:
        said += (", " if said else "") + f"model {model}"
    if said:
        return f"{label} ({said})"
    if provenance.run_file:
        return f"{label} (run file)"
    return f"{label} (no ready banner)"


def baseline_identity(provenance: Provenance) -> dict[str, str] | None:
    """The baseline file the run was gated against, as `provenance.extra["baseline"]` records it."""
    record = provenance.extra.get("baseline")
    if not isinstance(record, Mapping) or not record.get("path"):
        return None
    return {key: str(record[key]) for key in ("path", "backend", "created", "git_commit", "calibrated")
            if record.get(key)}


def baseline_text(provenance: Provenance) -> str | None:
    """`baselines/current.json (recorded 2026-11-30T10:00:00+00:00 for bm25 at 1a2b3c4d)`, or None."""
    record = baseline_identity(provenance)
    if record is None:
        return None
    details = [f"{word} {record[key][:12] if key == 'git_commit' else record[key]}"
               for key, word in (("created", "recorded"), ("backend", "for"), ("git_commit", "at")) if key in record]
    calibrated = f"; calibrated: {record['calibrated']}" if "calibrated" in record else ""  # harness calibrate
    return record["path"] + (f" ({' '.join(details)})" if details else "") + calibrated


def startup_text(provenance: Provenance) -> str | None:
    """How the adapter started, as the console and the HTML page say it; None for a run file (nothing started)."""
    startup = provenance.adapter.startup_seconds
    return (None if provenance.run_file else f"{startup:.3f} s to the ready banner" if startup is not None
            else "no ready banner; the first query's latency includes start-up")


def error_parts(error: str | None) -> tuple[str, str]:
    """(the error's first line, the rest: an adapter's stderr tail) for outputs that show the tail as code."""
    first, _, rest = (error or "").partition("\n")
    return first, rest
