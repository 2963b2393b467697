"""Every output shows the run's resource figures beside the baseline's, with how they were measured; the
report JSON carries both and reads back; a budget exceeded fails in every output's gate list."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.gating.baseline import Baseline, build_baseline
from harness.gating.budgets import Budgets
from harness.gating.gates import decide
from harness.measured import Resources
from harness.report.console import render_text
from harness.report.document import Report, exit_code_for
from harness.report.html import render_run_html as render_html
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown
from harness.report.reading import report_from_json
from tests.reports import BASE_ANSWERS, provenance, tiny_inputs, tiny_result

BASE = Resources(startup_seconds=1.5, peak_rss_mib=200.0, index_bytes=1_000_000)
NOW = Resources(startup_seconds=1.25, peak_rss_mib=512.5, index_bytes=1_048_576)  # +312.5 MiB: beyond +50 % and +64


def report(budgets: Budgets = Budgets({"tiny": 200.0})) -> Report:
    base_result = dataclasses.replace(tiny_result(BASE_ANSWERS), resources=BASE)
    baseline = Baseline.from_document(build_baseline([base_result], provenance().to_dict()), Path("b.json"))
    result = dataclasses.replace(tiny_result(BASE_ANSWERS), resources=NOW)
    decision = decide([result], dataclasses.replace(tiny_inputs(), baseline=baseline, budgets=budgets))
    return Report(provenance=provenance(), sets=(result,), gates=decision.gates,
                  exit_code=exit_code_for(None, decision.gates), flips=decision.flips,
                  baseline_latency=decision.baseline_latency, baseline_resources=decision.baseline_resources)


def test_the_console_shows_both_sides_and_the_memory_growth_warns():
    text = render_text(report())
    assert ("resources: start-up 1.25 s (baseline 1.50 s), peak RSS 512.5 MiB (baseline 200.0 MiB), index size "
            "1,048,576 bytes (baseline 1,000,000 bytes); the baseline's measured in another run") in text
    assert ("WARN memory-relative tiny peak RSS 512.5 MiB, baseline 200.0 MiB (+156 %; allowed: +50 % and +64.0 MiB); "
            "warning only (policy: resources.relative_fails)") in text


def test_markdown_html_and_junit_show_both_sides():
    gated = report()
    markdown = render_markdown(gated)
    assert "| tiny | peak RSS | 200.0 MiB | 512.5 MiB |" in markdown
    assert "| tiny | start-up | 1.50 s | 1.25 s |" in markdown
    assert "across runs and machines" in markdown
    html = render_html(gated)
    assert ('<tr><th>peak RSS</th><td data-label="baseline">200.0 MiB</td><td data-label="this run">512.5 MiB</td>'
            '</tr>') in html
    properties = {p.get("name"): p.get("value") for p in ET.fromstring(render_junit(gated)).iter("property")}
    assert properties["resources.index_bytes"] == "1,048,576 bytes"
    assert properties["baseline.resources.index_bytes"] == "1,000,000 bytes"


def test_a_budget_exceeded_fails_the_run_in_every_output():
    gated = report(Budgets({"tiny": 200.0}, resources={"peak_rss_mib": 500.0}))
    assert gated.exit_code == 1
    (failed,) = gated.failed_gates
    assert (failed.gate, failed.current, failed.limit) == ("memory", 512.5, 500.0)
    assert "FAIL memory      tiny peak RSS 512.5 MiB exceeds the budget of 500.0 MiB" in render_text(gated)
    assert "| tiny | peak RSS | 200.0 MiB | 512.5 MiB | +312.5 MiB | - | ❌ FAIL |" in render_markdown(gated)
    failures = [case.get("name") for case in ET.fromstring(render_junit(gated)).iter("testcase")
                if case.find("failure") is not None]
    assert failures == ["memory overall"]


def test_the_report_json_carries_both_sides_and_reads_back():
    gated = report()
    again = report_from_json(gated.to_json(), "r.json")
    assert again.sets[0].resources == NOW
    assert again.baseline_resources == {"tiny": BASE}
    assert again.to_json() == gated.to_json()


def test_a_report_without_resources_shows_none():
    plain = dataclasses.replace(report(), sets=(tiny_result(BASE_ANSWERS),), baseline_resources=None)
    assert "resources:" not in render_text(plain)
    assert "#### Resources" not in render_markdown(plain)
    assert "<h3>resources</h3>" not in render_html(plain)


def test_compare_shows_each_runs_resources_side_by_side():
    from harness.report.comparison import resource_lines
    from harness.report.views import report_view
    from harness.scoring.compare import compare

    base = dataclasses.replace(report(), sets=(dataclasses.replace(tiny_result(BASE_ANSWERS), resources=BASE),))
    pair = compare(report_view(base, "base.json"), report_view(report(), "candidate.json"), resamples=200)
    assert pair.resources == {"tiny": (BASE, NOW)}
    assert resource_lines(pair) == ["tiny resources (each run's own; across runs): start-up 1.50 s -> 1.25 s; "
                                    "peak RSS 200.0 MiB -> 512.5 MiB; index size 1,000,000 bytes -> 1,048,576 bytes"]
    assert pair.to_dict()["resources"] == {"tiny": {"base": BASE.to_dict(), "candidate": NOW.to_dict()}}
    plain = compare(report_view(dataclasses.replace(base, sets=(tiny_result(BASE_ANSWERS),)), "a.json"),
                    report_view(dataclasses.replace(base, sets=(tiny_result(BASE_ANSWERS),)), "b.json"), resamples=200)
    assert plain.resources == {} and "resources" not in plain.to_dict()
