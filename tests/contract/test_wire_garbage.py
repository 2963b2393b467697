"""Adapter output that passes a lenient JSON parser but not the wire rules: real adapters, real CLI.

Each case must end with exit 3, one `harness: error:` line naming the query (or the banner)
and the field, a partial report that is strict JSON, and no adapter left running.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import TINY_SET
from tests.conftest import FIXTURES, REPO_ROOT as REPO
from tests.process_helpers import adapter_pid, alive

FAULTS = FIXTURES / "faults"
HARD_LIMIT_SECONDS = 60  # test-side: a harness that has not ended by then is hung

CASES = [
    ("surrogate-id", (), "'ids'[1] holds a lone surrogate escape"),
    ("surrogate-error", (), "'error' holds a lone surrogate escape"),
    ("big-score", (), "'scores'[0]: an integer of 400 digits is too large"),
    ("nan-score", (), "'scores'[0]: NaN is not a JSON number"),
    ("nan-banner", ("--expect-banner",), "banner: 'index'.avgdl: NaN is not a JSON number"),
    ("surrogate-banner", ("--expect-banner",), "banner: 'name' holds a lone surrogate escape"),
]


def strict(text: str) -> object:
    def refuse(name):
        raise ValueError(f"{name} in a report")
    return json.loads(text, parse_constant=refuse)


def run(tmp_path, mode, extra):
    out = tmp_path / "report.json"
    argv = [sys.executable, "-m", "harness", "--set", str(TINY_SET), "--no-gate", "--timeout", "10",
            "--startup-timeout", "20", "--out", str(out), "--adapter", *extra, "--",
            sys.executable, str(FAULTS / "wire_garbage.py"), mode]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=HARD_LIMIT_SECONDS)
    return done, out


@pytest.mark.parametrize("mode, extra, reason", CASES, ids=[case[0] for case in CASES])
def test_garbage_on_the_wire_is_exit_3_one_line_no_orphan(tmp_path, mode, extra, reason):
    done, out = run(tmp_path, mode, extra)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("harness: error:")]
    assert len(errors) == 1 and reason in errors[0], done.stderr
    if not extra:
        assert errors[0].startswith("harness: error: query tiny-02: "), errors[0]
    assert not alive(adapter_pid(tmp_path / "report.adapter.log"))
    if not extra:
        report = strict(out.read_text(encoding="utf-8"))
        assert report["complete"] is False and report["exit_code"] == 3


@pytest.mark.parametrize("mode", ["nan-banner", "surrogate-banner"])
def test_a_refused_banner_still_leaves_a_strict_partial_report(tmp_path, mode):
    done, out = run(tmp_path, mode, ("--expect-banner",))
    assert done.returncode == 3
    report = strict(out.read_text(encoding="utf-8"))
    assert report["complete"] is False and report["exit_code"] == 3
