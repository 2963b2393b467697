"""Self-contained HTML pages (inline CSS and SVG, no scripts, no network) for a run and for a comparison.

Every chart carries its numbers in machine-readable form: each bar and marker line has a
`data-value` (Python `repr` of the float, so it parses back to the exact report value) and a
<title>; the latency CDF has `data-points` ("latency_ms,fraction" pairs, in data units).
Every string that comes from a report goes through `_text`, which escapes for HTML and XML
alike, so each <svg> element is also well-formed XML.
"""

from __future__ import annotations

import dataclasses
import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence

from harness.records import GateResult, QueryResult, SetResult
from harness.report import evidence
from harness.report.document import REPORT_FORMAT, Report
from harness.report.verdict import (Verdict, backend_identity, baseline_identity, baseline_text, counts_line,
                                    error_parts, ordered_gates)
from harness.report.verdict import verdict as run_verdict
from harness.report.comparison import cell_line, latency_lines, method_lines, movement_lines, system_legend, system_letters, system_table, verdict_line
from harness.scoring.compare import ALPHA, TESTED_METRICS, Comparison, ComparisonSuite, RunView, ScopeComparison
from harness.scoring.flips import Flip, find_flips
from harness.gating.gates import FLOAT_SLACK, RECALL_DROP_LIMIT, RECALL_METRIC
from harness.scoring.evaluate import TABLE_METRICS, latency_summary

# XML 1.0 cannot carry these code points even as references (C0 controls, lone surrogates,
# U+FFFE/U+FFFF); C1 controls are legal XML but HTML parse errors. All become U+FFFD.
_UNSAFE_CHARACTERS = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_DIGITS = re.compile(r"(\d+)")

CHART_WIDTH = 640
LABEL_WIDTH = 170  # px for category names left of the bars
LABEL_CHARACTERS = 24  # longer names are cut in the label; the full name is in the <title>
BAR_HEIGHT = 12
RETURNED_SHOWN = 5  # ids of what came back instead, per failing query
LATENCY_FLOOR_MS = 1e-3  # a 0 ms latency (rounding) is drawn here on the log axis
# Colours are presentation attributes, not CSS, so an SVG copied out of the page looks the same.
GRID = 'stroke="#e3e6ea"'
AXIS_COLOUR = "#8a939c"
AXIS = f'stroke="{AXIS_COLOUR}"'
SERIES_COLOURS = ("#a7b0ba", "#2f6db5")  # first series (baseline, base), second (current, candidate)
MARKER_COLOURS = {"p50": "#2e8540", "p95": "#c77700", "budget": "#b3261e"}
WORSE, BETTER = "#b3261e", "#17692b"
SVG_FONT = 'font-family="system-ui, sans-serif" font-size="11"'

# Readable from a phone (390 px) to a desktop (1,400 px): wide tables scroll inside their own
# box (div.scroll), never the page; ids and CI cells never wrap mid-token; stderr wraps in its box.
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; color: #1d2329; margin: 1.5em auto; max-width: 94em; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: .3em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccd; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #d5d9de; padding: .2em .5em; text-align: left; vertical-align: top; }
th { background: #f2f4f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.test { white-space: nowrap; }
.pass { color: #17692b; } .fail, .lost, .worse { color: #b3261e; } .gained, .better { color: #17692b; }
.warn { background: #fff4d6; border: 1px solid #e0b84a; padding: .5em; }
.status { font-weight: bold; white-space: nowrap; } .status.warn { background: none; border: 0; padding: 0; color: #8a5a00; }
.ids { font-family: ui-monospace, monospace; font-size: .92em; } .id { white-space: nowrap; }
table.gates td:nth-child(3) { white-space: nowrap; } table.meta td { overflow-wrap: anywhere; }
.qid, .qid a { font-family: ui-monospace, monospace; white-space: nowrap; }
.label { display: inline-block; font-size: .8em; padding: 0 .4em; border-radius: .6em; background: #e8ebef;
  white-space: nowrap; }
.scroll { overflow-x: auto; max-width: 100%; }
.headline { border: 1px solid #d5d9de; border-left: 6px solid #8a939c; padding: .6em 1em; margin: .5em 0 1em; }
.headline.fail { border-left-color: #b3261e; color: inherit; } .headline.pass { border-left-color: #17692b; color: inherit; }
.headline.warn { border-left-color: #e0b84a; background: none; }
.headline .verdict { font-size: 1.15em; font-weight: bold; margin: 0 0 .3em; }
.headline .verdict.fail { color: #b3261e; } .headline .verdict.pass { color: #17692b; }
.headline dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .1em 1em; margin: .3em 0 0; }
.headline dt { color: #5a636c; } .headline dd { margin: 0; overflow-wrap: anywhere; }
pre.stderr { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f7f9; border: 1px solid #d5d9de;
  padding: .5em; font-size: .9em; max-width: 100%; box-sizing: border-box; }
tr:target { outline: 2px solid #2f6db5; }
svg { max-width: 100%; height: auto; display: block; margin: .3em 0; }
@media (max-width: 600px) {
  body { margin: .8em auto; padding: 0 .6em; }
  /* a phone: each gate is a card (status, set and gate on one line, the message below), and a
     chart keeps a legible size inside its own scrolling box */
  table.gates tr:first-child { display: none; }
  table.gates, table.gates tbody { display: block; }
  table.gates tr { display: grid; grid-template-columns: auto auto minmax(0, 1fr); border: 1px solid #d5d9de;
    margin-bottom: .4em; }
  table.gates td { border: 0; } table.gates td:nth-child(n+4) { grid-column: 1 / -1; }
  table.gates td:empty { display: none; }
  .chart-box svg { min-width: 560px; }
}
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
    """Fixed decimals; a value that rounds to zero is `0.000`, never `-0.000`."""
    if value is None:
        return "-"
    rounded = round(float(value), digits)
    return f"{rounded + 0.0 if rounded != 0 else 0.0:.{digits}f}"


def _signed(value: float, digits: int = 3) -> str:
    """`+0.012` / `\u22120.012`; a change that rounds to zero is shown unsigned (`0.000`), never `-0.000`."""
    rounded = round(float(value), digits)
    if rounded == 0:
        return f"{0.0:.{digits}f}"
    return f"{rounded:+.{digits}f}".replace("-", "\u2212")


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
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
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
        row_id = getattr(row, "row_id", None)
        out.append((f'<tr id="{row_id}">' if row_id else "<tr>") + "".join(cells) + "</tr>")
    out.append("</table>")
    return '<div class="scroll">\n' + "\n".join(out) + "\n</div>"


class _Row(tuple):
    """A table row that carries an element id (a link target)."""

    row_id: str | None = None


def _row(row_id: str, cells: Sequence) -> _Row:
    row = _Row(cells)
    row.row_id = row_id
    return row


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


def _chart_box(svg: str) -> str:
    """A chart in its own scrolling box: on a phone it keeps a legible width and scrolls, the page does not."""
    return f'<div class="scroll chart-box">\n{svg}\n</div>'


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
