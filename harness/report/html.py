"""Self-contained HTML pages (inline CSS and SVG, no scripts, no network) for a run and for a comparison.

Every chart carries its numbers in machine-readable form: each bar and marker line has a
`data-value` (Python `repr` of the float, so it parses back to the exact report value) and a
<title>; the latency CDF has `data-points` ("latency_ms,fraction" pairs, in data units).
Every string that comes from a report goes through `_text`, which escapes for HTML and XML
alike, so each <svg> element is also well-formed XML.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence

from harness.records import QueryResult, SetResult
from harness.report import evidence
from harness.report.document import REPORT_FORMAT, Report
from harness.scoring.compare import TESTED_METRICS, Comparison, ScopeComparison
from harness.scoring.flips import Flip, find_flips
from harness.gating.gates import FLOAT_SLACK, RECALL_DROP_LIMIT, RECALL_METRIC
from harness.scoring.evaluate import TABLE_METRICS

# XML 1.0 cannot carry these code points even as references (C0 controls, lone surrogates,
# U+FFFE/U+FFFF); C1 controls are legal XML but HTML parse errors. All become U+FFFD.
_UNSAFE_CHARACTERS = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_DIGITS = re.compile(r"(\d+)")

CHART_WIDTH = 640
LABEL_WIDTH = 170  # px for category names left of the bars
LABEL_CHARACTERS = 24  # longer names are cut in the label; the full name is in the <title>
BAR_HEIGHT = 12
LATENCY_FLOOR_MS = 1e-3  # a 0 ms latency (rounding) is drawn here on the log axis
# Colours are presentation attributes, not CSS, so an SVG copied out of the page looks the same.
GRID = 'stroke="#e3e6ea"'
AXIS_COLOUR = "#8a939c"
AXIS = f'stroke="{AXIS_COLOUR}"'
SERIES_COLOURS = ("#a7b0ba", "#2f6db5")  # first series (baseline, base), second (current, candidate)
MARKER_COLOURS = {"p50": "#2e8540", "p95": "#c77700", "budget": "#b3261e"}
WORSE, BETTER = "#b3261e", "#17692b"
SVG_FONT = 'font-family="system-ui, sans-serif" font-size="11"'

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; color: #1d2329; margin: 1.5em auto; max-width: 72em; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccd; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #d5d9de; padding: .2em .5em; text-align: left; vertical-align: top; }
th { background: #f2f4f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #17692b; } .fail, .lost, .worse { color: #b3261e; } .gained, .better { color: #17692b; }
.warn { background: #fff4d6; border: 1px solid #e0b84a; padding: .5em; }
.ids { font-family: ui-monospace, monospace; font-size: .92em; }
svg { max-width: 100%; height: auto; display: block; margin: .3em 0; }
"""


# --- escaping and number formatting -------------------------------------------------------------

def _text(value: object) -> str:
    """Escape any report string for HTML text, HTML attributes and XML alike (quotes included)."""
    return html.escape(_UNSAFE_CHARACTERS.sub("\ufffd", str(value)), quote=True)


def _exact(value: float) -> str:
    """A number for a data-* attribute: repr round-trips, so float(attribute) == the report value."""
    return repr(float(value))


def _px(value: float) -> str:
    return f"{value:.2f}"


def _fixed(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value: float, digits: int = 3) -> str:
    return f"{value:+.{digits}f}".replace("-", "\u2212")


def _ms(value: float) -> str:
    """Latency in ms with about three significant figures."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _natural_key(text: str) -> tuple:
    """Sort 'q2' before 'q10': digit runs compare as numbers."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(text) if part)


