"""HTML reports: well-formed SVG charts that carry the report's numbers, escaped text, nothing external."""

import dataclasses
import html
import json
import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from harness.measured import ScopeNumbers
from harness.commands.cli import main
from harness.report.views import load_run
from harness.scoring.compare import compare
from harness.report.document import Report
from harness.report.reading import read_document, read_report, report_from_json
from harness.report.html import render_run_html
from harness.report.html_compare import render_comparison_html
from tests.conftest import SCRIPTED_ADAPTER, TINY_SET

# Query text and a category name that would break HTML or XML if written raw; \x01 is not allowed
# in XML 1.0 at all, so it must be replaced, not escaped.
HOSTILE_QUERY = "</title><script>alert(\"x\")</script> & <b>'q'</b> \x01 ]]>"
HOSTILE_CATEGORY = "b </text><&\"'>"
VOID_ELEMENTS = {"meta", "br", "hr", "img", "input", "link", "col", "wbr"}
EXTERNAL_MARKERS = ("http:", "https:", "//", "src=", "@import", "url(")


# --- helpers: a strict structural parse and table extraction -------------------------------------

class StrictPage(HTMLParser):
    """Checks that every tag is closed in order; collects attributes, tables by class and all text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.tags, self.text = [], [], []
        self.tables, self._table, self._row, self._cell = {}, None, None, None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in VOID_ELEMENTS:
            return
        self.stack.append(tag)
        if tag == "table":
            self._table = self.tables.setdefault(dict(attrs).get("class", ""), [])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_startendtag(self, tag, attrs):  # <line .../> inside SVG
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]} at {self.getpos()}"
        self.stack.pop()
        if tag in ("td", "th") and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._table is not None:
            self._table.append(self._row)

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse_page(page: str) -> StrictPage:
    parser = StrictPage()
    parser.feed(page)
    parser.close()
    assert parser.stack == [], f"unclosed tags: {parser.stack}"
    return parser


def svgs(page: str) -> list[ET.Element]:
    """Every <svg> element, each parsed as XML: a parse error fails the test."""
    found = re.findall(r"<svg\b.*?</svg>", page, re.S)
    assert len(found) == page.count("<svg")
    return [ET.fromstring(chunk) for chunk in found]


def bar_values(svg: ET.Element) -> dict[tuple[str, str], float]:
    return {(rect.get("data-group"), rect.get("data-series")): float(rect.get("data-value"))
            for rect in svg.iter("rect") if "bar" in rect.get("class", "").split()}


def markers(svg: ET.Element) -> dict[str, float]:
    return {line.get("data-marker"): float(line.get("data-value"))
            for line in svg.iter("line") if line.get("data-marker")}


def cdf_points(svg: ET.Element) -> list[tuple[float, float]]:
    (curve,) = [p for p in svg.iter("polyline") if p.get("class") == "cdf"]
    return [tuple(float(v) for v in pair.split(",")) for pair in curve.get("data-points").split()]


def charts(page: str, kind: str) -> list[ET.Element]:
    return [svg for svg in svgs(page) if kind in svg.get("class", "").split()]


def assert_self_contained(page: str) -> None:
    for marker in EXTERNAL_MARKERS:
        assert marker not in page, marker
    parsed = parse_page(page)
    assert not [tag for tag, _ in parsed.tags if tag in ("script", "link", "img", "iframe", "object", "embed")]
    for tag, attrs in parsed.tags:
        assert "src" not in attrs and "xlink:href" not in attrs, tag
        assert attrs.get("href", "#").startswith("#"), (tag, attrs)


# --- real runs of the CLI on a copy of the tiny set ----------------------------------------------

def tiny_with_hostile_text(folder):
    """The tiny set with tiny-03's query text and category 'b' replaced by hostile strings (not pinned)."""
    rows = [json.loads(line) for line in (TINY_SET / "queries.jsonl").read_text().splitlines()]
    for row in rows:
        if row["qid"] == "tiny-03":
            row["query"] = HOSTILE_QUERY
        if row["category"] == "b":
            row["category"] = HOSTILE_CATEGORY
    folder.mkdir(parents=True)
    for name in ("set.json", "corpus.jsonl"):
        (folder / name).write_text((TINY_SET / name).read_text())
    (folder / "queries.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return {row["qid"]: row["query"] for row in rows}, {row["qid"]: list(row["relevant"]) for row in rows}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Base run (tiny-02 misses, recorded as the baseline), then a gated current run (tiny-01 and
    tiny-03 miss, tiny-02 now found). Also a run that crashes after 3 answers and one after 0."""
    root = tmp_path_factory.mktemp("html")
    set_dir = root / "sets" / "tiny"
    texts, relevant = tiny_with_hostile_text(set_dir)
    good = {texts[qid]: ids for qid, ids in relevant.items()}
    budgets = root / "budgets.json"
    budgets.write_text(json.dumps({"format": 1, "default_p95_ms": 5000}))

    def run(name, answers, *extra, **env):
        answers_path = root / f"{name}.answers.json"
        answers_path.write_text(json.dumps(answers))
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SCRIPTED_ANSWERS", str(answers_path))
            for key, value in env.items():
                patch.setenv(key, value)
            code = main(["--set", str(set_dir), "--out", str(root / f"{name}.json"), "--budgets", str(budgets),
                         "--baseline", str(root / "baseline.json"), "--quiet", *extra,
                         "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)])
        return code, root / f"{name}.json"

    base_code, base_path = run("base", {**good, texts["tiny-02"]: ["doc-03"]}, "--update-baseline")
    current_code, current_path = run("current", {**good, texts["tiny-01"]: ["doc-02"], texts["tiny-03"]: []})
    partial_code, partial_path = run("partial", good, "--no-gate", SCRIPTED_CRASH_AFTER="3")
    empty_code, empty_path = run("empty", good, "--no-gate", SCRIPTED_CRASH_AFTER="0")
    assert (base_code, current_code, partial_code, empty_code) == (0, 1, 3, 3)
    baseline = json.loads((root / "baseline.json").read_text())
    return {"root": root, "base_path": base_path, "current_path": current_path,
            "base": read_report(base_path), "current": read_report(current_path),
            "current_json": json.loads(current_path.read_text()),
            "partial": read_report(partial_path), "empty": read_report(empty_path),
            "baseline_sets": baseline["sets"]}


def ungated(report):
    """The report as a run without a baseline writes it: no gates, no flips."""
    return dataclasses.replace(report, gates=(), flips=None)


@pytest.fixture(scope="module")
def run_page(runs):
    return render_run_html(runs["current"])


def test_run_page_parses_and_every_svg_is_well_formed_xml(run_page):
    parsed = parse_page(run_page)
    assert run_page.startswith("<!DOCTYPE html>")
    assert ("meta", {"charset": "utf-8"}) in parsed.tags
    kinds = sorted(svg.get("class") for svg in svgs(run_page))
    assert kinds == ["chart latency-cdf", "chart recall-bars"]  # one set: one chart of each
    assert_self_contained(run_page)


def test_recall_bars_equal_the_report_and_the_baseline(runs, run_page):
    (chart,) = charts(run_page, "recall-bars")
    values = bar_values(chart)
    current = runs["current_json"]["sets"][0]["aggregates"]
    baseline = runs["baseline_sets"]["tiny"]["aggregates"]
    expected = {("overall", "current"): current["overall"]["recall@10"],
                ("overall", "baseline"): baseline["overall"]["recall@10"]}
    for category in current["category"]:
        expected[(category, "current")] = current["category"][category]["recall@10"]
        expected[(category, "baseline")] = baseline["category"][category]["recall@10"]
    assert values == expected  # exact: data-value is repr of the float
    # By hand. Scored: a = tiny-01, 02, 05; b = tiny-03, 04 (tiny-06 xfail, tiny-07 measure-only).
    # Base misses tiny-02: a 2/3, b 1, overall 4/5. Current misses tiny-01 and tiny-03: a 2/3, b 1/2, overall 3/5.
    assert values == pytest.approx({("overall", "baseline"): 0.8, ("overall", "current"): 0.6,
                                    ("a", "baseline"): 2 / 3, ("a", "current"): 2 / 3,
                                    (HOSTILE_CATEGORY, "baseline"): 1.0, (HOSTILE_CATEGORY, "current"): 0.5})
    # A 50-point drop is marked as a regression beside the bar.
    assert "1.000" not in "".join(t.text or "" for t in chart.iter("text") if t.get("fill"))
    assert any((t.text or "").startswith("0.500 (\u221250.0 pts)") and t.get("fill") for t in chart.iter("text"))


def test_latency_cdf_and_markers_equal_the_report(runs, run_page):
    (chart,) = charts(run_page, "latency-cdf")
    set_report = runs["current_json"]["sets"][0]
    summary = set_report["latency_ms"]
    assert markers(chart) == {"p50": summary["p50"], "p95": summary["p95"], "budget": 5000.0}  # the run's budgets
    latencies = sorted(q["latency_ms"] for q in set_report["queries"])
    points = cdf_points(chart)
    assert points == [(ms, rank / 7) for rank, ms in enumerate(latencies, start=1)]  # 7 answered queries
    assert points[-1] == (max(latencies), 1.0)
    assert chart.get("data-n") == "7"
    # The summary's max is of unrounded latencies; per-query rows are rounded to 4 decimals.
    assert points[-1][0] == pytest.approx(summary["max"], abs=1e-4)


def test_the_budget_drawn_is_the_one_the_latency_gate_held_the_run_to(runs):
    (latency,) = [g for g in runs["current"].gates if g.gate == "latency"]
    held = dataclasses.replace(runs["current"], gates=(dataclasses.replace(latency, limit=123.5),))
    assert markers(charts(render_run_html(held), "latency-cdf")[0])["budget"] == 123.5
    assert "budget" not in markers(charts(render_run_html(ungated(runs["current"])), "latency-cdf")[0])


def test_flips_list_losses_first_then_gains_with_query_text(runs, run_page):
    rows = parse_page(run_page).tables["flips"]
    assert rows[0] == ["qid", "change", "lost", "gained", "returned now", "counts", "query"]
    # By hand: tiny-01 lost doc-01 (doc-02 came back instead) and tiny-03 lost doc-03 (nothing came
    # back) now; tiny-02 found doc-02 again. All three are scored queries.
    hostile_as_shown = HOSTILE_QUERY.replace("\x01", "\ufffd")
    assert rows[1:] == [["tiny-01", "lost", "doc-01", "", "doc-02", "scored", "how is the config file parsed"],
                        ["tiny-03", "lost", "doc-03", "", "nothing", "scored", hostile_as_shown],
                        ["tiny-02", "gained", "", "doc-02", "doc-02", "scored", "retry backoff for failed requests"]]


def test_gates_and_failing_queries_are_listed(run_page):
    tables = parse_page(run_page).tables
    failed = [row for row in tables["gates"][1:] if row[0] == "FAIL"]
    # failures sorted before passes; each row with the numbers it decided on. By hand, of the 5 scored
    # queries the baseline found 4 (tiny-02 missed) and the run finds 3 (tiny-02 found, tiny-01 and -03 lost)
    assert failed[0][:7] == ["FAIL", "tiny", "overall", "recall@10", "0.800", "0.600", "-20.0 pts"]
    assert "recall@10 dropped 20.00 points" in failed[0][7]
    # tiny-01 and tiny-03 miss; tiny-06 is marked xfail but answered right, so it is an xpass (listed last).
    assert [row[:2] for row in tables["queries"][1:]] == [
        ["tiny-01", "fail"], ["tiny-03", "fail"], ["tiny-06", "xpass"]]


def test_hostile_text_is_escaped_everywhere(run_page):
    assert "<script" not in run_page and HOSTILE_CATEGORY not in run_page and "\x01" not in run_page
    assert html.escape(HOSTILE_QUERY.replace("\x01", "\ufffd"), quote=True) in run_page
    text = "".join(parse_page(run_page).text)
    assert HOSTILE_QUERY.replace("\x01", "\ufffd") in text
    (chart,) = charts(run_page, "recall-bars")
    labels = {title.text for title in chart.iter("title")}
    assert HOSTILE_CATEGORY in labels  # the label's full name, round-tripped through XML escaping


def test_without_a_baseline_only_the_current_run_is_drawn(runs):
    page = render_run_html(ungated(runs["current"]))
    values = bar_values(charts(page, "recall-bars")[0])
    assert {series for _, series in values} == {"current"}
    assert values[("overall", "current")] == runs["current_json"]["sets"][0]["aggregates"]["overall"]["recall@10"]
    assert "flips" not in parse_page(page).tables
    assert "No baseline for this set (the run was not gated)." in page
    assert_self_contained(page)


def test_a_category_only_in_the_baseline_shows_as_missing(runs):
    report = runs["current"]
    overall = next(g for g in report.gates if g.gate == "recall" and g.category is None)
    gone = dataclasses.replace(overall, category="gone", baseline=0.25, current=None)
    page = render_run_html(dataclasses.replace(report, gates=report.gates + (gone,)))
    (chart,) = charts(page, "recall-bars")
    assert bar_values(chart)[("gone", "baseline")] == 0.25
    assert ("gone", "current") not in bar_values(chart)
    assert [t.text for t in chart.iter("text") if t.get("data-group") == "gone"] == ["current: missing"]


def test_incomplete_runs_render(runs):
    partial = render_run_html(runs["partial"])
    assert "INCOMPLETE (3 of 7 answered)" in partial
    assert "INCOMPLETE: the backend failed after 3 of 7 queries; no gate was checked (exit 3)" in partial
    points = cdf_points(charts(partial, "latency-cdf")[0])
    assert [fraction for _, fraction in points] == [1 / 3, 2 / 3, 1.0]  # crashed after 3 answers
    empty = render_run_html(runs["empty"])
    assert charts(empty, "latency-cdf") == []
    assert "No latency measured" in empty
    for page in (partial, empty):
        svgs(page)
        assert_self_contained(page)


# --- constructed reports: hand-checked numbers and characters XML cannot carry ------------------

def constructed_report(latencies, query="plain", budget_ms=None):
    queries = [{"qid": f"q{i}", "query": query, "category": "c", "split": "development", "group": None,
                "ids": [], "scores": None, "latency_ms": ms, "metrics": {"recall@10": 0.0}, "found": [],
                "contracts": [], "outcome": "fail", "scored": True} for i, ms in enumerate(latencies, start=1)]
    gates = [] if budget_ms is None else [
        {"set": "s", "gate": "latency", "passed": 8.0 <= budget_ms, "message": "p95", "metric": "p95",
         "current": 8.0, "limit": budget_ms, "unit": "ms"}]
    return {"report_format": 2, "complete": True, "error": None, "gates": gates, "exit_code": 0,
            "provenance": {"harness_version": "test", "backend": {"label": "x", "argv": ["x"]}},
            "sets": [{"name": "s", "kind": "s", "revision": 1, "corpus_hash": "h", "k": 10,
                      "query_count": len(queries), "complete": True, "queries": queries,
                      "aggregates": {"overall": {"n": len(queries), "recall@10": 0.0},
                                     "category": {"c": {"n": len(queries), "recall@10": 0.0}}, "split": {}},
                      "latency_ms": {"n": len(queries), "p50": 2.0, "p95": 8.0, "max": 8.0}}]}


def test_cdf_by_hand():
    page = render_run_html(read_document(constructed_report([8.0, 1.0, 4.0, 2.0], budget_ms=5.0)))
    (chart,) = charts(page, "latency-cdf")
    # Sorted 1, 2, 4, 8: each step adds 1/4. p50 = rank ceil(0.5*4)=2 -> 2 ms; p95 = rank ceil(3.8)=4 -> 8 ms.
    assert cdf_points(chart) == [(1.0, 0.25), (2.0, 0.5), (4.0, 0.75), (8.0, 1.0)]
    assert markers(chart) == {"p50": 2.0, "p95": 8.0, "budget": 5.0}
    assert "p95 over the budget of 5.00 ms" in page
    # The log axis spans whole decades around every value and marker: 1 ms to 10 ms.
    assert [t.text for t in chart.iter("text") if t.get("text-anchor") == "middle"][:2] == ["1", "10"]


def test_zero_latency_control_characters_and_lone_surrogates_stay_well_formed():
    nasty = "a\x00b\x0bc\ud800d\ufffee & <"
    # A report read from JSON refuses lone surrogates; one built in memory (a Python caller's) may hold them.
    report = read_document(constructed_report([0.0, 3.0]))
    result = report.sets[0]
    result = dataclasses.replace(result, aggregates=dataclasses.replace(
                                     result.aggregates, category={nasty: ScopeNumbers(2, {"recall@10": 0.5})}),
                                 queries=tuple(dataclasses.replace(q, query=nasty) for q in result.queries))
    page = render_run_html(dataclasses.replace(report, sets=(result,)))
    page.encode("utf-8")  # a lone surrogate would raise here
    (bars,) = charts(page, "recall-bars")
    assert bar_values(bars)[("a\ufffdb\ufffdc\ufffdd\ufffde & <", "current")] == 0.5
    assert cdf_points(charts(page, "latency-cdf")[0])[0] == (0.0, 0.5)


# --- comparison page ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def comparison(runs):
    return compare(load_run(runs["base_path"]), load_run(runs["current_path"]), seed=3, resamples=300)


def test_comparison_bars_scopes_and_flips(comparison):
    page = render_comparison_html(comparison)
    assert_self_contained(page)
    (chart,) = charts(page, "recall-bars")
    values = bar_values(chart)
    expected = {}
    for scope in comparison.scopes:
        if scope.scope == "overall" or scope.scope.startswith("category:"):
            label = scope.scope.removeprefix("category:")
            expected[(label, "base")] = scope.base["recall@10"]
            expected[(label, "candidate")] = scope.candidate["recall@10"]
    assert values == expected
    # By hand, as in the run test: base 0.8 / a 2/3 / b 1; candidate 0.6 / a 2/3 / b 1/2.
    assert values == pytest.approx({("overall", "base"): 0.8, ("overall", "candidate"): 0.6,
                                    ("a", "base"): 2 / 3, ("a", "candidate"): 2 / 3,
                                    (HOSTILE_CATEGORY, "base"): 1.0, (HOSTILE_CATEGORY, "candidate"): 0.5})
    parsed = parse_page(page)
    scope_rows = parsed.tables["scopes"][1:]
    assert [row[0] for row in scope_rows] == [s.scope for s in comparison.scopes]
    tests = [tag_attrs for tag, tag_attrs in parsed.tags if tag == "span" and "data-p-holm" in tag_attrs]
    assert len(tests) == sum(len(s.tests) for s in comparison.scopes)
    shown = {(attrs["data-metric"], float(attrs["data-ci-low"]), float(attrs["data-ci-high"]),
              float(attrs["data-p"]), float(attrs["data-p-holm"]) if attrs["data-p-holm"] else None) for attrs in tests}
    # Holm covers only the overall rows (the headline); categories and splits carry no adjusted p
    assert shown == {(m, t.ci_low, t.ci_high, t.p_value, s.adjusted_p[m] if s.scope == "overall" else None)
                     for s in comparison.scopes for m, t in s.tests.items()}
    assert page.count("unadjusted (exploratory)") == sum(len(s.tests) for s in comparison.scopes
                                                         if s.scope != "overall")
    assert [row[:4] for row in parsed.tables["flips"][1:]] == [
        ["tiny-01", "lost", "doc-01", ""], ["tiny-03", "lost", "doc-03", ""], ["tiny-02", "gained", "", "doc-02"]]
    assert "NOT COMPARABLE" not in page


def test_comparison_mismatch_is_labelled(comparison):
    page = render_comparison_html(dataclasses.replace(comparison, mismatches=["set tiny: revision 1 vs <2>"]))
    assert "NOT COMPARABLE" in page and "revision 1 vs &lt;2&gt;" in page
    svgs(page)


def test_compare_command_writes_the_page(runs, tmp_path, capsys):
    out = tmp_path / "compare.html"
    code = main(["compare", str(runs["base_path"]), str(runs["current_path"]), "--resamples", "50",
                 "--html", str(out)])
    capsys.readouterr()
    assert code == 0
    page = out.read_text(encoding="utf-8")
    assert_self_contained(page)
    assert len(charts(page, "recall-bars")) == 1


# --- labels, links and numbers a reviewer relies on (in-memory reports) ------------------------

def test_an_xfail_query_that_flips_is_labelled_and_failures_link_to_their_rows():
    from tests.output_reports import gated_with_baseline
    from tests.reports import CURRENT_ANSWERS, gated_report
    # tiny-06 is marked xfail; answered right now it gains doc-06 against the baseline (which missed it)
    answers = dict(CURRENT_ANSWERS, **{"tiny-06": (("doc-06",), 6.0)})
    page = render_run_html(gated_report(answers))
    rows = parse_page(page).tables["flips"][1:]
    assert [row[:2] + row[4:6] for row in rows] == [["tiny-01", "lost", "doc-09", "scored"],
                                                    ["tiny-06", "gained", "doc-06", "xfail, not scored"]]
    # every failed gate naming queries links to a row that exists on the page
    failing = render_run_html(gated_with_baseline())
    targets = re.findall(r'<a class="qid" href="#([^"]+)">', failing)
    assert targets == ["q-0-tiny-01", "q-0-tiny-01", "q-0-tiny-04"]  # recall overall, recall a, contract
    for target in set(targets):
        assert failing.count(f'id="{target}"') == 1
    # the header names the baseline file and when and for whom it was recorded
    assert "<dt>baseline</dt><dd>baselines/current.json</dd>" in failing
    assert "<dt>recorded</dt><dd>2026-11-30T09:15:00+00:00 for bm25 at commit 1a2b3c4d5e6f</dd>" in failing
    assert "<dt>backend</dt><dd>bm25 (bm25 1)</dd>" in failing


def test_a_crash_shows_its_stderr_tail_preformatted():
    from tests.output_reports import crashed_with_tail
    page = render_run_html(crashed_with_tail())
    (tail,) = re.findall(r'<pre class="stderr">(.*?)</pre>', page, re.S)
    assert tail.splitlines()[:2] == ["adapter stderr (last lines):", "  | Traceback (most recent call last):"]
    assert '<p class="warn">Error: query tiny-04: adapter exited with status 7' in page


def test_numbers_never_show_negative_zero():
    from harness.report import html_kit as html_module  # the page kit formats numbers
    assert html_module._signed(-1e-12) == "0.000" and html_module._signed(-0.0) == "0.000"
    assert html_module._signed(-0.0004) == "0.000" and html_module._signed(-0.0006) == "\u22120.001"
    assert html_module._fixed(-0.0) == "0.000" and html_module._fixed(-1e-9) == "0.000"


def test_comparison_page_has_a_verdict_and_latency(runs, comparison):
    page = render_comparison_html(comparison, load_run(runs["base_path"]), load_run(runs["current_path"]))
    # base 0.8 -> candidate 0.6 overall: a 20-point drop over 5 queries; not significant after Holm
    # at 300 resamples, and its 90% CI reaches far below -2.0 points: the set cannot tell (amber, not red)
    assert comparison.verdict() == "INCONCLUSIVE"
    assert "INCONCLUSIVE: worst tiny overall " in page and "points (inconclusive, Holm p" in page
    assert '<p class="verdict warn">' in page and "<h1>retrieval-gate comparison: " in page
    assert "tiny overall recall@10: 0.800 -&gt; 0.600, -20.0 points" in page
    rows = parse_page(page).tables["latency"]
    assert rows[0] == ["run", "n", "p50 ms", "p95 ms", "max ms"] and [row[:2] for row in rows[1:]] == [
        ["base", "7"], ["candidate", "7"]]
    assert "-0.000" not in page and "\u22120.000" not in page
    assert_self_contained(page)
    # without the runs the page says there are no latencies rather than leaving the section out
    assert "No per-query latencies" in render_comparison_html(comparison)
