"""The self-contained HTML page of `compare` (inline CSS and SVG, no scripts, no network).

The page kit is harness/report/html_kit.py, the charts harness/report/charts.py; the flips
table is the run page's (harness/report/html.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness.report.charts import _chart_box, recall_bars_svg
from harness.report.comparison import (candidates, cell_line, latency_lines, method_lines, movement_lines,
                                       resource_lines, system_legend, system_table, verdict_line)
from harness.report.html import flips_table
from harness.report.html_kit import _anchor, _exact, _fixed, _ms, _page, _signed, _table, _text
from harness.scoring.compare import (ALPHA, TESTED_METRICS, Comparison, ComparisonSuite, RunView, ScopeComparison,
                                     query_latencies)
from harness.scoring.evaluate import TABLE_METRICS, latency_summary
from harness.gating.gates import FLOAT_SLACK
from harness.gating.policy import FOUNDING_METRIC


def render_comparison_html(comparison: Comparison | ComparisonSuite, base: RunView | None = None,
                           candidate: RunView | Sequence[RunView] | None = None) -> str:
    """One self-contained page for `compare`: the verdict per candidate, the N-system table and the
    headline cells (Holm, equivalence at the margin), then per candidate and set recall@10 bars,
    latency (from the per-query latencies of `base` and the candidate RunViews, when given), the
    scope table (exploratory rows marked) and the flips.

    `comparison` is a ComparisonSuite (N candidates) or one pairwise Comparison; `candidate` is
    one RunView or one per candidate, in the suite's order."""
    suite = comparison if isinstance(comparison, ComparisonSuite) else ComparisonSuite(
        comparison.base_label, [comparison], comparison.margin_points, comparison.tested)
    views = list(candidate) if isinstance(candidate, Sequence) else [candidate] * len(suite.comparisons)
    word = suite.verdict()
    css = _verdict_css(word)
    verdicts = "".join(f'<p class="verdict {_verdict_css(c.verdict())}">'
                       f"{_text(letter)} {_text(c.candidate_label)}: {_text(verdict_line(c))}</p>"
                       for letter, c in candidates(suite))
    body = [f'<h1>retrieval-gate comparison: <span class="verdict {css}">{_text(word)}</span></h1>',
            f'<div class="headline {css}">{verdicts}</div>',
            _table(None, ((("th", _text(k)), _text(v)) for k, v in (
                ("base", f"a {suite.base_label}"),
                *((f"candidate {letter}", c.candidate_label) for letter, c in candidates(suite)),
                ("paired tests", f"{suite.comparisons[0].resamples if suite.comparisons else 0} resamples, seed "
                                 f"{suite.comparisons[0].seed if suite.comparisons else 0}, resampling by query group"),
                *(("method", line) for line in method_lines(suite)))), "meta")]
    headers, rows = system_table(suite)
    body += ["<h2>systems (overall, tested metrics)</h2>",
             _table(headers, ([_text(c) if i < 2 else ("num", _text(c)) for i, c in enumerate(row)] for row in rows),
                    "systems"),
             f"<p>{_text(system_legend())}</p>", "<h2>headline cells</h2>",
             "<ul>" + "".join(f"<li>{_text(letter)}: {_text(cell_line(c, s, m))}</li>"
                              for letter, c in candidates(suite)
                              for s, m in c.headline_cells()) + "</ul>"]
    index = 0
    for (letter, pair), view in zip(candidates(suite), views):
        if len(suite.comparisons) > 1:
            body.append(f"<h2>candidate {_text(letter)}: {_text(pair.candidate_label)}</h2>")
        if pair.mismatches:
            body.append('<p class="warn"><b>NOT COMPARABLE</b> (compared with --allow-mismatch): '
                        + _text("; ".join(pair.mismatches)) + "</p>")
        body += [f"<p>set {_text(name)}: only in one run, not compared.</p>" for name in pair.only_in_one]
        body.append("<p>per-query movement: " + _text("; ".join(movement_lines(pair)) or "none") + "</p>")
        for name in dict.fromkeys(s.set_name for s in pair.scopes):
            scopes = [s for s in pair.scopes if s.set_name == name]
            body += [f'<section id="{_anchor(index, name)}">', f"<h2>set {_text(name)}</h2>",
                     f"<h3>{_text(FOUNDING_METRIC)} per category</h3>",
                     _chart_box(recall_bars_svg(f"set {name}: {FOUNDING_METRIC} per category, base vs candidate",
                                                _comparison_bar_groups(scopes), ("base", "candidate"))),
                     "<h3>latency</h3>", _comparison_latency(name, base, view, pair),
                     *(f"<p>{_text(line)}</p>" for line in resource_lines(dataclasses.replace(
                         pair, resources={k: v for k, v in pair.resources.items() if k == name}))),
                     "<h3>every scope: change, 95% CI and p (Holm on the overall rows; categories and splits "
                     "exploratory, p unadjusted)</h3>", _scope_table(scopes),
                     "<h3>flipped queries (relevant found in one run, lost in the other)</h3>",
                     flips_table([f for f in pair.flips if f.set_name == name]), "</section>"]
            index += 1
    return _page(f"retrieval-gate comparison: {word}", body)


