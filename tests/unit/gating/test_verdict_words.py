"""A verdict never contradicts itself, and every output carries the gate's own words.

The tiny report of tests/reports.py: tiny-01 loses its only relevant document, so the set's
recall@10 drops 20 points (1.0 -> 0.8 over 5 queries) and fails by the founding rule, while one
moved query of five cannot be told from noise (its sign-flip p is 2/2 = 1).
"""

import json

from harness.report.console import render_text
from harness.report.html import render_run_html
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown
from tests.reports import gated_report

NOISE = "cannot tell this drop from noise"


def overall_recall(report):
    return next(g for g in report.gates if g.gate == "recall" and g.category is None)


def test_a_failing_line_never_says_it_is_below_what_its_scope_can_detect():
    report = gated_report()
    for gate in report.gates:
        if not gate.passed:
            assert "below what this scope can detect" not in gate.message, gate.message
    overall = overall_recall(report)
    assert overall.status == "fail"
    # says plainly that the set cannot tell it from noise, why it fails anyway, and what to do
    assert f"this set {NOISE} (p=1.000" in overall.message
    assert "the founding rule fails any set-level drop beyond the limit, so treat it as unconfirmed" in overall.message


def test_every_output_carries_the_same_words():
    report = gated_report()
    words = overall_recall(report).message.split("; this set ", 1)[1].split(" (p=")[0]
    assert words == NOISE
    outputs = {"terminal": render_text(report), "markdown": render_markdown(report), "html": render_run_html(report),
               "junit": render_junit(report), "json": json.dumps(json.loads(report.to_json()))}
    for name, text in outputs.items():
        assert NOISE in text, name


def test_a_shipped_set_names_the_companion_that_can_tell():
    import dataclasses

    from harness.gating.gates import check
    from tests.builders import set_result

    # memory loses 2 of 40 queries (-5 points, beyond the limit): two moved queries, sign-flip p = 2/2^2 = 0.5
    rows = [("a", 1, 1, 0)] * 2 + [("a", 1, 1, 1)] * 38
    base, now = (dataclasses.replace(set_result(rows, which), name="memory") for which in (2, 3))
    overall = next(g for g in check([now], {"memory": base.numbers()}, latency_gated=False)
                   if g.gate == "recall" and g.category is None)
    assert overall.status == "fail" and f"this set {NOISE} (p=0.500" in overall.message
    # differences: two -1s and 38 zeros, sd = sqrt(2 x (1 - 0.05)^2 + 38 x 0.05^2) / sqrt(39) = 0.2207;
    # the smallest m with m >= ((t[0.975; m-1] + t[0.8; m-1]) x 0.2207 / 0.05)^2 is 155 (scipy.stats.t.ppf; the
    # normal's z 1.95996 + 0.84162 = 2.80158 gives 153, a lower bound)
    assert "confirm it on memory-hard, the companion set that can tell or on about 155 queries" in overall.message
