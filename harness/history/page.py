"""The history as one self-contained HTML page: a trend chart per series, its changes and outliers marked.

Built from the HTML report's own kit (harness/report/html_kit.py: escaping, numbers, tables, the
stylesheet) and chart scaffolding (harness/report/charts.py: the SVG element and its box, lines),
so the page reads and scales as the run report does: readable from a phone (390 px) to a desktop,
each chart filling its box and never scrolling. Every chart carries its numbers: the trend's
`data-points` ("run index,value" pairs, values exact), each change's `data-size`, `data-first` and
`data-last` (run indexes), each outlier's `data-index` and `data-value`.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.history.trend import Trend
from harness.report.charts import _chart_box, _line, _svg_open
from harness.report.html_kit import (AXIS, BETTER, CHART_WIDTH, GRID, SERIES_COLOURS, WORSE, _anchor, _exact, _page,
                                     _px, _table, _text)
from harness.text import plural

LEFT, RIGHT, TOP, BOTTOM = 64, CHART_WIDTH - 16, 44, 196


def render_history_html(trends: Sequence[Trend], *, source: str = "") -> str:
    """The page: a headline (what is shown, how many changes), then per series its chart and a table of
    its changes and outliers."""
    changes = sum(len(s.analysis.changes) for t in trends for s in t.stretches)
    outliers = sum(len(s.analysis.outliers) for t in trends for s in t.stretches)
    status = "fail" if changes else "pass"
    body = ["<h1>retrieval-gate history</h1>",
            f'<div class="headline {status}"><p class="verdict {status}">{plural(changes, "change point")}, '
            f'{plural(outliers, "outlier")} in {len(trends)} series</p>'
            f'<dl><dt>store</dt><dd>{_text(source)}</dd></dl></div>']
    if trends:
        body.append("<p>Series: " + ", ".join(f'<a href="#{_anchor(i, t.key.label(), "series")}">'
                                              f"{_text(t.key.label())}</a>" for i, t in enumerate(trends)) + "</p>")
    for index, trend in enumerate(trends):
        body += [f'<h2 id="{_anchor(index, trend.key.label(), "series")}">{_text(trend.key.label())}</h2>',
                 _chart_box(trend_svg(trend)), *_findings(trend)]
    return _page("retrieval-gate history", body)


def _findings(trend: Trend) -> list[str]:
    rows = []
    for stretch in trend.stretches:
        for change in stretch.analysis.changes:
            ci = trend.ci_text(change.ci)
            rows.append(('<span class="status fail">CHANGE</span>' if change.size < 0 else
                         '<span class="status pass">CHANGE</span>', ("num", _text(trend.size_text(change.size))),
                         ("num", _text(ci)), ("ids", _text(stretch.commit_range(change))),
                         _text(f"{trend.value_text(change.before)} -> {trend.value_text(change.after)}")))
        for outlier in stretch.analysis.outliers:
            rows.append(('<span class="status warn">OUTLIER</span>', ("num", _text(trend.size_text(outlier.size))),
                         ("num", "-"), ("ids", _text(stretch.name(outlier.index))),
                         _text("the latest run, off its level so far" if outlier.latest
                               else f"{trend.value_text(outlier.value)}, back to "
                                    f"{trend.value_text(outlier.level)} after")))
    if not rows:
        return ["<p>No change point.</p>"]
    return [_table(("finding", "size", "95% CI", "commits", "levels"), rows, "queries")]


def trend_svg(trend: Trend) -> str:
    """The series as a line over its runs (oldest left), the levels between changes drawn flat, each
    change's range shaded with its size above it, outliers ringed, set-version cuts dashed."""
    points = trend.points
    values = [p.value for p in points]
    low, high = min(values), max(values)
    pad = max((high - low) * 0.1, 1e-3 if not trend.in_ms else 0.05)
    low, high = low - pad, high + pad
    n = len(points)

    def x_of(index: float) -> float:
        return LEFT + (RIGHT - LEFT) * (index / (n - 1) if n > 1 else 0.5)

    def y_of(value: float) -> float:
        return BOTTOM - (value - low) / (high - low) * (BOTTOM - TOP)

    out = [_svg_open("trend", BOTTOM + 36, f'data-metric="{_text(trend.key.metric)}" data-n="{n}"'),
           f"<title>{_text(trend.key.label())}</title>"]
    for step in range(5):
        value = low + (high - low) * step / 4
        out.append(_line("grid", LEFT, y_of(value), RIGHT, y_of(value), GRID))
        out.append(f'<text x="{LEFT - 6}" y="{_px(y_of(value) + 4)}" text-anchor="end">{_text(trend.value_text(value))}'
                   f"</text>")
    out += [_line("axis", LEFT, BOTTOM, RIGHT, BOTTOM, AXIS), _line("axis", LEFT, TOP, LEFT, BOTTOM, AXIS)]
    dates = [p.time[:10] if p.time else "" for p in points]
    out.append(f'<text x="{LEFT}" y="{BOTTOM + 16}">{_text(dates[0])}</text>')
    if n > 1:
        out.append(f'<text x="{RIGHT}" y="{BOTTOM + 16}" text-anchor="end">{_text(dates[-1])}</text>')
    out.append(f'<text x="{(LEFT + RIGHT) / 2:.0f}" y="{BOTTOM + 32}" text-anchor="middle">'
               f"{n} {'run' if n == 1 else 'runs'}, oldest left</text>")
    offset = 0
    for number, stretch in enumerate(trend.stretches):
        if number:
            x = _px(x_of(offset - 0.5))
            out.append(f'<line class="version" x1="{x}" y1="{TOP}" x2="{x}" y2="{BOTTOM}" stroke="#8a939c" '
                       f'stroke-dasharray="3 3"><title>set version changed: '
                       f"{_text(stretch.points[0].comparable)}</title></line>")
        out += _stretch_marks(trend, stretch, offset, x_of, y_of)
        offset += len(stretch.points)
    pixels = " ".join(f"{_px(x_of(i))},{_px(y_of(v))}" for i, v in enumerate(values))
    data = " ".join(f"{i},{_exact(v)}" for i, v in enumerate(values))
    out.append(f'<polyline class="trend" fill="none" stroke="{SERIES_COLOURS[1]}" stroke-width="1.4" '
               f'points="{pixels}" data-points="{data}"><title>{_text(trend.key.label())}: {n} runs</title></polyline>')
    out.append("</svg>")
    return "\n".join(out)