def _comparison_latency(name: str, base: RunView | None, candidate: RunView | None, pair: Comparison) -> str:
    """p50 / p95 / max of each run (nearest rank, as the latency gate), and the p95 change."""
    summaries = {}
    for label, view in (("base", base), ("candidate", candidate)):
        numbers = view.sets.get(name) if view is not None else None
        values = list(query_latencies(numbers).values()) if numbers is not None else []
        if values:
            summaries[label] = latency_summary([v / 1000 for v in values])
    if not summaries:
        note = f" {_text(pair.latency_note)}." if pair.latency_note else ""
        return ("<p>No per-query latencies in the runs compared (a baseline file keeps none, or none were given)."
                f"{note}</p>")
    rows = []
    for label in ("base", "candidate"):
        summary = summaries.get(label)
        cells = (["-"] * 4 if summary is None
                 else [f"{summary.n}", *(_ms(value) if value is not None else "-"
                                           for value in (summary.p50, summary.p95, summary.max))])
        rows.append((_text(label), *(("num", _text(cell)) for cell in cells)))
    table = _table(("run", "n", "p50 ms", "p95 ms", "max ms"), rows, "latency")
    base_p95, candidate_p95 = (summaries[label].p95 if label in summaries else None for label in ("base", "candidate"))
    if base_p95 is not None and candidate_p95 is not None:
        change = candidate_p95 - base_p95
        ratio = candidate_p95 / base_p95 if base_p95 > 0 else None
        css = "worse" if change > 0 else "better" if change < 0 else "same"
        table += (f'\n<p>p95 change: <span class="{css}">{_text(_signed(change, 2))} ms</span>'
                  + (f" ({ratio:.2f}\u00d7 the base)" if ratio is not None else "") + "</p>")
    entry = next((e for e in pair.latency if e.set_name == name), None)
    if entry is not None:
        table += "\n<p>" + _text(latency_lines(dataclasses.replace(pair, latency=[entry]))[0]) + "</p>"
    elif pair.latency_note:
        table += f"\n<p>{_text(pair.latency_note)}</p>"
    return table


def _comparison_bar_groups(scopes: Sequence[ScopeComparison]) -> list[tuple[str, dict[str, float | None]]]:
    return [(scope.scope.removeprefix("category:"), {"base": scope.base.get(FOUNDING_METRIC),
                                                     "candidate": scope.candidate.get(FOUNDING_METRIC)})
            for scope in scopes if scope.scope == "overall" or scope.scope.startswith("category:")]


def _scope_table(scopes: Sequence[ScopeComparison]) -> str:
    shown = TABLE_METRICS
    tested = list(dict.fromkeys(m for scope in scopes for m in scope.tests)) or list(TESTED_METRICS)
    headers = ("scope", "n", *(f"{m} base \u2192 cand" for m in shown),
               *(f"{m} change [95% CI], p, p Holm" for m in tested))
    rows = []
    for scope in scopes:
        cells: list = [_text(scope.scope), ("num", _text(scope.n))]
        for metric in shown:
            if metric in scope.base and metric in scope.candidate:
                change = scope.candidate[metric] - scope.base[metric]
                css = "worse" if change < -FLOAT_SLACK else "better" if change > FLOAT_SLACK else "same"
                cells.append(("num", f"{scope.base[metric]:.3f} \u2192 {scope.candidate[metric]:.3f} "
                                     f'<span class="{css}">({_signed(change)})</span>'))
            else:
                cells.append(("num", "-"))
        for metric in tested:
            test = scope.tests.get(metric)
            if test is None:
                cells.append(("num", "-"))
                continue
            adjusted = scope.adjusted_p.get(metric)
            significant = adjusted is not None and adjusted < ALPHA
            mark = "<b>" if significant else ""
            cells.append(("num test", (
                f'<span data-metric="{_text(metric)}" data-difference="{_exact(test.mean_difference)}" '
                f'data-ci-low="{_exact(test.ci_low)}" data-ci-high="{_exact(test.ci_high)}" '
                f'data-p="{_exact(test.p_value)}" data-p-holm="{_exact(adjusted) if adjusted is not None else ""}">'
                f"{mark}{_signed(test.mean_difference)} [{_signed(test.ci_low)}, {_signed(test.ci_high)}], "
                f"p {test.p_value:.3f}, "
                + (f"Holm {_fixed(adjusted)}" if adjusted is not None else "unadjusted (exploratory)")
                + f"{'</b>' if significant else ''}</span>")))
        rows.append(cells)
    return _table(headers, rows, "scopes")


def _verdict_css(word: str) -> str:
    """Red only for what is worse (or not comparable), amber for what the sets cannot tell, green otherwise."""
    if word in ("WORSE", "NOT COMPARABLE"):
        return "fail"
    return "warn" if word in ("INCONCLUSIVE", "LOWER WITHIN MARGIN") else "pass"
