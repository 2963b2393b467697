"""Self-contained HTML pages (inline CSS and SVG, no scripts, no network) for a run and for a comparison.

The page kit (escaping, numbers, tables, stylesheet) is harness/report/html_kit.py and the
charts harness/report/charts.py; this module lays out the two pages.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from harness.records import GateResult, QueryResult, SetResult
from harness.report import evidence
from harness.report.document import REPORT_FORMAT, Report
from harness.report.verdict import (Verdict, backend_identity, baseline_identity, baseline_text, counts_line,
                                    error_parts, ordered_gates)
from harness.report.verdict import verdict as run_verdict
from harness.report.comparison import cell_line, latency_lines, method_lines, movement_lines, system_legend, system_letters, system_table, verdict_line
from harness.scoring.compare import ALPHA, TESTED_METRICS, Comparison, ComparisonSuite, RunView, ScopeComparison
from harness.scoring.flips import Flip, find_flips
from harness.gating.gates import FLOAT_SLACK, RECALL_METRIC
from harness.scoring.evaluate import TABLE_METRICS, latency_summary

from harness.report.charts import (recall_bars_svg, latency_cdf_svg, _chart_box)
from harness.report.html_kit import (RETURNED_SHOWN, _anchor, _exact, _fixed, _ms, _natural_key, _page, _row, _signed, _table, _text)


# --- run page -----------------------------------------------------------------------------------

def render_run_html(report: Report, baseline_sets: Mapping[str, Mapping] | None, budgets_ms: Mapping[str, float],
                    default_budget_ms: float) -> str:
    """One self-contained page for a run report.

    `baseline_sets` maps set name -> baseline entry (harness.gating.baseline `_set_entry`), or None when
    the run had no baseline; then the recall chart shows the current run only and no flips are
    listed. `budgets_ms` / `default_budget_ms` give each set's p95 budget, as the latency gate uses.
    The header carries the verdict, the gate counts, who answered and the baseline file
    (`provenance.extra["baseline"]`, when the run recorded it).
    """
    backend = report.provenance.backend.label
    final = run_verdict(report, baseline_sets)
    body = [f'<h1>retrieval-gate run: <span class="verdict {final.status}">{_text(final.word)}</span></h1>',
            _run_headline(report, final)]
    if report.error:
        body.extend(_error_block(report.error))
    if report.sets:
        body.append("<p>Sets: " + ", ".join(f'<a href="#{_anchor(i, s.name)}">{_text(s.name)}</a>'
                                            for i, s in enumerate(report.sets)) + "</p>")
    indexes = {s.name: i for i, s in enumerate(report.sets)}
    if report.gates:
        body.append("<h2>Gates</h2>")
        body.append(_table(("result", "set", "gate", "message", "queries"), (
            (f'<span class="status {g.status}">{g.status.upper()}</span>', _text(g.set_name), _text(g.gate),
             _text(g.message), _gate_query_links(g, indexes.get(g.set_name)))
            for g in ordered_gates(report)), "gates"))
    body.append("<h2>Run details</h2>")
    body.append(_provenance_table(report))
    for index, result in enumerate(report.sets):
        entry = (baseline_sets or {}).get(result.name)
        budget = float(budgets_ms.get(result.name, default_budget_ms))
        body.extend(_run_set_section(index, result, entry, baseline_sets is not None, budget))
    return _page(f"retrieval-gate run ({backend}): {final.word}", body)


def _run_headline(report: Report, final: Verdict) -> str:
    """The box a reviewer reads first: the verdict line, the counts, backend, baseline, when."""
    provenance = report.provenance
    rows = [("gates", counts_line(report) if report.gates else "none checked"),
            ("backend", backend_identity(provenance))]
    baseline = baseline_identity(provenance)
    if baseline is not None:
        rows.append(("baseline", baseline["path"]))
        recorded = " ".join(part for part in (baseline.get("created"), f"for {baseline['backend']}"
                                              if "backend" in baseline else None,
                                              f"at commit {baseline['git_commit'][:12]}"
                                              if "git_commit" in baseline else None) if part)
        if recorded:
            rows.append(("recorded", recorded))
    elif report.gates:
        rows.append(("baseline", "not recorded in this report"))
    if provenance.started:
        rows.append(("started", provenance.started))
    items = "".join(f"<dt>{_text(k)}</dt><dd>{_text(v)}</dd>" for k, v in rows)
    return (f'<div class="headline {final.status}"><p class="verdict {final.status}">{_text(final.line)}</p>'
            f"<dl>{items}</dl></div>")


def _error_block(error: str) -> list[str]:
    """The error's first line as a paragraph, the adapter's stderr tail (if any) preformatted."""
    first, tail = error_parts(error)
    out = [f'<p class="warn">Error: {_text(first)}</p>']
    if tail:
        out.append(f'<pre class="stderr">{_text(tail)}</pre>')
    return out


def _query_anchor(set_index: int, qid: str) -> str:
    return f"q-{set_index}-" + re.sub(r"[^A-Za-z0-9_-]", "_", qid)


def _gate_query_links(gate: GateResult, set_index: int | None) -> str:
    """Links from a failed (or warned) gate to the rows of the queries it names."""
    if set_index is None or not gate.flipped or gate.status == "pass":
        return ""
    links = [f'<a class="qid" href="#{_query_anchor(set_index, qid)}">{_text(qid)}</a>' for qid in gate.flipped]
    return ", ".join(links)


def _provenance_table(report: Report) -> str:
    provenance = report.provenance
    startup = provenance.adapter.startup_seconds
    machine = provenance.machine
    command = " ".join(provenance.backend.argv)
    rows = [
        ("backend", backend_identity(provenance)),
        # the argv only when it says more than the label (a built-in alias, a run file)
        ("adapter command", command if command and command != provenance.backend.label else None),
        ("baseline", baseline_text(provenance)),
        ("started", provenance.started),
        ("harness", provenance.harness_version),
        ("git commit", provenance.git_commit),
        ("condition", provenance.condition or "not given"),
        ("adapter startup", None if provenance.run_file else
         f"{startup:.3f} s to the ready banner" if startup is not None
         else "no ready banner; the first query's latency includes start-up"),
        ("machine", f"{machine.get('platform', '?')}, {machine.get('cpus', '?')} cpus, "
                    f"python {machine.get('python', '?')}"),
        ("report format", REPORT_FORMAT),
    ]
    return _table(None, ((("th", _text(k)), _text(v)) for k, v in rows if v is not None), "meta")


def _run_set_section(index: int, result: SetResult, entry: Mapping | None, has_baseline: bool,
                     budget_ms: float) -> list[str]:
    name = result.name
    status = ("" if result.complete else
              f' <span class="fail">INCOMPLETE ({len(result.queries)} of {result.query_count} answered)</span>')
    corpus = _text(result.corpus_hash[:16])
    out = [f'<section id="{_anchor(index, name)}">',
           f"<h2>set {_text(name)}{status}</h2>",
           f"<p>revision {_text(result.revision)}, {_text(result.query_count)} queries, "
           f'k={_text(result.k)}, corpus <span class="ids">{corpus}</span></p>',
           _aggregates_table(result.aggregates)]
    out.append(f"<h3>{_text(RECALL_METRIC)} per category</h3>")
    out.append(_chart_box(recall_bars_svg(
        f"set {name}: {RECALL_METRIC} per category, "
        + ("baseline vs current" if entry is not None else "current run (no baseline)"),
        _run_bar_groups(result.aggregates, entry), ("baseline", "current"))))
    out.append("<h3>latency</h3>")
    out.append(_latency_block(result, budget_ms))
    out.append("<h3>flipped queries (relevant found in the baseline, lost now, or the reverse)</h3>")
    flips: list[Flip] = []
    if entry is None:
        out.append("<p>No baseline for this set" + ("" if has_baseline else " (the run had none)") + ".</p>")
    else:
        flips = _run_flips(result, entry)
        out.append(_flips_table(flips, {q.qid: q for q in result.queries}, index))
    out.extend(evidence.html_blocks(result, _text))  # nothing for sets without evidence
    out.extend(_not_passed(result.queries, index, {f.qid for f in flips}))
    out.append("</section>")
    return out


def query_label(query: QueryResult) -> str:
    """Why a query does not count in the aggregates: `xfail`, `measure-only`, or "" for a scored query."""
    if query.outcome in ("xfail", "xpass"):
        return "xfail"
    return "" if query.scored else "measure-only"


def _label_html(query: QueryResult | None) -> str:
    label = query_label(query) if query is not None else ""
    return f'<span class="label">{_text(label)}, not scored</span>' if label else ""


def _returned(query: QueryResult | None) -> str:
    """What came back instead: the first ids the backend returned now."""
    if query is None:
        return ""
    more = " \u2026" if len(query.ids) > RETURNED_SHOWN else ""
    return _ids(query.ids[:RETURNED_SHOWN], "nothing") + more


def _ids(ids: Sequence[str], empty: str = "", css: str = "") -> str:
    """Document ids, comma-separated; a line may break between ids, never inside one (`doc-05`)."""
    inner = ", ".join(f'<span class="id">{_text(doc_id)}</span>' for doc_id in ids) or _text(empty)
    return f'<span class="ids{" " + css if css else ""}">{inner}</span>'


def _not_passed(queries: Sequence[QueryResult], set_index: int, flipped: set[str] = frozenset()) -> list[str]:
    """Failed queries first, then unexpected passes (xpass), by qid: what to read after the flips.

    A query already in the flips table keeps its link target there; the others get it here."""
    rows = sorted((q for q in queries if q.outcome in ("fail", "xpass")),
                  key=lambda q: (q.outcome != "fail", _natural_key(q.qid)))
    out = [f"<h3>queries that did not pass ({len(rows)})</h3>"]
    if rows:
        out.append(_table(("qid", "outcome", "category", "found", "returned now", "broken contracts", "query"), (_row(
            "" if q.qid in flipped else _query_anchor(set_index, q.qid), (
                f'<span class="qid">{_text(q.qid)}</span>',
                f'<span class="{"fail" if q.outcome == "fail" else "xpass"}">{_text(q.outcome)}</span>'
                + (" " + _label_html(q) if query_label(q) and q.outcome != "xpass" else ""),
                _text(q.category), _ids(q.found, "none"), _returned(q),
                _text("; ".join(f"{c.name}: {c.detail}" for c in q.contracts if not c.passed)),
                _text(q.query))) for q in rows), "queries"))
    return out


def _aggregates_table(aggregates: Mapping) -> str:
    scopes = [("overall", aggregates.get("overall") or {})]
    scopes += [(f"category {c}", v) for c, v in (aggregates.get("category") or {}).items()]
    scopes += [(f"split {s}", v) for s, v in (aggregates.get("split") or {}).items()]
    return _table(("scope", "n", *TABLE_METRICS), (
        (_text(label), ("num", _text(values.get("n", 0))), *(("num", _fixed(values.get(m))) for m in TABLE_METRICS))
        for label, values in scopes), "aggregates")


def _run_bar_groups(aggregates: Mapping, entry: Mapping | None) -> list[tuple[str, dict[str, float | None]]]:
    """overall first, then every category of the run or of the baseline (one missing now shows as such)."""
    base = (entry or {}).get("aggregates") or {}
    groups = [("overall", {"baseline": (base.get("overall") or {}).get(RECALL_METRIC) if entry else None,
                           "current": (aggregates.get("overall") or {}).get(RECALL_METRIC)})]
    now, before = aggregates.get("category") or {}, base.get("category") or {}
    for category in sorted(set(now) | set(before), key=_natural_key):
        groups.append((category, {"baseline": (before.get(category) or {}).get(RECALL_METRIC),
                                  "current": (now.get(category) or {}).get(RECALL_METRIC)}))
    return groups


def _latency_block(result: SetResult, budget_ms: float) -> str:
    summary = result.latency_ms
    latencies = [q.latency_ms for q in result.queries]
    if not latencies or "p95" not in summary:
        return f"<p>No latency measured (no query answered). Budget: p95 &lt;= {_text(_ms(budget_ms))} ms.</p>"
    over = summary["p95"] > budget_ms
    verdict = (f'<span class="fail">p95 over the budget of {_text(_ms(budget_ms))} ms</span>' if over
               else f'<span class="pass">p95 within the budget of {_text(_ms(budget_ms))} ms</span>')
    caption = (f"<p>p50 {_text(_ms(summary['p50']))} ms, p95 {_text(_ms(summary['p95']))} ms, "
               f"max {_text(_ms(summary['max']))} ms over {len(latencies)} queries (nearest-rank percentiles); "
               f"{verdict}.</p>")
    chart = latency_cdf_svg(f"set {result.name}: latency distribution",
                            latencies, [("p50", summary["p50"]), ("p95", summary["p95"]), ("budget", budget_ms)],
                            over_budget=over)
    return caption + "\n" + _chart_box(chart)


def _run_flips(result: SetResult, entry: Mapping) -> list[Flip]:
    """Queries in both runs whose found relevant ids differ: lost (found before, not now) and gained."""
    before = {qid: row.get("found") or [] for qid, row in (entry.get("queries") or {}).items()}
    return find_flips(result.name, before, {q.qid: q.found for q in result.queries},
                      {q.qid: q.query for q in result.queries})


def _flip_order(flip: Flip) -> tuple:
    """Losses first (what a reviewer must look at), then gains; by qid within each."""
    return (0 if flip.lost else 1, _natural_key(flip.qid))


def _flips_table(flips: Sequence[Flip], queries: Mapping[str, QueryResult] | None = None,
                 set_index: int | None = None) -> str:
    """Losses first, then gains; with the run's `queries`, what came back now and an xfail /
    measure-only label; with `set_index`, each row is the link target of the gates naming it."""
    if not flips:
        return "<p>No query flipped.</p>"
    ordered = sorted(flips, key=_flip_order)
    lost = sum(1 for f in flips if f.lost)
    headers = ["qid", "change", "lost", "gained"]
    if queries is not None:
        headers += ["returned now", "counts"]
    headers.append("query")

    def cells(flip: Flip) -> list:
        row = [f'<span class="qid">{_text(flip.qid)}</span>',
               '<span class="lost">lost</span>' if flip.lost else '<span class="gained">gained</span>',
               _ids(flip.lost, css="lost"), _ids(flip.gained, css="gained")]
        if queries is not None:
            query = queries.get(flip.qid)
            row += [_returned(query), _label_html(query) or "scored"]
        row.append(_text(flip.query))
        return row

    return (f"<p>{lost} lost, {len(flips) - lost} gained only.</p>\n"
            + _table(headers, (_row(_query_anchor(set_index, f.qid) if set_index is not None else "", cells(f))
                               for f in ordered), "flips"))


# --- comparison page ----------------------------------------------------------------------------

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
    css = "pass" if word in ("NO WORSE", "BETTER") else "fail"
    letters = system_letters(suite)
    verdicts = "".join(f'<p class="verdict {"pass" if c.verdict() in ("NO WORSE", "BETTER") else "fail"}">'
                       f"{_text(letter)} {_text(c.candidate_label)}: {_text(verdict_line(c))}</p>"
                       for (letter, _), c in zip(letters[1:], suite.comparisons))
    body = [f'<h1>retrieval-gate comparison: <span class="verdict {css}">{_text(word)}</span></h1>',
            f'<div class="headline {css}">{verdicts}</div>',
            _table(None, ((("th", _text(k)), _text(v)) for k, v in (
                ("base", f"a {suite.base_label}"),
                *((f"candidate {letter}", label) for letter, label in letters[1:]),
                ("paired tests", f"{suite.comparisons[0].resamples if suite.comparisons else 0} resamples, seed "
                                 f"{suite.comparisons[0].seed if suite.comparisons else 0}, resampling by query group"),
                *(("method", line) for line in method_lines(suite)))), "meta")]
    headers, rows = system_table(suite)
    body += ["<h2>systems (overall, tested metrics)</h2>",
             _table(headers, ([_text(c) if i < 2 else ("num", _text(c)) for i, c in enumerate(row)] for row in rows),
                    "systems"),
             f"<p>{_text(system_legend())}</p>", "<h2>headline cells</h2>",
             "<ul>" + "".join(f"<li>{_text(letter)}: {_text(cell_line(c, s, m))}</li>"
                              for (letter, _), c in zip(letters[1:], suite.comparisons)
                              for s, m in c.headline_cells()) + "</ul>"]
    index = 0
    for (letter, _), pair, view in zip(letters[1:], suite.comparisons, views):
        if len(suite.comparisons) > 1:
            body.append(f"<h2>candidate {_text(letter)}: {_text(pair.candidate_label)}</h2>")
        if pair.mismatches:
            body.append('<p class="warn"><b>NOT COMPARABLE</b> (compared with --allow-mismatch): '
                        + _text("; ".join(pair.mismatches)) + "</p>")
        for name in pair.only_in_one:
            body.append(f"<p>set {_text(name)}: only in one run, not compared.</p>")
        body.append("<p>per-query movement: " + _text("; ".join(movement_lines(pair)) or "none") + "</p>")
        names = list(dict.fromkeys(s.set_name for s in pair.scopes))
        for name in names:
            scopes = [s for s in pair.scopes if s.set_name == name]
            body += [f'<section id="{_anchor(index, name)}">', f"<h2>set {_text(name)}</h2>",
                     f"<h3>{_text(RECALL_METRIC)} per category</h3>",
                     _chart_box(recall_bars_svg(f"set {name}: {RECALL_METRIC} per category, base vs candidate",
                                                _comparison_bar_groups(scopes), ("base", "candidate"))),
                     "<h3>latency</h3>", _comparison_latency(name, base, view, pair),
                     "<h3>every scope: change, 95% CI and p (Holm on the overall rows; categories and splits "
                     "exploratory, p unadjusted)</h3>", _scope_table(scopes),
                     "<h3>flipped queries (relevant found in one run, lost in the other)</h3>",
                     _flips_table([f for f in pair.flips if f.set_name == name]), "</section>"]
            index += 1
    return _page(f"retrieval-gate comparison: {word}", body)


def _view_latencies(view: RunView | None, name: str) -> list[float]:
    rows = ((view.sets.get(name) or {}).get("queries") or {}) if view is not None else {}
    return [float(row["latency_ms"]) for row in rows.values()  # type: ignore[union-attr]
            if isinstance(row, Mapping) and isinstance(row.get("latency_ms"), (int, float))]


def _comparison_latency(name: str, base: RunView | None, candidate: RunView | None,
                        pair: Comparison | None = None) -> str:
    """p50 / p95 / max of each run (nearest rank, as the latency gate), and the p95 change."""
    summaries = {}
    for label, view in (("base", base), ("candidate", candidate)):
        values = _view_latencies(view, name)
        if values:
            summaries[label] = latency_summary([v / 1000 for v in values])
    if not summaries:
        note = f" {_text(pair.latency_note)}." if pair is not None and pair.latency_note else ""
        return ("<p>No per-query latencies in the runs compared (a baseline file keeps none, or none were given)."
                f"{note}</p>")
    rows = []
    for label in ("base", "candidate"):
        summary = summaries.get(label)
        if summary is None:
            rows.append((_text(label), ("num", "-"), ("num", "-"), ("num", "-"), ("num", "-")))
            continue
        rows.append((_text(label), ("num", _text(f"{summary['n']:.0f}")), ("num", _text(_ms(summary["p50"]))),
                     ("num", _text(_ms(summary["p95"]))), ("num", _text(_ms(summary["max"])))))
    table = _table(("run", "n", "p50 ms", "p95 ms", "max ms"), rows, "latency")
    if len(summaries) == 2:
        change = summaries["candidate"]["p95"] - summaries["base"]["p95"]
        ratio = summaries["candidate"]["p95"] / summaries["base"]["p95"] if summaries["base"]["p95"] > 0 else None
        css = "worse" if change > 0 else "better" if change < 0 else "same"
        table += (f'\n<p>p95 change: <span class="{css}">{_text(_signed(change, 2))} ms</span>'
                  + (f" ({ratio:.2f}\u00d7 the base)" if ratio is not None else "") + "</p>")
    if pair is not None:
        entry = next((e for e in pair.latency if e.set_name == name), None)
        if entry is not None:
            table += "\n<p>" + _text(latency_lines(dataclasses.replace(pair, latency=[entry]))[0]) + "</p>"
        elif pair.latency_note:
            table += f"\n<p>{_text(pair.latency_note)}</p>"
    return table


def _comparison_bar_groups(scopes: Sequence[ScopeComparison]) -> list[tuple[str, dict[str, float | None]]]:
    groups = []
    for scope in scopes:
        if scope.scope == "overall" or scope.scope.startswith("category:"):
            label = scope.scope.removeprefix("category:")
            groups.append((label, {"base": scope.base.get(RECALL_METRIC),
                                   "candidate": scope.candidate.get(RECALL_METRIC)}))
    return groups


def _scope_table(scopes: Sequence[ScopeComparison]) -> str:
    shown = TABLE_METRICS
    tested = [m for m in dict.fromkeys(m for scope in scopes for m in scope.tests)] or list(TESTED_METRICS)
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
