"""The HTML page kit: escaping for HTML and XML alike, number formatting, tables, the stylesheet.

Every string that comes from a report goes through `_text`, so each page (and each <svg> in it)
is also well-formed XML; the charts (harness/report/charts.py) and the pages (html.py) share it.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Iterable, Sequence

# XML 1.0 cannot carry these code points even as references (C0 controls, lone surrogates,
# U+FFFE/U+FFFF); C1 controls are legal XML but HTML parse errors. All become U+FFFD.
_UNSAFE_CHARACTERS = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_DIGITS = re.compile(r"(\d+)")

CHART_WIDTH = 500  # viewBox units; a chart is drawn as wide as its box, up to CHART_MAX_PX
CHART_MAX_PX = 560  # on a desktop: 12-unit text at about 13 px; on a phone (366 px of box), about 9 px
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
SVG_FONT = 'font-family="system-ui, sans-serif" font-size="12"'

# Readable from a phone (390 px) to a desktop (1,400 px): charts scale to their box (viewBox, width
# 100%); wide tables scroll inside their own box (div.scroll), never the page; ids and CI cells
# never wrap mid-token; stderr wraps in its box.
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
svg.chart { width: 100%; max-width: CHART_MAX_PXpx; }
@media (max-width: 600px) {
  body { margin: .8em auto; padding: 0 .6em; }
  /* a phone: each gate is a card (status, set and gate on one line, the message below) */
  table.gates tr:first-child { display: none; }
  table.gates, table.gates tbody { display: block; }
  table.gates tr { display: grid; grid-template-columns: auto auto minmax(0, 1fr); border: 1px solid #d5d9de;
    margin-bottom: .4em; }
  table.gates td { border: 0; } table.gates td:nth-child(n+4) { grid-column: 1 / -1; }
  table.gates td:empty { display: none; }
  /* per-query tables (flips, queries that did not pass): each row a card, each cell named by its
     column (data-label), so nothing is cut off nor needs scrolling sideways */
  table.flips, table.queries, table.flips tbody, table.queries tbody { display: block; }
  table.flips tr:first-child, table.queries tr:first-child { display: none; }
  table.flips tr, table.queries tr { display: block; border: 1px solid #d5d9de; margin-bottom: .4em; }
  table.flips td, table.queries td { display: block; border: 0; padding: .1em .5em; overflow-wrap: anywhere; }
  table.flips td::before, table.queries td::before { content: attr(data-label) ": "; color: #5a636c; }
  table.flips td:empty, table.queries td:empty { display: none; }
}
""".replace("CHART_MAX_PX", str(CHART_MAX_PX))


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


def _table(headers: Sequence[str] | None, rows: Iterable[Sequence], css: str = "",
           row_ids: Iterable[str] = ()) -> str:
    """A table from already-escaped cell markup; a cell ("th", markup) is a row header, any other
    (css class, markup) pair a data cell with that class. With `headers`, each data cell names its
    column in `data-label` (a phone shows per-query tables as cards, labelled from it). `row_ids`:
    each row's element id in turn (a link target; "" or none left: no id)."""
    out = [f'<table class="{css}">' if css else "<table>"]
    if headers:
        out.append("<tr>" + "".join(f"<th>{_text(h)}</th>" for h in headers) + "</tr>")
    for row, row_id in itertools.zip_longest(rows, row_ids):
        cells = []
        for position, cell in enumerate(row):
            label = f' data-label="{_text(headers[position])}"' if headers and position < len(headers) else ""
            if isinstance(cell, tuple) and cell[0] == "th":
                cells.append(f"<th>{cell[1]}</th>")
            elif isinstance(cell, tuple):
                cells.append(f'<td class="{cell[0]}"{label}>{cell[1]}</td>')
            else:
                cells.append(f"<td{label}>{cell}</td>")
        out.append((f'<tr id="{row_id}">' if row_id else "<tr>") + "".join(cells) + "</tr>")
    out.append("</table>")
    return '<div class="scroll">\n' + "\n".join(out) + "\n</div>"


def _anchor(index: int, name: str, kind: str = "set") -> str:
    """An element id for the index-th set (or, kind "q", a query of it): only [A-Za-z0-9_-] survive;
    the index keeps ids unique."""
    return f"{kind}-{index}-" + re.sub(r"[^A-Za-z0-9_-]", "_", name)
