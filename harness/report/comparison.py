"""A comparison (`compare BASE CAND [CAND ...]`) written out: terminal text, Markdown summary, JUnit XML.

All three read one `ComparisonSuite` (harness.scoring.compare) and say the same things in the
same order: the verdict per candidate and set, the headline cells (Holm-adjusted, with the
90% CI against the gate's margin), the N-system table, per-query movement, latency, then the exploratory rows.
Changes are printed in points (1 point = 0.01 of a metric in [0, 1]).

JUnit: one testcase per (candidate, set, tested metric) headline cell; it fails only when the
cell is WORSE (significantly lower and not within the margin), and for every cell of a pair
that is not comparable.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from harness.fsutil import xml_safe
from harness.measured import RESOURCE_FIGURES, resource_text
from harness.report.escape import markdown_code, markdown_text, terminal_line
from harness.report.junit import junit_text
from harness.scoring.compare import (ALPHA, EQUIVALENCE_CONFIDENCE, STATUSES, URISK_ALPHA, Comparison, ComparisonSuite,
                                     ScopeComparison)
from harness.scoring.evaluate import TABLE_METRICS
from harness.scoring.stats import CONFIDENCE
from harness.text import plural

FAILING_STATUSES = ("worse",)  # JUnit fails only what is WORSE
MARK_BETTER, MARK_WORSE = "^", "v"  # in the N-system table: Holm-significant gain / drop against the base


def system_letter(index: int) -> str:
    """The base's letter (index 0: a) or a candidate's (b, c, ..., z, then s26, s27, ...), as ranx names systems."""
    return chr(ord("a") + index) if index < 26 else f"s{index}"


def candidates(suite: ComparisonSuite) -> list[tuple[str, Comparison]]:
    """Each candidate's letter and comparison with the base, in the suite's order."""
    return [(system_letter(index), c) for index, c in enumerate(suite.comparisons, start=1)]


def points(value: float) -> str:
    """A change as signed points, one decimal; a rounding zero is `+0.0`, never `-0.0`."""
    rounded = round(value * 100, 1)
    return f"{rounded + 0.0 if rounded != 0 else 0.0:+.1f}"


def _ms(value: float, signed: bool = False) -> str:
    """Milliseconds, two decimals; a rounding zero is never negative."""
    rounded = round(value, 2) + 0.0
    return f"{rounded:+.2f}" if signed else f"{rounded:.2f}"


def short_label(label: str, limit: int = 60) -> str:
    """A label cut from the left (the file name and backend are at the end) for narrow columns."""
    return label if len(label) <= limit else "\u2026" + label[-(limit - 1):]


def verdict_line(comparison: Comparison) -> str:
    """`INCONCLUSIVE: code BETTER, memory BETTER, wiki BETTER, dedupe INCONCLUSIVE; worst dedupe overall
    recall@10 -1.3 points, 2 of 24 queries moved` (the candidate, per set, then its worst cell)."""
    word = comparison.verdict()
    if word == "NOT COMPARABLE":
        return f"{word}: " + "; ".join(comparison.mismatches)
    cells = comparison.headline_cells()
    if not cells:
        return f"{word}: no tested metric in any shared set"
    per_set = comparison.set_verdicts()
    scope, metric = min(cells, key=lambda cell: (STATUSES.index(comparison.cell_status(*cell)),
                                                 cell[0].tests[cell[1]].mean_difference))
    test, moved = scope.tests[metric], scope.movement.get(metric)
    counts = (f", {moved.better + moved.worse} of {plural(moved.better + moved.worse + moved.unchanged, 'query', 'queries')} moved "
              f"({moved.better} up, {moved.worse} down)") if moved is not None else ""
    worst = (f"{'worst' if word not in ('BETTER', 'EQUIVALENT') else 'e.g.'} {scope.set_name} overall {metric} "
             f"{points(test.mean_difference)} points ({comparison.cell_status(scope, metric)}, Holm p "
             f"{scope.adjusted_p.get(metric, test.p_value):.3f}){counts}")
    sets = ", ".join(f"{name} {verdict}" for name, verdict in per_set.items())
    return f"{word}: {sets}; {worst}" if len(per_set) > 1 else f"{word}: {worst}"


def cell_line(comparison: Comparison, scope: ScopeComparison, metric: str) -> str:
    """One headline cell in words: change, 95% CI, p, Holm p, the 90% CI against the margin, and the status."""
    test = scope.tests[metric]
    low, high = scope.equivalence_ci[metric]
    resamples = scope.resamples_used.get(metric)
    return (f"{scope.set_name} overall {metric}: {scope.base[metric]:.3f} -> {scope.candidate[metric]:.3f}, "
            f"{points(test.mean_difference)} points [{CONFIDENCE:.0%} CI {points(test.ci_low)}, "
            f"{points(test.ci_high)}], p {test.p_value:.3f}, Holm p {scope.adjusted_p[metric]:.3f}; "
            f"{EQUIVALENCE_CONFIDENCE:.0%} CI {points(low)}, {points(high)} against the margin "
            f"+-{comparison.margin_points:.1f}" + (f" ({resamples:,} resamples: near the margin)" if resamples else "")
            + f" -> {comparison.cell_status(scope, metric).upper()}")


def method_lines(suite: ComparisonSuite) -> list[str]:
    return [f"headline: each set's overall value of each tested metric ({', '.join(suite.tested)}) for each "
            f"candidate; Holm across these {suite.family_size} tests, alpha {ALPHA:g}; categories and splits are "
            "exploratory (p unadjusted)",
            f"each cell: BETTER / WORSE (significant: Holm p < {ALPHA:g} and the 95% CI on the same side of 0; WORSE "
            f"also not within the margin), LOWER WITHIN MARGIN (significant drop, 90% CI above "
            f"-{suite.margin_points:.1f}), EQUIVALENT (90% CI inside +-{suite.margin_points:.1f}: two one-sided tests "
            f"at alpha {(1 - EQUIVALENCE_CONFIDENCE) / 2:g}), NO WORSE (non-inferior: 90% CI lower bound above "
            f"-{suite.margin_points:.1f}), INCONCLUSIVE (none: the set cannot tell); margin and metrics from the "
            f"gate policy ({suite.policy_source}); latency CIs resample queries, not runs: two runs of one backend "
            f"on a busy machine can differ by more"]


def system_table(suite: ComparisonSuite) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of the N-system table: one row per system, one column per (set, tested metric) overall.

    A candidate's cell carries MARK_WORSE / MARK_BETTER when its paired test against the base
    is significant after Holm; the base row carries the letters of the candidates it beats.
    """
    columns = list(dict.fromkeys((scope.set_name, metric) for comparison in suite.comparisons
                                 for scope, metric in comparison.headline_cells()))
    headers = ["", "system"] + [f"{name} {metric}" for name, metric in columns]
    base_cells: dict[tuple[str, str], tuple[float, list[str]]] = {}
    rows = []
    for index, comparison in enumerate(suite.comparisons, start=1):
        cells = {(s.set_name, m): s for s, m in comparison.headline_cells()}
        row = [system_letter(index), short_label(comparison.candidate_label)]
        for column in columns:
            scope = cells.get(column)
            if scope is None:
                row.append("-")
                continue
            metric = column[1]
            _, beaten = base_cells.setdefault(column, (scope.base[metric], []))
            status = comparison.cell_status(scope, metric)
            mark = MARK_WORSE if status == "worse" else MARK_BETTER if status == "better" else ""
            if status == "worse":
                beaten.append(system_letter(index))
            row.append(f"{scope.candidate[metric]:.3f}{' ' + mark if mark else ''}")
        rows.append(row)
    base_row = [system_letter(0), short_label(suite.base_label) + " (base)"]
    for column in columns:
        if column not in base_cells:
            base_row.append("-")
            continue
        value, beaten = base_cells[column]
        base_row.append(f"{value:.3f}" + (f" >{''.join(beaten)}" if beaten else ""))
    return headers, [base_row] + rows


