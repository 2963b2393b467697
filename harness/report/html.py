"""The self-contained HTML page of a run (inline CSS and SVG, no scripts, no network).

The page kit (escaping, numbers, tables, stylesheet) is harness/report/html_kit.py, the
charts harness/report/charts.py, the comparison page harness/report/html_compare.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set as AbstractSet

from harness.measured import Aggregates, Latency
from harness.records import GateResult, QueryResult, SetResult
from harness.report import evidence
from harness.report.document import REPORT_FORMAT, Report
from harness.report.verdict import (RESOURCES_HOW, Verdict, backend_identity, baseline_identity, baseline_text,
                                    change_text, counts_line, error_parts, improvement_text, improvements,
                                    ordered_gates, rebaseline_hint, resource_figures, short_message, startup_text,
                                    value_text, verdict_of)
from harness.scoring.flips import Flip
from harness.gating.gates import FRACTION, baseline_latency_measured
from harness.gating.policy import FOUNDING_METRIC, GatePolicy
from harness.scoring.evaluate import TABLE_METRICS
from harness.report.charts import _chart_box, latency_cdf_svg, recall_bars_svg
from harness.report.html_kit import RETURNED_SHOWN, _anchor, _fixed, _ms, _natural_key, _page, _table, _text


# --- run page -----------------------------------------------------------------------------------

def render_run_html(report: Report) -> str:
    """One self-contained page for a run report, from the report alone.

    The chart of each set draws its first gated [0, 1] metric (recall@10 by default) baseline vs
    current from the gates' numbers (the current run alone when ungated), the flips table the
    report's flips, the latency chart the budget its latency gate held it to. The header carries
    the verdict, the gate counts, who answered and the baseline file (`provenance.extra["baseline"]`).
    """
    final = verdict_of(report)
    body = [f'<h1>retrieval-gate run: <span class="verdict {final.status}">{_text(final.word)}</span></h1>',
            _run_headline(report, final)]
    if report.error:  # its first line, then the adapter's stderr tail (if any) preformatted
        first, tail = error_parts(report.error)
        body.append(f'<p class="warn">Error: {_text(first)}</p>')
        body += [f'<pre class="stderr">{_text(tail)}</pre>'] if tail else []
    if report.sets:
        body.append("<p>Sets: " + ", ".join(f'<a href="#{_anchor(i, s.name)}">{_text(s.name)}</a>'
                                            for i, s in enumerate(report.sets)) + "</p>")
    indexes = {s.name: i for i, s in enumerate(report.sets)}
    if report.gates:
        # the sets' own figures with their whole message; a category's as a compact row (the message is its title)
        headers = ("result", "set", "scope", "gate", "baseline", "current", "change", "message", "queries")
        body += ["<h2>Gates</h2>", _table(headers, (
            (f'<span class="status {g.status}">{g.status.upper()}</span>', _text(g.set_name), _text(g.scope),
             _text(g.metric or g.gate), ("num", _text(value_text(g, g.baseline))),
             ("num", _text(value_text(g, g.current))), ("num", _text(change_text(g))),
             _text(g.message if g.category is None else short_message(g)), _gate_query_links(g, indexes.get(g.set_name)))
            for g in ordered_gates(report)), "gates")]
    better = improvements(report)
    if better:
        body += ["<h2>Improvements</h2>", "<ul>" + "".join(f'<li class="pass">{_text(improvement_text(g))}</li>'
                                                          for g in better) + f"<li>{_text(rebaseline_hint(report))}</li></ul>"]
    body += ["<h2>Run details</h2>", _provenance_table(report)]
    for index, result in enumerate(report.sets):
        body.extend(_run_set_section(index, result, report))
    return _page(f"retrieval-gate run ({report.provenance.backend.label}): {final.word}", body)


def _run_headline(report: Report, final: Verdict) -> str:
    """The box a reviewer reads first: the verdict line, the counts, backend, baseline, when."""
    provenance = report.provenance
    rows = [("gates", counts_line(report) if report.gates else "none checked"),
            ("backend", backend_identity(provenance))]
    baseline = baseline_identity(provenance)
    if baseline is not None:
        rows.append(("baseline", baseline["path"]))
        recorded = " ".join(f"{word}{baseline[key][:12] if key == 'git_commit' else baseline[key]}" for key, word
                            in (("created", ""), ("backend", "for "), ("git_commit", "at commit ")) if key in baseline)
        if recorded:
            rows.append(("recorded", recorded))
    elif report.gates:
        rows.append(("baseline", "not recorded in this report"))
    if provenance.started:
        rows.append(("started", provenance.started))
    items = "".join(f"<dt>{_text(k)}</dt><dd>{_text(v)}</dd>" for k, v in rows)
    return (f'<div class="headline {final.status}"><p class="verdict {final.status}">{_text(final.line)}</p>'
            f"<dl>{items}</dl></div>")


def _gate_query_links(gate: GateResult, set_index: int | None) -> str:
    """Links from a failed (or warned) gate to the rows of the queries it names."""
    if set_index is None or not gate.flipped or gate.status == "pass":
        return ""
    return ", ".join(f'<a class="qid" href="#{_anchor(set_index, qid, "q")}">{_text(qid)}</a>' for qid in gate.flipped)


def _provenance_table(report: Report) -> str:
    provenance = report.provenance
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
        ("adapter startup", startup_text(provenance)),
        ("machine", f"{machine.get('platform', '?')}, {machine.get('cpus', '?')} cpus, "
                    f"python {machine.get('python', '?')}"),
        ("report format", REPORT_FORMAT),
    ]
    return _table(None, ((("th", _text(k)), _text(v)) for k, v in rows if v is not None), "meta")


def _run_set_section(index: int, result: SetResult, report: Report) -> list[str]:
    name = result.name
    gates = [g for g in report.gates if g.set_name == name]
    metric_gates = [g for g in gates if g.unit == FRACTION and g.gate != "judged"]
    metric = metric_gates[0].metric if metric_gates and metric_gates[0].metric else FOUNDING_METRIC
    latency = next((g for g in gates if g.gate == "latency"), None)
    flips = (report.flips or {}).get(name)
    status = ("" if result.complete else
              f' <span class="fail">INCOMPLETE ({len(result.queries)} of {result.query_count} answered)</span>')
    baseline = {g.scope: g.baseline for g in metric_gates if g.metric == metric}
    limit = metric_gates[0].limit if metric_gates else None
    chart = recall_bars_svg(f"set {name}: {metric} per category, "
                            + ("baseline vs current" if baseline else "current run (no baseline)"),
                            _run_bar_groups(result.aggregates, metric, baseline), ("baseline", "current"),
                            metric=metric, drop_limit=limit if limit is not None else GatePolicy().drop_limit)
    return [f'<section id="{_anchor(index, name)}">', f"<h2>set {_text(name)}{status}</h2>",
            f"<p>revision {_text(result.revision)}, {_text(result.query_count)} queries, k={_text(result.k)}, "
            f'corpus <span class="ids">{_text(result.corpus_hash[:16])}</span></p>',
            _aggregates_table(result.aggregates), f"<h3>{_text(metric)} per category</h3>", _chart_box(chart),
            "<h3>latency</h3>", _latency_block(result, latency.limit if latency is not None else None,
                                               (report.baseline_latency or {}).get(name)),
            *_resources_block(result, report),
            "<h3>flipped queries (relevant found in the baseline, lost now, or the reverse)</h3>",
            "<p>No baseline for this set (the run was not gated).</p>" if flips is None
            else flips_table(flips, {q.qid: q for q in result.queries}, index),
            *evidence.html_blocks(result),  # nothing for sets without evidence
            *_not_passed(result.queries, index, {f.qid for f in flips or ()}), "</section>"]


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


def _not_passed(queries: Sequence[QueryResult], set_index: int, flipped: AbstractSet[str] = frozenset()) -> list[str]:
    """Failed queries first, then unexpected passes (xpass), by qid: what to read after the flips.

    A query already in the flips table keeps its link target there; the others get it here."""
    rows = sorted((q for q in queries if q.outcome in ("fail", "xpass")),
                  key=lambda q: (q.outcome != "fail", _natural_key(q.qid)))
    out = [f"<h3>queries that did not pass ({len(rows)})</h3>"]
    if rows:
        out.append(_table(("qid", "outcome", "category", "found", "returned now", "broken contracts", "query"), ((
            f'<span class="qid">{_text(q.qid)}</span>',
            f'<span class="{"fail" if q.outcome == "fail" else "xpass"}">{_text(q.outcome)}</span>'
            + (" " + _label_html(q) if query_label(q) and q.outcome != "xpass" else ""),
            _text(q.category), _ids(q.found, "none"), _returned(q),
            _text("; ".join(f"{c.name}: {c.detail}" for c in q.contracts if not c.passed)),
            _text(q.query)) for q in rows), "queries",
            ["" if q.qid in flipped else _anchor(set_index, q.qid, "q") for q in rows]))
    return out


def _aggregates_table(aggregates: Aggregates) -> str:
    return _table(("scope", "n", *TABLE_METRICS), (
        (_text(label.replace(":", " ", 1)), ("num", _text(scope.n)),
         *(("num", _fixed(scope.means.get(m))) for m in TABLE_METRICS)) for label, scope in aggregates.scopes()),
        "aggregates")


def _run_bar_groups(aggregates: Aggregates, metric: str,
                    baseline: Mapping[str, float | None]) -> list[tuple[str, dict[str, float | None]]]:
    """overall first, then every category of the run or of the gates (one missing now shows as such).

    `baseline`: scope ("overall" or a category) -> the baseline value its gate recorded."""
    now = aggregates.category
    categories = sorted(set(now) | (set(baseline) - {"overall"}), key=_natural_key)
    scopes = [("overall", aggregates.overall), *((category, now.get(category)) for category in categories)]
    return [(scope, {"baseline": baseline.get(scope), "current": numbers.means.get(metric) if numbers else None})
            for scope, numbers in scopes]


def _latency_block(result: SetResult, budget_ms: float | None, baseline: Latency | None = None) -> str:
    """The latency figures and CDF; the budget line when the run's latency gate held it to one."""
    summary = result.latency
    latencies = [q.latency_ms for q in result.queries]
    budget = f" Budget: p95 &lt;= {_text(_ms(budget_ms))} ms." if budget_ms is not None else ""
    if not latencies or summary.p50 is None or summary.p95 is None or summary.max is None:
        return f"<p>No latency measured (no query answered).{budget}</p>"
    over = budget_ms is not None and summary.p95 > budget_ms
    verdict = ("; not gated" if budget_ms is None else
               f'; <span class="fail">p95 over the budget of {_text(_ms(budget_ms))} ms</span>' if over
               else f'; <span class="pass">p95 within the budget of {_text(_ms(budget_ms))} ms</span>')
    def was(value: float | None) -> str:
        return f" (baseline {_text(_ms(value))})" if value is not None else ""
    caption = (f"<p>p50 {_text(_ms(summary.p50))} ms{was(baseline.p50 if baseline else None)}, "
               f"p95 {_text(_ms(summary.p95))} ms{was(baseline.p95 if baseline else None)}, "
               f"max {_text(_ms(summary.max))} ms over {len(latencies)} queries (nearest-rank percentiles)"
               f"{verdict}{'; baseline ' + baseline_latency_measured(result) if baseline else ''}.</p>")
    markers = [("p50", summary.p50), ("p95", summary.p95)] + ([("budget", budget_ms)] if budget_ms else [])
    chart = latency_cdf_svg(f"set {result.name}: latency distribution", latencies, markers, over_budget=over)
    return caption + "\n" + _chart_box(chart)


