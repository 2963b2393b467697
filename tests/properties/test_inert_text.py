"""Arbitrary text from outside stays inside its element in every output (hypothesis, seeded).

The same text is put in every place an adapter, a set, a baseline or a report read back can
write: the backend label, the banner's name, version and model, the baseline's path, backend,
date and commit, the run's condition, start and commit, a category name, every gate message,
query text, warnings, the error line and the stderr tail, a comparison's labels. Each renderer
must give the document it gives for a harmless text of the same length:
- console (plain and coloured) and comparison text: the same number of lines, and no control
  character but our own colour codes;
- Markdown (run and comparison), as GitHub renders it (cmark-gfm): the same element tree (an
  address GitHub links by itself, `a@b.co`, shows as written and is the one link allowed);
- JUnit (run and comparison): XML that parses to the same elements, each message the text
  as `xml_safe` keeps it;
- HTML (run and comparison): the same elements, counted by tag.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import xml.etree.ElementTree as ET
from collections import Counter

from hypothesis import HealthCheck, given, settings, strategies as st

from harness.fsutil import xml_safe
from harness.report import comparison as comparison_output
from harness.report.console import render_text
from harness.report.document import Report
from harness.report.escape import terminal_line
from harness.report.html import render_run_html
from harness.report.html_compare import render_comparison_html
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown
from harness.report.terminal import Style
from harness.report.verdict import backend_identity, error_parts
from harness.report.views import report_view
from harness.scoring.compare import compare_many
from tests.gfm import Element, assert_valid_gfm, parse_html, rendered
from tests.output_reports import gated_with_baseline as _gated_with_baseline
from tests.reports import BASE_ANSWERS, gated_report as _gated_report

SETTINGS = settings(deadline=None, max_examples=300, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# Pieces that open a construct somewhere, mixed with arbitrary characters.
PIECES = ["`", "```", "`````", "\n", "\r", "\r\n", "\t", " ", "\x1b[2J", "\x1b]0;title\x07", "\x1b[1A\x1b[2K", "\x9b",
          "\x85", "\x7f", "\x00", "\u2028", "\u202e", "<img src=x>", "<h3>", "</details>", "<!--", "![a](b.png)",
          "[a](http://b)", "[a]: http://b", "www.a.com", "http://a.bc", "HTTPS://a.bc", "ftp://a.b", "a@b.co",
          "#", "###", "|", "*", "**", "_", "__", "~~", "$", "$$", "&lt;", "&amp;", "&#60;", "\\", "\\`", ">",
          "-", "1.", "=", "[x]", ":smile:", "@org/team", "PASSED: 7 gates", "\u00e9", "\U0001f600", "\ufffd"]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), min_size=1, max_size=10).map("".join)
OUR_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


# Built once: a report is frozen, and building one (load, evaluate, gate) costs more than rendering it.
gated_with_baseline = functools.cache(_gated_with_baseline)
gated_report = functools.cache(lambda answers=None: _gated_report(answers))


def harmless(text: str) -> str:
    """A text of the same length (so labels cut and columns align alike) that opens nothing."""
    return "x" * len(text)


def with_text(report: Report, text: str) -> Report:
    """`report` with `text` in every place outside text reaches."""
    provenance = report.provenance
    provenance = dataclasses.replace(
        provenance, backend=dataclasses.replace(provenance.backend, label=text),
        adapter=dataclasses.replace(provenance.adapter, banner={"ready": True, "name": text, "version": text,
                                                                 "model": text}),
        condition=text, started=text, git_commit=text,
        extra={"baseline": {"path": text, "backend": text, "created": text, "git_commit": text}})
    category = "a" + text  # category "a", renamed (a prefix: the text alone may name another category)
    sets = []
    for result in report.sets:
        aggregates = dataclasses.replace(result.aggregates, category={
            (category if name == "a" else name): scope for name, scope in result.aggregates.category.items()})
        queries = tuple(dataclasses.replace(q, query=text) for q in result.queries)
        sets.append(dataclasses.replace(result, aggregates=aggregates, queries=queries))
    gates = tuple(dataclasses.replace(g, message=text, category=category if g.category == "a" else g.category)
                  for g in report.gates)
    return dataclasses.replace(report, provenance=provenance, sets=tuple(sets), gates=gates, warnings=(text,))


def crashed_with(text: str) -> Report:
    """A crash whose error line and stderr tail carry `text` (as the driver writes them, lines prefixed)."""
    tail = "\n".join(f"  | {line}" for line in text.split("\n"))
    report = dataclasses.replace(gated_with_baseline(), complete=False, gates=(), exit_code=3,
                                 error=f"query tiny-04: {text}\nadapter stderr (last lines):\n{tail}")
    return with_text(report, text)


def visible(text: str) -> str:
    """What a terminal shows: our colours removed; no other control may be left."""
    plain = OUR_COLOURS.sub("", text)
    assert not CONTROLS.search(plain), CONTROLS.findall(plain)
    return plain


@SETTINGS
@given(text=texts)
def test_console_text_adds_no_line_and_no_control(text):
    for report, benign in ((with_text(gated_with_baseline(), text), with_text(gated_with_baseline(), harmless(text))),
                           (crashed_with(text), crashed_with(harmless(text)))):
        for style in (Style(False), Style(True)):
            shown = visible(render_text(report, verbose=True, style=style, written=[("report", "r.json")]))
            expected = render_text(benign, verbose=True, style=style, written=[("report", "r.json")])
            assert shown.count("\n") == expected.count("\n")
        assert f"backend: {terminal_line(backend_identity(report.provenance))}" in shown


def without_address_links(element: Element) -> Element:
    """The tree with GitHub's own links of e-mail addresses (shown as written) replaced by their text."""
    def address_link(child: object) -> bool:
        if not isinstance(child, Element) or child.tag != "a":
            return False
        shown = child.text()
        return "@" in shown and child.attrs.get("href") in (f"mailto:{shown}", shown)

    return Element(element.tag, element.attrs, [
        child.text() if address_link(child) else without_address_links(child) if isinstance(child, Element) else child
        for child in element.children])