def _stretch_marks(trend: Trend, stretch, offset: int, x_of, y_of) -> list[str]:
    """One stretch's changes (a shaded range with its size), levels and outliers, at run `offset`."""
    out = []
    analysis = stretch.analysis
    bounds = [0]
    for change in analysis.changes:
        first, last = offset + change.last_before, offset + change.first_after
        colour = WORSE if change.size < 0 else BETTER
        out.append(f'<rect class="change" x="{_px(x_of(first))}" y="{TOP}" width="{_px(x_of(last) - x_of(first))}" '
                   f'height="{BOTTOM - TOP}" fill="{colour}" fill-opacity="0.12" data-size="{_exact(change.size)}" '
                   f'data-first="{first}" data-last="{last}"><title>change {_text(trend.size_text(change.size))} in '
                   f"{_text(stretch.commit_range(change))}</title></rect>")
        middle = (x_of(first) + x_of(last)) / 2
        anchor = "end" if middle > RIGHT - 40 else "start" if middle < LEFT + 40 else "middle"
        out.append(f'<text x="{_px(middle)}" y="{TOP - 8}" text-anchor="{anchor}" fill="{colour}">'
                   f"{_text(trend.size_text(change.size))}</text>")
        bounds += [change.last_before + 1, change.first_after]
    bounds.append(len(stretch.points))
    for start, end in zip(bounds[::2], bounds[1::2]):  # the flat levels between changes
        if end > start:
            level = sum(p.value for p in stretch.points[start:end]) / (end - start)
            out.append(f'<line class="level" x1="{_px(x_of(offset + start))}" y1="{_px(y_of(level))}" '
                       f'x2="{_px(x_of(offset + end - 1))}" y2="{_px(y_of(level))}" stroke="{SERIES_COLOURS[0]}" '
                       f'stroke-width="3" stroke-opacity="0.7" data-value="{_exact(level)}"/>')
    for outlier in analysis.outliers:
        index = offset + outlier.index
        out.append(f'<circle class="outlier" cx="{_px(x_of(index))}" cy="{_px(y_of(outlier.value))}" r="5" '
                   f'fill="none" stroke="{WORSE}" stroke-width="1.5" data-index="{index}" '
                   f'data-value="{_exact(outlier.value)}"><title>outlier {_text(stretch.name(outlier.index))}: '
                   f"{_text(trend.size_text(outlier.size))}</title></circle>")
    return out