def system_legend() -> str:
    return (f"{MARK_BETTER} significantly better than the base, {MARK_WORSE} significantly worse (Holm-adjusted "
            f"p < {ALPHA:g}); on the base row, >b names the candidates it is significantly better than")


def movement_lines(comparison: Comparison) -> list[str]:
    lines = []
    for scope, metric in comparison.headline_cells():
        move = scope.movement.get(metric)
        if move is None:
            continue
        risk = (f"mean change over the {move.worse} worse queries {points(-move.mean_loss)} points" if move.mean_loss is not None
                else "no query got worse")
        worst = ", ".join(f"{qid} {points(change)}" for qid, change, _ in move.worst)
        lines.append(f"{scope.set_name} {metric}: {move.better} better, {move.worse} worse, {move.unchanged} "
                     f"unchanged; {risk}; URisk(alpha={URISK_ALPHA:g}) {points(move.urisk)} points"
                     + (f"; worst: {worst}" if worst else ""))
    return lines


def latency_lines(comparison: Comparison) -> list[str]:
    if comparison.latency_note:
        return [comparison.latency_note]
    if not comparison.latency:
        return ["latency not compared: no query has a latency in both runs"]
    return [f"{entry.set_name} (n {entry.n}): " + "; ".join(
        f"{key} {_ms(entry.base[key])} -> {_ms(entry.candidate[key])} ms "
        f"({_ms(entry.candidate[key] - entry.base[key], True)} ms, {CONFIDENCE:.0%} CI "
        f"{_ms(entry.difference_ci[key][0], True)}, {_ms(entry.difference_ci[key][1], True)})" for key in entry.base)
        for entry in comparison.latency]


