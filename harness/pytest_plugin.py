"""The pytest plugin (entry point `pytest11`): the `retrieval_gate` fixture gates a backend inside a test.

pytest loads this module itself when retrieval-gate is installed; it is the one module of
harness/ that imports pytest, and it imports the harness only when the fixture is called.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

REPORT_NAME = "retrieval-gate-report.json"


@pytest.fixture
def retrieval_gate(tmp_path: Path):
    """A function that runs `harness.gate` and fails the test unless the verdict passed.

    Call it with `harness.gate`'s arguments (sets, backend, baseline, budgets, policy, any run
    option) and optionally `report_path`: where the JSON report goes (default
    `retrieval-gate-report.json` in the test's tmp_path); the adapter's log goes beside it
    (`<stem>.adapter.log`) unless `log_path` says otherwise. It returns the `Report` when the
    verdict passed; otherwise the test fails with the verdict line, the failed gates (or the
    backend's error) and the report's path, never the Report's repr. An input that stops the run
    before it starts (a missing set or baseline: exit 2) fails it with that one line.
    """

    def run(sets: Sequence[str | Path] = ("all",), *, report_path: str | Path | None = None, **arguments: Any):
        from harness.version import foreign_package
        foreign = foreign_package()
        if foreign is not None:
            pytest.fail(foreign, pytrace=False)
        from harness.api import gate
        from harness.errors import HarnessError
        from harness.fsutil import write_output
        from harness.report.failure import failure_text

        path = Path(report_path) if report_path is not None else tmp_path / REPORT_NAME
        arguments.setdefault("log_path", path.with_name(path.stem + ".adapter.log"))
        try:
            report = gate(sets, **arguments)  # gate checks each argument's type
            path.parent.mkdir(parents=True, exist_ok=True)
            write_output(path, report.to_json(), "report_path")
        except HarnessError as error:
            pytest.fail(f"retrieval-gate: error: {error}", pytrace=False)
        if report.exit_code != 0:
            pytest.fail(failure_text(report, path), pytrace=False)
        return report

    return run
