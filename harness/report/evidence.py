"""How reports show the exposed-evidence figures (docs/sets.md, "What is measured"): console and
Markdown rows, the HTML table and the window a failing query got, spans highlighted by label.
Sets without evidence show nothing here, so their reports are unchanged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.measured import EvidenceFigure
from harness.records import QueryResult, SetResult
from harness.report.escape import markdown_text
from harness.report.html_kit import _text

# (visible-excerpt name, whole-document name), in the order every table shows them.
PAIRS = (("answer_hit@10", "full_answer_hit@10"), ("ku@1", "full_ku@1"),
         ("stale_before_current", "full_stale_before_current"),
         ("mixed_before_current", "full_mixed_before_current"))
CANONICAL = ("canonical_hit@10", "canonical_mrr")
LABEL_COLOURS = {"current": "#c8ecd0", "stale": "#f7c9c5", "mixed": "#f8e3a8", "neither": "#e3e6ea",
                 "unjudgeable": "#d9d2f0"}
MAX_WINDOWS_SHOWN = 20  # failing queries whose window the HTML shows, per set


def overall(result: SetResult) -> Mapping[str, EvidenceFigure] | None:
    """The set's overall evidence figures by name, or None for a set without evidence."""
    return result.aggregates.overall.evidence if result.aggregates.has_evidence else None


def figure(values: EvidenceFigure | None) -> str:
    """`0.412 (n=50)`, `- (n=0)` when nothing was judged; nulls are counted apart."""
    if values is None:
        return "-"
    text = f"{values.mean:.3f}" if values.mean is not None else "-"
    null = f", {values.null} null" if values.null else ""
    return f"{text} (n={values.judged}{null})"


def text_lines(result: SetResult) -> list[str]:
    """Console lines: each figure for the visible windows beside the whole documents."""
    summary = overall(result)
    if summary is None:
        return []
    width = max(len(name) for name, _ in PAIRS) + 2
    return (["evidence (n judged; null: unjudgeable or nothing to judge, left out of means)",
             f"{'':<{width}}{'window':>24}{'whole document':>24}"]
            + [f"{visible:<{width}}{figure(summary.get(visible)):>24}{figure(summary.get(full)):>24}"
               for visible, full in PAIRS]
            + [f"{name:<{width}}{figure(summary.get(name)):>24}" for name in CANONICAL])


def markdown_lines(sets: Sequence[SetResult]) -> list[str]:
    """A Markdown table of the evidence figures of every set that has them (empty when none does)."""
    rows = [(result.name, summary) for result in sets if (summary := overall(result)) is not None]
    if not rows:
        return []
    header = [name for pair in PAIRS for name in pair] + list(CANONICAL)
    lines = ["", "Exposed evidence (window / whole document; n judged; null: unjudgeable or nothing to judge, left out of means):", "",
             "| set | " + " | ".join(header) + " |", "|---|" + "---:|" * len(header)]
    for name, summary in rows:
        lines.append(f"| {markdown_text(name)} | " + " | ".join(figure(summary.get(metric)) for metric in header) + " |")
    return lines


def html_blocks(result: SetResult) -> list[str]:
    """The evidence table and, for queries whose first window missed current evidence, that window.

    Text is escaped as the whole page escapes it (html_kit: characters XML cannot carry replaced too).
    """
    summary = overall(result)
    if summary is None:
        return []
    out = ["<h3>exposed evidence</h3>",
           '<table class="evidence"><tr><th>metric</th><th>window</th><th>whole document</th></tr>']
    for visible, full in PAIRS:
        out.append(f'<tr><td>{_text(visible)}</td><td class="num">{_text(figure(summary.get(visible)))}</td>'
                   f'<td class="num">{_text(figure(summary.get(full)))}</td></tr>')
    for name in CANONICAL:
        out.append(f'<tr><td>{_text(name)}</td><td class="num">{_text(figure(summary.get(name)))}</td><td></td></tr>')
    out.append("</table>")
    missed = [q for q in result.queries if q.window is not None]
    out.append(f"<h3>first windows without current evidence ({len(missed)})</h3>")
    legend = " ".join(f'<mark style="background:{colour}">{_text(label)}</mark>' for label, colour in LABEL_COLOURS.items())
    out.append(f"<p>spans: {legend}</p>")
    out += [window_html(query) for query in missed[:MAX_WINDOWS_SHOWN]]
    if len(missed) > MAX_WINDOWS_SHOWN:
        out.append(f"<p>... and {len(missed) - MAX_WINDOWS_SHOWN} more (in the JSON report)</p>")
    return out


def window_html(query: QueryResult) -> str:
    """One query's first window, its reviewed spans marked by label (overlaps: split at boundaries)."""
    window = query.window or {}
    text = str(window.get("text", ""))
    marked = window.get("spans")
    spans = [(int(s[0]), int(s[1]), str(s[2])) for s in marked] if isinstance(marked, list) else []
    ku = (query.evidence or {}).get("ku@1")
    head = (f'<div class="window" data-qid="{_text(query.qid)}"><p><b>{_text(query.qid)}</b> '
            f'{_text(query.query)} &mdash; rank 1 <span class="ids">{_text(window.get("doc", ""))}</span> '
            f'characters {_text(window.get("start"))}-{_text(window.get("end"))}, ku@1 '
            f'{_text("null" if ku is None else f"{ku:g}")}</p>')
    return head + f'<pre style="white-space: pre-wrap">{_marked(text, spans)}</pre></div>'


def _marked(text: str, spans: Sequence[tuple[int, int, str]]) -> str:
    """`text` escaped, each span wrapped in <mark data-label=...>; overlapping spans are split at
    boundaries so the markup stays well nested."""
    cuts = sorted({0, len(text), *(p for s in spans for p in s[:2] if 0 <= p <= len(text))})
    pieces = []
    for start, end in zip(cuts, cuts[1:]):
        labels = [label for s_start, s_end, label in spans if s_start <= start and end <= s_end]
        piece = _text(text[start:end])
        if labels:
            label = labels[-1]
            piece = (f'<mark data-label="{_text(" ".join(labels))}" '
                     f'style="background:{LABEL_COLOURS.get(label, "#eee")}">{piece}</mark>')
        pieces.append(piece)
    return "".join(pieces)