def resource_lines(comparison: Comparison) -> list[str]:
    """Per set, the adapter's resource figures, base -> candidate, each measured in its own run (none: nothing)."""
    lines = []
    for name, (base, candidate) in comparison.resources.items():
        figures = [f"{words} {resource_text(base.figure(field), unit)} -> {resource_text(candidate.figure(field), unit)}"
                   for field, unit, words in RESOURCE_FIGURES
                   if base.figure(field) is not None or candidate.figure(field) is not None]
        lines.append(f"{name} resources (each run's own; across runs): " + "; ".join(figures))
    return lines


# --- terminal -----------------------------------------------------------------------------------

def render_text(suite: ComparisonSuite) -> str:
    """What `compare` prints: the verdict first, then the headline, systems, movement, latency, detail."""
    lines = [f"VERDICT: {suite.verdict()}"] + [f"  {letter} {comparison.candidate_label}: {verdict_line(comparison)}"
                                               for letter, comparison in candidates(suite)]
    lines += ["", *method_lines(suite), ""]
    for letter, comparison in candidates(suite):
        lines.append(f"candidate {letter} {comparison.candidate_label} against the base {suite.base_label}:")
        lines += [f"  {cell_line(comparison, s, m)}" for s, m in comparison.headline_cells()]
        lines.append("  per-query movement (overall):")
        lines += [f"    {line}" for line in movement_lines(comparison)]
        lines.append("  latency (nearest-rank percentiles over the queries both answered; candidate - base):")
        lines += [f"    {line}" for line in latency_lines(comparison)]
        lines += [f"  {line}" for line in resource_lines(comparison)]
        lines.append("")
    headers, rows = system_table(suite)
    lines.append("systems (overall, tested metrics):")
    lines += _columns([headers] + rows)
    lines += [system_legend(), ""]
    for letter, comparison in candidates(suite):
        lines.append(f"--- every scope, candidate {letter} ---")
        lines.extend(render_pair_text(comparison).rstrip("\n").split("\n"))
        lines.append("")
    # Labels, set and category names, qids and query text come from the reports: each line is shown
    # inert (harness/report/escape.py), so no text can add a line or reach the terminal as a control.
    return "\n".join(terminal_line(line) for line in lines).rstrip("\n") + "\n"


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    rows = [[terminal_line(cell) for cell in row] for row in rows]  # widths of what is shown
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(width) if i < 2 else cell.rjust(width)
                             for i, (cell, width) in enumerate(zip(row, widths))).rstrip() for row in rows]


# --- Markdown -----------------------------------------------------------------------------------

def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return (["| " + " | ".join(markdown_text(h) for h in headers) + " |", "|" + "---|" * len(headers)]
            + ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in rows])


def render_markdown(suite: ComparisonSuite) -> str:
    """The `--summary` Markdown: verdict on top, the N-system table, headline cells, exploratory rows folded."""
    out = [f"## retrieval-gate comparison: **{suite.verdict()}**", ""]
    out += [f"- **{letter}** {markdown_code(c.candidate_label)}: {markdown_text(verdict_line(c))}"
            for letter, c in candidates(suite)]
    out += ["", f"Base: **a** {markdown_code(suite.base_label)}", ""]
    headers, rows = system_table(suite)
    out += _md_table(headers, rows) + ["", markdown_text(system_legend()), "", "### Headline cells", ""]
    cell_rows = []
    for letter, comparison in candidates(suite):
        for scope, metric in comparison.headline_cells():
            test = scope.tests[metric]
            low, high = scope.equivalence_ci[metric]
            cell_rows.append([letter, scope.set_name, metric, f"{scope.base[metric]:.3f}",
                              f"{scope.candidate[metric]:.3f}", points(test.mean_difference),
                              f"{points(test.ci_low)}, {points(test.ci_high)}", f"{test.p_value:.3f}",
                              f"{scope.adjusted_p[metric]:.3f}", f"{points(low)}, {points(high)}",
                              comparison.cell_status(scope, metric)])
    out += _md_table(["cand", "set", "metric", "base", "cand", "change (pts)", f"{CONFIDENCE:.0%} CI (pts)", "p",
                      "p Holm", f"{EQUIVALENCE_CONFIDENCE:.0%} CI (pts)", "status"], cell_rows)
    out += [""] + [f"- {markdown_text(line)}" for line in method_lines(suite)]
    out += ["", "### Per-query movement and latency", ""]
    for letter, comparison in candidates(suite):
        out += [f"- **{letter}** {markdown_text(line)}" for line in movement_lines(comparison) + latency_lines(comparison)
                + resource_lines(comparison)]
    out += ["", "<details><summary>Exploratory rows (categories and splits; p unadjusted)</summary>", ""]
    for letter, comparison in candidates(suite):
        rows = [[letter, scope.set_name, scope.scope, str(scope.n), metric, points(test.mean_difference),
                 f"{points(test.ci_low)}, {points(test.ci_high)}", f"{test.p_value:.3f} (unadjusted)"]
                for scope in comparison.scopes if not scope.headline for metric, test in scope.tests.items()]
        if rows:
            out += _md_table(["cand", "set", "scope", "n", "metric", "change (pts)", f"{CONFIDENCE:.0%} CI (pts)",
                              "p"], rows) + [""]
    out += ["</details>", ""]
    return "\n".join(out)