def _resources_block(result: SetResult, report: Report) -> list[str]:
    """The adapter's resource figures beside the baseline's, and how they were measured (nothing when none were)."""
    figures = resource_figures(result, report)
    if not figures:
        return []
    rows = ((("th", _text(words)), _text(was), _text(now)) for _, words, now, was in figures)
    return ["<h3>resources</h3>", _table(("figure", "baseline", "this run"), rows, "resources"),
            f"<p>Measured: {_text(RESOURCES_HOW)}.</p>"]


def flips_table(flips: Sequence[Flip], queries: Mapping[str, QueryResult] | None = None,
                 set_index: int | None = None) -> str:
    """Losses first, then gains; with the run's `queries`, what came back now and an xfail /
    measure-only label; with `set_index`, each row is the link target of the gates naming it."""
    if not flips:
        return "<p>No query flipped.</p>"
    ordered = sorted(flips, key=lambda flip: (0 if flip.lost else 1, _natural_key(flip.qid)))
    lost = sum(1 for f in flips if f.lost)
    headers = ["qid", "change", "lost", "gained", *(["returned now", "counts"] if queries is not None else []), "query"]

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
            + _table(headers, map(cells, ordered), "flips",
                     [_anchor(set_index, f.qid, "q") for f in ordered] if set_index is not None else ()))
