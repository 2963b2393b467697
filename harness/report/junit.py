"""JUnit XML for CI systems: one test case per gate per set, one error case when the backend failed."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.fsutil import xml_safe
from harness.report.document import Report
from harness.records import SetResult
from harness.report.verdict import backend_identity, baseline_identity, resource_figures


def render_junit(report: Report) -> str:
    """A <testsuites> document; each set is a <testsuite>, each gate result a <testcase>."""
    root = ET.Element("testsuites", name="retrieval-gate")
    for result in report.sets:
        name = xml_safe(result.name)
        cases = [g for g in report.gates if g.set_name == name]
        suite = ET.SubElement(root, "testsuite", name=f"retrieval-gate.{name}", tests=str(max(len(cases), 1)),
                              failures=str(sum(not g.passed for g in cases)), errors="0", skipped="0")
        _properties(suite, result, report)
        if not report.complete:
            suite.set("errors", "1")
            case = ET.SubElement(suite, "testcase", classname=f"retrieval-gate.{name}", name="backend")
            message = xml_safe(report.error or "backend failed")
            # the attribute is one line; the element keeps the adapter's stderr tail as it was
            ET.SubElement(case, "error", message=message.partition("\n")[0]).text = message
            continue
        if not cases:
            suite.set("skipped", "1")
            case = ET.SubElement(suite, "testcase", classname=f"retrieval-gate.{name}", name="gates")
            ET.SubElement(case, "skipped", message="run without gating (--no-gate or --update-baseline)")
            continue
        for gate in cases:
            case = ET.SubElement(suite, "testcase", classname=f"retrieval-gate.{name}",
                                 name=xml_safe(f"{gate.gate} {gate.scope}"))
            if not gate.passed:
                message = xml_safe(gate.message)
                ET.SubElement(case, "failure", message=message, type=gate.gate).text = message
            else:
                ET.SubElement(case, "system-out").text = ("WARN: " if gate.status == "warn" else "") + xml_safe(gate.message)
    return junit_text(root)


def junit_text(root: ET.Element) -> str:
    """A <testsuites> document as text (a run's and `compare`'s): its totals summed over its suites, indented."""
    for total in ("tests", "failures", "errors"):
        root.set(total, str(sum(int(suite.get(total, "0")) for suite in root)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _properties(suite: ET.Element, result: SetResult, report: Report) -> None:
    """Who answered and what the suite was gated against, as JUnit <properties> a CI page can show, then the set's
    resource figures beside the baseline's: `resources.peak_rss_mib` and `baseline.resources.peak_rss_mib`."""
    properties = ET.SubElement(suite, "properties")
    values = [("backend", backend_identity(report.provenance))]
    values += [(f"baseline.{key}", value) for key, value in (baseline_identity(report.provenance) or {}).items()]
    for name, _, now, was in resource_figures(result, report):
        values += [(f"resources.{name}", now), (f"baseline.resources.{name}", was)]
    for name, value in values:
        ET.SubElement(properties, "property", name=name, value=xml_safe(value))
