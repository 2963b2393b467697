"""How it is asked: the wire protocol, serve(), the adapter process and its drivers, the conformance checks.

Adapter authors import `serve` from here: `from harness.adapter import serve`.
"""

from harness.adapter.serve import UnknownKind, index_for, report_progress, serve

__all__ = ["UnknownKind", "index_for", "report_progress", "serve"]
