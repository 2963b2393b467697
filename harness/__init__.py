"""retrieval-gate: measure a search backend's retrieval quality and latency, and gate CI on it."""

__version__ = "0.1.0"
