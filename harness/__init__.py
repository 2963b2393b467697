"""retrieval-gate: measure a search backend's retrieval quality and latency, and gate CI on it.

`harness.gate(...)` runs the main job and returns a typed `harness.Report` (see harness/api.py);
`harness.HarnessError` is what `gate` raises before a run starts (with its `exit_code`; a wrong
argument type is its subclass `harness.UsageError`). All are imported on first use, so
`from harness.adapter import serve` in an adapter stays light.
"""

__version__ = "0.1.0"

__all__ = ["HarnessError", "Report", "UsageError", "gate"]


def __getattr__(name: str):
    if name == "gate":
        from harness.api import gate
        return gate
    if name in ("HarnessError", "UsageError"):  # what `gate` raises, with its exit_code
        from harness import errors
        return getattr(errors, name)
    if name == "Report":
        from harness.report.document import Report
        return Report
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
