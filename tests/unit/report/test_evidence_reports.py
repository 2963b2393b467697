"""Evidence in the reports (harness/report/evidence.py): console, Markdown, HTML windows, JSON both ways."""

from __future__ import annotations

from harness.records import EvidenceSpan, Query, QuerySet, Document
from harness.report import evidence as shown
from harness.scoring.evaluate import Answer, evaluate_set

TEXT = "Until 2024 the limit was 300. <b>Now</b> the limit is 500."
SPANS = (EvidenceSpan("page", 0, 29, TEXT[0:29], "stale", True),
         EvidenceSpan("page", 30, 58, TEXT[30:58], "current", True),
         EvidenceSpan("page", 20, 40, TEXT[20:40], "mixed", True))  # overlaps both


def _result(passage):
    query = Query(qid="q1", query="what is the limit", relevant={"page": 1}, category="c", split="development",
                  source="s", evidence=SPANS, canonical=("page",))
    query_set = QuerySet(name="ev", kind="ev", revision=1, description="", k=10, path="", queries=(query,),
                         documents=(Document("page", TEXT, "x"),), corpus_hash="h", corpus_source="jsonl")
    return evaluate_set(query_set, {"q1": Answer(("page",), None, 0.0, passages=(passage,))}, 10)


def test_the_window_a_failing_query_got_is_kept_with_its_spans_relative_to_it():
    result = _result((10, 45))
    row = result.queries[0]
    assert row.evidence["ku@1"] == 0.0  # the current span 30..58 is cut at 45
    # spans clipped to the window 10..45 and shifted by 10; sorted by start
    assert row.window == {"doc": "page", "start": 10, "end": 45, "text": TEXT[10:45],
                          "spans": [[0, 19, "stale"], [10, 30, "mixed"], [20, 35, "current"]]}
    assert _result((30, 58)).queries[0].window is None  # current exposed: nothing to show


def test_html_marks_each_span_by_label_and_escapes_the_text():
    page = "\n".join(shown.html_blocks(_result((10, 45))))
    assert "&lt;b&gt;Now&lt;/b&gt;" in page and "<b>Now</b>" not in page
    # relative spans: stale 0..19, mixed 10..30, current 20..35 -> five pieces: 0-10 stale,
    # 10-19 stale+mixed, 19-20 mixed, 20-30 mixed+current, 30-35 current (the legend's marks aside)
    assert page.count("<mark data-label") == 5
    assert 'data-label="stale mixed"' in page and 'data-label="mixed current"' in page
    assert "ku@1 0" in page


def test_console_and_markdown_show_window_and_whole_document_side_by_side():
    result = _result((10, 45))
    lines = shown.text_lines(result)
    ku = next(line for line in lines if line.startswith("ku@1"))
    assert ku.split() == ["ku@1", "0.000", "(n=1)", "1.000", "(n=1)"]  # cut window 0, whole page 1
    table = "\n".join(shown.markdown_lines([result]))
    assert "| ev | 0.000 (n=1) | 1.000 (n=1) |" in table


def test_sets_without_evidence_show_nothing():
    query = Query(qid="q", query="x", relevant={"a": 1}, category="c", split="development", source="s")
    query_set = QuerySet(name="plain", kind="k", revision=1, description="", k=10, path="", queries=(query,),
                         documents=(Document("a", "t", "x"),), corpus_hash="h", corpus_source="jsonl")
    result = evaluate_set(query_set, {"q": Answer(("a",), None, 0.0)}, 10)
    assert shown.text_lines(result) == [] and shown.markdown_lines([result]) == [] and shown.html_blocks(result) == []