# --- JUnit --------------------------------------------------------------------------------------

def render_junit(suite: ComparisonSuite) -> str:
    """<testsuites>: one <testsuite> per candidate, one <testcase> per headline cell (see the module docstring)."""
    root = ET.Element("testsuites", name="retrieval-gate-compare")
    for letter, comparison in candidates(suite):
        cells = comparison.headline_cells()
        suite_element = ET.SubElement(root, "testsuite", name=xml_safe(f"compare.{letter} {comparison.candidate_label}"),
                                      tests=str(len(cells)), errors="0", skipped="0")
        failures = 0
        for scope, metric in cells:
            case = ET.SubElement(suite_element, "testcase", classname=xml_safe(f"retrieval-gate.compare.{scope.set_name}"),
                                 name=xml_safe(f"{metric} overall ({letter} {comparison.candidate_label})"))
            message = xml_safe(cell_line(comparison, scope, metric))
            if comparison.mismatches:
                failures += 1
                reason = xml_safe("not comparable: " + "; ".join(comparison.mismatches))
                ET.SubElement(case, "failure", message=reason, type="not-comparable").text = message
            elif comparison.cell_status(scope, metric) in FAILING_STATUSES:
                failures += 1
                ET.SubElement(case, "failure", message=message,
                              type=comparison.cell_status(scope, metric).replace(" ", "-")).text = message
            else:
                ET.SubElement(case, "system-out").text = message
        suite_element.set("failures", str(failures))
    return junit_text(root)


def render_pair_text(comparison: Comparison) -> str:
    """The scope table of one pair: deltas per scope, the headline tests with Holm, exploratory ones unadjusted."""
    lines = [f"base:      {comparison.base_label}", f"candidate: {comparison.candidate_label}"]
    if comparison.mismatches:
        lines.append("NOT COMPARABLE (--allow-mismatch): " + "; ".join(comparison.mismatches))
    lines += [f"set {name}: only in one run, not compared" for name in comparison.only_in_one]
    current = None
    for scope in comparison.scopes:
        if scope.set_name != current:
            current = scope.set_name
            lines += ["", f"set {current}", f"{'scope':<24}{'n':>5}" + "".join(f"{m:>16}" for m in TABLE_METRICS)
                      + "".join(f"   {m} change, 95% CI, p (Holm)" for m in comparison.tested)]
        cells = "".join(f"{_delta(scope, m):>16}" for m in TABLE_METRICS)
        stats = "".join(_test_cell(scope, m) for m in comparison.tested)
        lines.append(f"{scope.scope:<24}{scope.n:>5}{cells}{stats}")
    if comparison.flips:
        lines += ["", "flipped queries (relevant found in one run, lost in the other):"]
        lines += [f"  {flip.set_name}/{flip.qid} {flip.change_text()}  \"{flip.query}\"" for flip in comparison.flips]
    lines.append("")
    family = comparison.family_size or len(comparison.headline_cells())
    lines.append(f"paired tests: {comparison.resamples} resamples, seed {comparison.seed} ({comparison.engine} engine), resampling by query group; "
                 f"p adjusted with Holm across the {family} headline tests (each set's overall value of each "
                 f"tested metric); category and split rows are exploratory: p unadjusted, marked (expl.)")
    return "\n".join(terminal_line(line) for line in lines) + "\n"  # text from the reports shown inert


def _test_cell(scope: ScopeComparison, metric: str) -> str:
    test = scope.tests.get(metric)
    if test is None:
        return "   -"
    adjusted = scope.adjusted_p.get(metric)
    note = f"({adjusted:.3f})" if adjusted is not None else "(expl.)"
    return f"   {test.mean_difference:+.3f} [{test.ci_low:+.3f}, {test.ci_high:+.3f}] p={test.p_value:.3f} {note}"


def _delta(scope: ScopeComparison, metric: str) -> str:
    if metric not in scope.base or metric not in scope.candidate:
        return "-"
    # the change in parentheses, spaced from the value: "0.787 (-0.004)", never a glued "0.787-0.004"
    return f"{scope.base[metric]:.3f} ({scope.candidate[metric] - scope.base[metric]:+.3f})"