def _clip(text: str, limit: int = LABEL_CHARACTERS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# --- page scaffolding ---------------------------------------------------------------------------

def _page(title: str, body: Iterable[str]) -> str:
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{_text(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
        *body, "</body>", "</html>", ""])


def _table(headers: Sequence[str] | None, rows: Iterable[Sequence], css: str = "") -> str:
    """A table from already-escaped cell markup; a cell ("th", markup) is a row header, any other
    (css class, markup) pair a data cell with that class."""
    out = [f'<table class="{css}">' if css else "<table>"]
    if headers:
        out.append("<tr>" + "".join(f"<th>{_text(h)}</th>" for h in headers) + "</tr>")
    for row in rows:
        cells = []
        for cell in row:
            if isinstance(cell, tuple) and cell[0] == "th":
                cells.append(f"<th>{cell[1]}</th>")
            elif isinstance(cell, tuple):
                cells.append(f'<td class="{cell[0]}">{cell[1]}</td>')
            else:
                cells.append(f"<td>{cell}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _anchor(index: int, name: str) -> str:
    """An element id for the index-th set: only [A-Za-z0-9_-] survive; the index keeps ids unique."""
    return f"set-{index}-" + re.sub(r"[^A-Za-z0-9_-]", "_", name)


# --- charts -------------------------------------------------------------------------------------

def recall_bars_svg(title: str, groups: Sequence[tuple[str, Mapping[str, float | None]]],
                    series: tuple[str, str]) -> str:
    """Horizontal grouped bars of recall@10 in [0, 1], one group per scope (overall, each category).

    `groups`: (label, {series name: value or None}); `series`: (first, second), e.g.
    ("baseline", "current"). A series absent from every group is left out of the legend; a value
    of None inside a drawn series is written as "missing". The second series' change against the
    first is printed beside it, red when it is a drop larger than the recall gate's limit.
    """
    drawn = [name for name in series if any(values.get(name) is not None for _, values in groups)]
    bar_step = BAR_HEIGHT + 2
    group_height = max(1, len(drawn)) * bar_step + 10
    top, left, plot_width = 34, LABEL_WIDTH + 10, CHART_WIDTH - LABEL_WIDTH - 130
    plot_bottom = top + group_height * len(groups)
    out = [_svg_open("recall-bars", plot_bottom + 30, f'data-metric="{_text(RECALL_METRIC)}"'),
           f"<title>{_text(title)}</title>"]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + tick * plot_width
        out.append(_line("grid", x, top - 4, x, plot_bottom, GRID))
        out.append(f'<text x="{_px(x)}" y="{plot_bottom + 14}" text-anchor="middle">{tick:g}</text>')
    out.append(_line("axis", left, top - 4, left, plot_bottom, AXIS))
    for position, name in enumerate(drawn):
        x = left + position * 130
        colour = SERIES_COLOURS[series.index(name)]
        out.append(f'<rect class="legend" x="{x}" y="8" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{x + 16}" y="18">{_text(name)}</text>')
    out.append(f'<text x="{CHART_WIDTH - 8}" y="18" text-anchor="end">{_text(RECALL_METRIC)}</text>')
    for index, (label, values) in enumerate(groups):
        y0 = top + index * group_height
        out.append(f'<text x="{LABEL_WIDTH}" y="{_px(y0 + len(drawn) * bar_step / 2 + 4)}" text-anchor="end">'
                   f"<title>{_text(label)}</title>{_text(_clip(label))}</text>")
        for position, name in enumerate(drawn):
            out.extend(_bar(label, name, values, series, left, y0 + position * bar_step, plot_width))
    out.append("</svg>")
    return "\n".join(out)


def _bar(label: str, name: str, values: Mapping[str, float | None], series: tuple[str, str],
         left: float, y: float, plot_width: float) -> list[str]:
    """One bar with its data-value and <title>, and its value (and change, for the second series) beside it."""
    value = values.get(name)
    if value is None:
        return [f'<text class="missing" x="{left + 4}" y="{_px(y + BAR_HEIGHT - 2)}" data-series="{_text(name)}" '
                f'data-group="{_text(label)}">{_text(name)}: missing</text>']
    width = max(0.0, min(1.0, value)) * plot_width
    note, colour = f"{value:.3f}", ""
    first = values.get(series[0])
    if name == series[1] and first is not None:
        change = value - first
        note += f" ({_signed(change * 100, 1)} pts)" if abs(change) > FLOAT_SLACK else " (no change)"
        if -change > RECALL_DROP_LIMIT + FLOAT_SLACK:
            colour = f' fill="{WORSE}"'
        elif change > FLOAT_SLACK:
            colour = f' fill="{BETTER}"'
    return [f'<rect class="bar" x="{left}" y="{_px(y)}" width="{_px(width)}" height="{BAR_HEIGHT}" '
            f'fill="{SERIES_COLOURS[series.index(name)]}" data-series="{_text(name)}" data-group="{_text(label)}" '
            f'data-value="{_exact(value)}"><title>{_text(label)}: {_text(name)} {_text(RECALL_METRIC)} {value:.4f}'
            f"</title></rect>",
            f'<text x="{_px(left + width + 4)}" y="{_px(y + BAR_HEIGHT - 2)}"{colour}>{_text(note)}</text>']


def latency_cdf_svg(title: str, latencies_ms: Sequence[float], markers: Sequence[tuple[str, float]],
                    *, over_budget: bool = False) -> str:
    """Empirical CDF of per-query latency (x: ms, log scale; y: fraction of queries <= x).

    The curve is a step function through (l_i, i/n) for the sorted latencies l_1..l_n, so its
    last point is (max latency, 1). `markers`: (name, ms) drawn as labelled vertical lines
    (p50, p95, budget), each carrying data-marker and data-value; with `over_budget` the p95 and
    budget labels are red. Needs at least one latency.
    """
    values = sorted(latencies_ms)
    n = len(values)
    left, right, top, bottom = 56, CHART_WIDTH - 20, 58, 228
    span = [max(v, LATENCY_FLOOR_MS) for v in values + [ms for _, ms in markers]]
    low_exponent = math.floor(math.log10(min(span)))
    high_exponent = max(math.ceil(math.log10(max(span))), low_exponent + 1)

    def x_of(ms: float) -> float:
        position = (math.log10(max(ms, LATENCY_FLOOR_MS)) - low_exponent) / (high_exponent - low_exponent)
        return left + position * (right - left)

    def y_of(fraction: float) -> float:
        return bottom - fraction * (bottom - top)

    out = [_svg_open("latency-cdf", bottom + 40, f'data-n="{n}"'), f"<title>{_text(title)}</title>"]
    for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(_line("grid", left, y_of(fraction), right, y_of(fraction), GRID))
        out.append(f'<text x="{left - 6}" y="{_px(y_of(fraction) + 4)}" text-anchor="end">{fraction:g}</text>')
    for exponent in range(low_exponent, high_exponent + 1):
        x = x_of(10.0 ** exponent)
        out.append(_line("grid", x, top, x, bottom, GRID))
        out.append(f'<text x="{_px(x)}" y="{bottom + 14}" text-anchor="middle">{10.0 ** exponent:g}</text>')
    out.append(_line("axis", left, bottom, right, bottom, AXIS))
    out.append(_line("axis", left, top, left, bottom, AXIS))
    out.append(f'<text x="{(left + right) / 2:.0f}" y="{bottom + 32}" text-anchor="middle">'
               f"latency per query, ms (log scale)</text>")
    out.append(f'<text x="{left}" y="{top - 44}">fraction of queries answered within x (n={n})</text>')
    points = [f"{_exact(ms)},{_exact(rank / n)}" for rank, ms in enumerate(values, start=1)]
    pixels = [f"{_px(x_of(values[0]))},{_px(y_of(0.0))}"]
    for rank, ms in enumerate(values, start=1):  # a step: across at the old height, then up
        pixels += [f"{_px(x_of(ms))},{_px(y_of((rank - 1) / n))}", f"{_px(x_of(ms))},{_px(y_of(rank / n))}"]
    out.append(f'<polyline class="cdf" fill="none" stroke="{SERIES_COLOURS[1]}" stroke-width="1.6" '
               f'points="{" ".join(pixels)}" data-points="{" ".join(points)}">'
               f"<title>latency CDF over {n} queries, max {_text(_ms(values[-1]))} ms</title></polyline>")
    for row, (name, ms) in enumerate(markers):
        x, label_y = x_of(ms), top - 8 - 12 * (len(markers) - 1 - row)  # labels stacked, none overlap
        out.append(f'<line class="marker" x1="{_px(x)}" y1="{label_y + 2}" x2="{_px(x)}" y2="{bottom}" '
                   f'stroke="{MARKER_COLOURS.get(name, AXIS_COLOUR)}" stroke-width="1.4" stroke-dasharray="5 3" '
                   f'data-marker="{_text(name)}" data-value="{_exact(ms)}">'
                   f"<title>{_text(name)} {ms:.4f} ms</title></line>")
        emphasis = f' fill="{WORSE}" font-weight="bold"' if over_budget and name in ("p95", "budget") else ""
        anchor, shift = ("end", -3) if x > (left + right) / 2 else ("start", 3)
        out.append(f'<text x="{_px(x + shift)}" y="{label_y}" text-anchor="{anchor}"{emphasis}>'
                   f"{_text(name)} {_text(_ms(ms))} ms</text>")
    out.append("</svg>")
    return "\n".join(out)


def _svg_open(kind: str, height: float, data: str) -> str:
    """No xmlns: the HTML parser puts <svg> in the SVG namespace, and the page names no URL at all."""
    return (f'<svg class="chart {kind}" viewBox="0 0 {CHART_WIDTH} {height}" width="{CHART_WIDTH}" height="{height}" '
            f'role="img" {SVG_FONT} {data}>')


def _line(css: str, x1: float, y1: float, x2: float, y2: float, stroke: str) -> str:
    return f'<line class="{css}" x1="{_px(x1)}" y1="{_px(y1)}" x2="{_px(x2)}" y2="{_px(y2)}" {stroke}/>'


# --- run page -----------------------------------------------------------------------------------

def render_run_html(report: Report, baseline_sets: Mapping[str, Mapping] | None, budgets_ms: Mapping[str, float],
                    default_budget_ms: float) -> str:
    """One self-contained page for a run report.

    `baseline_sets` maps set name -> baseline entry (harness.gating.baseline `_set_entry`), or None when
    the run had no baseline; then the recall chart shows the current run only and no flips are
    listed. `budgets_ms` / `default_budget_ms` give each set's p95 budget, as the latency gate uses.
    """
    backend = report.provenance.backend.label
    if not report.complete:
        verdict, css = "backend failed, incomplete run", "fail"
    elif not report.gates:
        verdict, css = "measured (no gate)", ""
    else:
        verdict, css = ("FAILED", "fail") if report.failed_gates else ("passed", "pass")
    body = [f'<h1>retrieval-gate run: <span class="verdict {css}">{_text(verdict)}</span></h1>',
            _provenance_table(report)]
    if report.error:
        body.append(f'<p class="warn">Error: {_text(report.error)}</p>')
    if report.sets:
        body.append("<p>Sets: " + ", ".join(f'<a href="#{_anchor(i, s.name)}">{_text(s.name)}</a>'
                                            for i, s in enumerate(report.sets)) + "</p>")
    if report.gates:
        body.append("<h2>Gates</h2>")
        ordered = sorted(report.gates, key=lambda g: (g.passed, g.set_name, g.gate))
        body.append(_table(("result", "set", "gate", "message"), (
            (f'<span class="{"pass" if g.passed else "fail"}">{"PASS" if g.passed else "FAIL"}</span>',
             _text(g.set_name), _text(g.gate), _text(g.message)) for g in ordered), "gates"))
    for index, result in enumerate(report.sets):
        entry = (baseline_sets or {}).get(result.name)
        budget = float(budgets_ms.get(result.name, default_budget_ms))
        body.extend(_run_set_section(index, result, entry, baseline_sets is not None, budget))
    return _page(f"retrieval-gate run ({backend}): {verdict}", body)


def _provenance_table(report: Report) -> str:
    provenance = report.provenance
    startup = provenance.adapter.startup_seconds
    machine = provenance.machine
    rows = [
        ("backend", provenance.backend.label),
        ("adapter argv", " ".join(provenance.backend.argv)),
        ("started", provenance.started),
        ("harness", provenance.harness_version),
        ("git commit", provenance.git_commit),
        ("condition", provenance.condition or "not given"),
        ("adapter startup", f"{startup:.3f} s to the ready banner" if startup is not None
         else "no ready banner; the first query's latency includes start-up"),
        ("machine", f"{machine.get('platform', '?')}, {machine.get('cpus', '?')} cpus, "
                    f"python {machine.get('python', '?')}"),
        ("report format", REPORT_FORMAT),
    ]
    return _table(None, ((("th", _text(k)), _text(v)) for k, v in rows if v is not None), "meta")


def _run_set_section(index: int, result: SetResult, entry: Mapping | None, has_baseline: bool,
                     budget_ms: float) -> list[str]:
    name = result.name
    status = "" if result.complete else ' <span class="fail">INCOMPLETE</span>'
    corpus = _text(result.corpus_hash[:16])
    out = [f'<section id="{_anchor(index, name)}">',
           f"<h2>set {_text(name)}{status}</h2>",
           f"<p>revision {_text(result.revision)}, {_text(result.query_count)} queries, "
           f'k={_text(result.k)}, corpus <span class="ids">{corpus}</span></p>',
           _aggregates_table(result.aggregates)]
    out.append(f"<h3>{_text(RECALL_METRIC)} per category</h3>")
    out.append(recall_bars_svg(f"set {name}: {RECALL_METRIC} per category, "
                               + ("baseline vs current" if entry is not None else "current run (no baseline)"),
                               _run_bar_groups(result.aggregates, entry), ("baseline", "current")))
    out.append("<h3>latency</h3>")
    out.append(_latency_block(result, budget_ms))
    out.append("<h3>flipped queries (relevant found in the baseline, lost now, or the reverse)</h3>")
    if entry is None:
        out.append("<p>No baseline for this set" + ("" if has_baseline else " (the run had none)") + ".</p>")
    else:
        out.append(_flips_table(_run_flips(result, entry)))
    out.extend(evidence.html_blocks(result, _text))  # issue 17; nothing for sets without evidence
    out.extend(_not_passed(result.queries))
    out.append("</section>")
    return out


def _not_passed(queries: Sequence[QueryResult]) -> list[str]:
    """Failed queries first, then unexpected passes (xpass), by qid: what to read after the flips."""
    rows = sorted((q for q in queries if q.outcome in ("fail", "xpass")),
                  key=lambda q: (q.outcome != "fail", _natural_key(q.qid)))
    out = [f"<h3>queries that did not pass ({len(rows)})</h3>"]
    if rows:
        out.append(_table(("qid", "outcome", "category", "found", "broken contracts", "query"), ((
            _text(q.qid), f'<span class="{"fail" if q.outcome == "fail" else "xpass"}">{_text(q.outcome)}</span>',
            _text(q.category), f'<span class="ids">{_text(", ".join(q.found)) or "none"}</span>',
            _text("; ".join(f"{c.name}: {c.detail}" for c in q.contracts if not c.passed)),
            _text(q.query)) for q in rows), "queries"))
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
    return caption + "\n" + chart


def _run_flips(result: SetResult, entry: Mapping) -> list[Flip]:
    """Queries in both runs whose found relevant ids differ: lost (found before, not now) and gained."""
    before = {qid: row.get("found") or [] for qid, row in (entry.get("queries") or {}).items()}
    return find_flips(result.name, before, {q.qid: q.found for q in result.queries},
                      {q.qid: q.query for q in result.queries})


def _flip_order(flip: Flip) -> tuple:
    """Losses first (what a reviewer must look at), then gains; by qid within each."""
    return (0 if flip.lost else 1, _natural_key(flip.qid))


def _flips_table(flips: Sequence[Flip]) -> str:
    if not flips:
        return "<p>No query flipped.</p>"
    ordered = sorted(flips, key=_flip_order)
    lost = sum(1 for f in flips if f.lost)
    return (f"<p>{lost} lost, {len(flips) - lost} gained only.</p>\n"
            + _table(("qid", "change", "lost", "gained", "query"), (
                (_text(f.qid), '<span class="lost">lost</span>' if f.lost else '<span class="gained">gained</span>',
                 f'<span class="ids lost">{_text(", ".join(f.lost))}</span>',
                 f'<span class="ids gained">{_text(", ".join(f.gained))}</span>',
                 _text(f.query)) for f in ordered), "flips"))


# --- comparison page ----------------------------------------------------------------------------

def render_comparison_html(comparison: Comparison) -> str:
    """One self-contained page for `compare`: per set, recall@10 bars, the scope table and the flips."""
    tests = sum(len(s.tests) for s in comparison.scopes)
    body = ["<h1>retrieval-gate comparison</h1>",
            _table(None, ((("th", _text(k)), _text(v)) for k, v in (
                ("base", comparison.base_label), ("candidate", comparison.candidate_label),
                ("paired tests", f"{comparison.resamples} resamples, seed {comparison.seed}, resampling by query "
                                 f"group; p adjusted with Holm across the {tests} tests shown"))), "meta")]
    if comparison.mismatches:
        body.append('<p class="warn"><b>NOT COMPARABLE</b> (compared with --allow-mismatch): '
                    + _text("; ".join(comparison.mismatches)) + "</p>")
    for name in comparison.only_in_one:
        body.append(f"<p>set {_text(name)}: only in one run, not compared.</p>")
    names = list(dict.fromkeys(s.set_name for s in comparison.scopes))
    for index, name in enumerate(names):
        scopes = [s for s in comparison.scopes if s.set_name == name]
        body += [f'<section id="{_anchor(index, name)}">', f"<h2>set {_text(name)}</h2>",
                 f"<h3>{_text(RECALL_METRIC)} per category</h3>",
                 recall_bars_svg(f"set {name}: {RECALL_METRIC} per category, base vs candidate",
                                 _comparison_bar_groups(scopes), ("base", "candidate")),
                 "<h3>every scope: change, 95% CI and p (Holm)</h3>", _scope_table(scopes),
                 "<h3>flipped queries (relevant found in one run, lost in the other)</h3>",
                 _flips_table([f for f in comparison.flips if f.set_name == name]), "</section>"]
    return _page("retrieval-gate comparison", body)


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
            significant = adjusted is not None and adjusted < 0.05
            mark = "<b>" if significant else ""
            cells.append(("num test", (
                f'<span data-metric="{_text(metric)}" data-difference="{_exact(test.mean_difference)}" '
                f'data-ci-low="{_exact(test.ci_low)}" data-ci-high="{_exact(test.ci_high)}" '
                f'data-p="{_exact(test.p_value)}" data-p-holm="{_exact(adjusted) if adjusted is not None else ""}">'
                f"{mark}{_signed(test.mean_difference)} [{_signed(test.ci_low)}, {_signed(test.ci_high)}], "
                f"p {test.p_value:.3f}, Holm {_fixed(adjusted)}{'</b>' if significant else ''}</span>")))
        rows.append(cells)
    return _table(headers, rows, "scopes")