def gfm_shape(markdown: str) -> list:
    assert_valid_gfm(markdown)
    assert not CONTROLS.search(markdown.replace("\t", ""))
    return without_address_links(rendered(markdown)).shape()


@SETTINGS
@given(text=texts)
def test_markdown_keeps_the_text_in_its_element(text):
    report = with_text(gated_with_baseline(), text)
    markdown = render_markdown(report)
    assert gfm_shape(markdown) == gfm_shape(render_markdown(with_text(gated_with_baseline(), harmless(text))))
    backend = next(c for c in rendered(markdown).find_all("code"))
    assert backend.text() == terminal_line(backend_identity(report.provenance))  # the code span holds it whole
    crashed = render_markdown(crashed_with(text))
    assert gfm_shape(crashed) == gfm_shape(render_markdown(crashed_with(harmless(text))))
    fence = rendered(crashed).find_all("pre")[0].text()
    tail = error_parts(crashed_with(text).error)[1]
    assert fence.rstrip("\n").split("\n") == [terminal_line(line) for line in tail.split("\n")]


def xml_shape(document: str) -> list:
    def shape(element: ET.Element) -> list:
        return [element.tag, sorted(element.attrib), [shape(child) for child in element]]
    return shape(ET.fromstring(document))


@SETTINGS
@given(text=texts)
def test_junit_parses_to_the_same_elements_and_keeps_the_text(text):
    document = render_junit(with_text(gated_report(), text))
    assert not re.search("[\x1b\x7f-\x9f]", document)  # nothing a terminal printing a message would act on
    assert xml_shape(document) == xml_shape(render_junit(with_text(gated_report(), harmless(text))))
    failures = ET.fromstring(document).findall(".//failure")
    assert failures and all(f.get("message") == xml_safe(text) for f in failures)
    assert all((f.text or "") == xml_lines(xml_safe(text)) for f in failures)
    crashed = ET.fromstring(render_junit(crashed_with(text))).find(".//error")
    assert (crashed.text or "") == xml_lines(xml_safe(crashed_with(text).error or ""))


def xml_lines(text: str) -> str:
    """XML's own end-of-line handling: a parser reads a CR in element text as a line feed."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def html_tags(page: str) -> Counter:
    return Counter(element.tag for element in parse_html(page).walk())


@SETTINGS
@given(text=texts)
def test_html_has_the_same_elements(text):
    for build in (lambda t: with_text(gated_with_baseline(), t), crashed_with):
        assert html_tags(render_run_html(build(text))) == html_tags(render_run_html(build(harmless(text))))


def suite_with(text: str):
    """`compare` of a base report and a candidate whose label and query text are `text`."""
    base = report_view(_gated_report(BASE_ANSWERS), "base.json")
    candidate = with_text(gated_report(), text)
    view = report_view(candidate, text)
    return compare_many(base, [view], resamples=20), base, view


@settings(deadline=None, max_examples=40, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
def test_comparison_outputs_keep_the_text_in_its_element(text):
    suite, base, view = suite_with(text)
    benign, benign_base, benign_view = suite_with(harmless(text))
    shown = visible(comparison_output.render_text(suite))
    assert shown.count("\n") == comparison_output.render_text(benign).count("\n")
    assert gfm_shape(comparison_output.render_markdown(suite)) == gfm_shape(comparison_output.render_markdown(benign))
    assert xml_shape(comparison_output.render_junit(suite)) == xml_shape(comparison_output.render_junit(benign))
    assert (html_tags(render_comparison_html(suite, base, [view]))
            == html_tags(render_comparison_html(benign, benign_base, [benign_view])))
