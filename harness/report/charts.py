"""Inline SVG charts for the HTML pages: recall bars per category and the latency CDF, numbers kept exact.

Every chart carries its numbers in machine-readable form: each bar and marker line has a
`data-value` (Python `repr` of the float, so it parses back to the exact report value) and a
<title>; the latency CDF has `data-points` ("latency_ms,fraction" pairs, in data units).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from harness.gating.gates import FLOAT_SLACK
from harness.gating.policy import FOUNDING_METRIC, GatePolicy
from harness.report.html_kit import (BETTER, WORSE, AXIS, AXIS_COLOUR, BAR_HEIGHT, CHART_WIDTH, GRID, LABEL_WIDTH, LATENCY_FLOOR_MS, MARKER_COLOURS, SERIES_COLOURS, SVG_FONT, _clip, _exact, _ms, _px, _signed, _text)


def recall_bars_svg(title: str, groups: Sequence[tuple[str, Mapping[str, float | None]]],
                    series: tuple[str, str], *, metric: str = FOUNDING_METRIC,
                    drop_limit: float = GatePolicy().drop_limit) -> str:
    """Horizontal grouped bars of a [0, 1] metric (recall@10 unless said), one group per scope (overall, each category).

    `groups`: (label, {series name: value or None}); `series`: (first, second), e.g.
    ("baseline", "current"). A series absent from every group is left out of the legend; a value
    of None inside a drawn series is written as "missing". The second series' change against the
    first is printed beside it, red when it is a drop larger than `drop_limit` (the gate's).
    """
    drawn = [name for name in series if any(values.get(name) is not None for _, values in groups)]
    bar_step = BAR_HEIGHT + 2
    group_height = max(1, len(drawn)) * bar_step + 10
    top, left, plot_width = 34, LABEL_WIDTH + 10, CHART_WIDTH - LABEL_WIDTH - 150  # 140 for the notes
    plot_bottom = top + group_height * len(groups)
    out = [_svg_open("recall-bars", plot_bottom + 30, f'data-metric="{_text(metric)}"'),
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
    out.append(f'<text x="{CHART_WIDTH - 8}" y="18" text-anchor="end">{_text(metric)}</text>')
    for index, (label, values) in enumerate(groups):
        y0 = top + index * group_height
        out.append(f'<text x="{LABEL_WIDTH}" y="{_px(y0 + len(drawn) * bar_step / 2 + 4)}" text-anchor="end">'
                   f"<title>{_text(label)}</title>{_text(_clip(label))}</text>")
        for position, name in enumerate(drawn):
            out.extend(_bar(label, name, values, series, left, y0 + position * bar_step, plot_width, metric,
                            drop_limit))
    out.append("</svg>")
    return "\n".join(out)


def _bar(label: str, name: str, values: Mapping[str, float | None], series: tuple[str, str],
         left: float, y: float, plot_width: float, metric: str, drop_limit: float) -> list[str]:
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
        if -change > drop_limit + FLOAT_SLACK:
            colour = f' fill="{WORSE}"'
        elif change > FLOAT_SLACK:
            colour = f' fill="{BETTER}"'
    return [f'<rect class="bar" x="{left}" y="{_px(y)}" width="{_px(width)}" height="{BAR_HEIGHT}" '
            f'fill="{SERIES_COLOURS[series.index(name)]}" data-series="{_text(name)}" data-group="{_text(label)}" '
            f'data-value="{_exact(value)}"><title>{_text(label)}: {_text(name)} {_text(metric)} {value:.4f}'
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
    """A chart in its box, which it fills (html_kit.STYLE: width 100%, its viewBox scaled), so it never scrolls."""
    return f'<div class="chart-box">\n{svg}\n</div>'


def _svg_open(kind: str, height: float, data: str) -> str:
    """No xmlns: the HTML parser puts <svg> in the SVG namespace, and the page names no URL at all."""
    return (f'<svg class="chart {kind}" viewBox="0 0 {CHART_WIDTH} {height}" width="{CHART_WIDTH}" height="{height}" '
            f'role="img" {SVG_FONT} {data}>')


def _line(css: str, x1: float, y1: float, x2: float, y2: float, stroke: str) -> str:
    return f'<line class="{css}" x1="{_px(x1)}" y1="{_px(y1)}" x2="{_px(x2)}" y2="{_px(y2)}" {stroke}/>'
