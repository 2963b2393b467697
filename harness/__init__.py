"""retrieval-gate: measure a search backend's retrieval quality and latency, and gate CI on it.

`harness.gate(...)` runs the main job and returns a typed `harness.Report` (see harness/api.py);
`harness.read_report(path)` and `harness.report_from_json(text)` read one back;
`harness.raise_for_gates(report)` raises `harness.GatesFailed` with the verdict's few lines unless it
passed; `harness.HarnessError` is what `gate` raises before a run starts (with its `exit_code`; a
wrong argument type is its subclass `harness.UsageError`). All are imported on first use, so
`from harness.adapter import serve` in an adapter stays light.
"""

from harness.version import __version__ as __version__  # re-exported: harness.__version__

__distribution__ = "retrieval-gate"  # harness/version.py `foreign_package`: a same-named package replacing this one
__all__ = ["GatesFailed", "HarnessError", "Report", "UsageError", "gate", "raise_for_gates", "read_report",
           "report_from_json"]


def __getattr__(name: str):
    if name == "gate":
        from harness.api import gate
        return gate
    if name in ("HarnessError", "UsageError", "GatesFailed"):  # what `gate` and `raise_for_gates` raise
        from harness import errors
        return getattr(errors, name)
    if name == "Report":
        from harness.report.document import Report
        return Report
    if name == "raise_for_gates":
        from harness.report.failure import raise_for_gates
        return raise_for_gates
    if name in ("read_report", "report_from_json"):
        from harness.report import reading
        return getattr(reading, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
