"""A stand-in for harness.api, for testing the command line as coverage.py tests its own: no set is
loaded, no adapter started; the stand-in records what the command asked for and hands back a
fixed report from tests/reports.py."""

import types

import pytest

from harness import api as real_api
from harness.commands import outputs, run
from tests.reports import tiny_inputs


class StandInAPI(types.SimpleNamespace):
    """Records load_inputs / run_gate calls; returns `report`."""

    def __init__(self, report, load_error=None):
        super().__init__(RunOptions=real_api.RunOptions, GateOptions=real_api.GateOptions, calls=[], report=report, load_error=load_error, written=[])

    def load_inputs(self, sets, **kwargs):
        self.calls.append(("load_inputs", list(sets), kwargs))
        if self.load_error:
            raise self.load_error
        return tiny_inputs()

    def run_gate(self, inputs, **kwargs):
        self.calls.append(("run_gate", kwargs))
        return self.report

    def prepare_baseline_update(self, report, path):
        self.calls.append(("prepare_baseline_update", path))
        return real_api.BaselineUpdate(path, {"sets": {}}, None, None)

    def write_baseline_update(self, update):
        self.written.append(update.path)


@pytest.fixture
def stand_in(monkeypatch):
    def install(report, load_error=None):
        fake = StandInAPI(report, load_error)
        monkeypatch.setattr(run, "api", fake)
        monkeypatch.setattr(outputs, "api", fake)
        return fake
    return install
