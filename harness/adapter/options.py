"""How a run asks its backend: one record from the command line (or `harness.gate(**options)`) to the asking stage.

The command line builds it from argv, the API from keyword arguments; `harness.api` fills in
what follows from the backend and the policy once (`argv`, `expect_banner`, `metrics`,
`identify_first`), and the asking stage and the executors read it as it is. How the answers
are gated and what the report records as given travel apart (`harness.api.GateOptions`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from harness.adapter.startup import (QUERY_TIMEOUT_SECONDS, STARTUP_LIMIT_SECONDS, STARTUP_TIMEOUT_SECONDS,
                                     ProgressCallback, check_waits)
from harness.adapter.windows import DEFAULT_MAX_WINDOW
from harness.errors import UsageError

DEFAULT_LOG = Path(".retrieval-gate/report.adapter.log")
MAX_K = 10_000  # a response may hold at most k ids: this bounds every response the harness accepts
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class RunOptions:
    """How to ask; every field has the command line's default (`harness.gate` documents each)."""

    k: int | None = None
    expect_banner: bool = False
    query_timeout: float = QUERY_TIMEOUT_SECONDS
    startup_timeout: float = STARTUP_TIMEOUT_SECONDS  # longest silence before the banner; progress restarts it
    startup_limit: float = STARTUP_LIMIT_SECONDS      # longest start-up however much progress is shown
    warmup: int = 0
    repeats: int = 1
    workers: int = 1
    max_window: int = DEFAULT_MAX_WINDOW  # characters a shown passage may span (docs/sets.md, evidence)
    log_path: Path = DEFAULT_LOG
    # Each start-up progress line of each worker's adapter, as it arrives (from the thread reading it).
    on_startup_progress: ProgressCallback | None = None
    # Scale-out (docs/scale.md): run the workers on an executor.
    executor: str = "local"
    ray_address: str | None = None
    worker_cpus: float = 1.0
    worker_gpus: float = 0.0
    # Paired latency (docs/gate.md, "Paired latency"): the baseline's backend (an adapter argv), asked beside
    # the backend in this run, query by query in ABBA order, both on one CPU; only its latency is kept. A str is a
    # built-in backend's name (harness.api resolves it to its argv).
    baseline_adapter: Sequence[str] | str = ()
    # The folders the adapter and the baseline's start in: the config's folder for a command the config names (as
    # every relative path in it), None (the working folder) for one given on the command line or to harness.gate.
    adapter_folder: Path | None = None
    baseline_adapter_folder: Path | None = None
    # Filled in by harness.api from the backend and the policy, once:
    argv: Sequence[str] = ()
    metrics: tuple[str, ...] = ()  # measures beyond the reported ones to compute (the gate policy's)
    identify_first: bool = False   # ask one untimed query when the banner is not awaited, so start() shows it

    def __post_init__(self) -> None:
        check_types(self, _OPTION_TYPES)
        if self.on_startup_progress is not None and not callable(self.on_startup_progress):
            raise UsageError("on_startup_progress: must be callable or None")
        if self.executor not in EXECUTORS:
            raise UsageError(f"--executor: one of {', '.join(EXECUTORS)}, got {self.executor!r}")
        for name, value in (("--worker-cpus", self.worker_cpus), ("--worker-gpus", self.worker_gpus)):
            if not (value >= 0 and value < float("inf")):
                raise UsageError(f"{name}: must be a number >= 0, got {value}")
        if self.executor == "local" and (self.ray_address is not None or self.worker_gpus or self.worker_cpus != 1.0):
            raise UsageError("--ray-address, --worker-cpus and --worker-gpus need --executor ray")
        if self.k is not None and self.k > MAX_K:
            raise UsageError(f"--k: at most {MAX_K} ids per query, got {self.k}")
        for name, value, low in (("--k", 1 if self.k is None else self.k, 1), ("--repeats", self.repeats, 1),
                                 ("--warmup", self.warmup, 0), ("--workers", self.workers, 1),
                                 ("--max-window", self.max_window, 1)):
            if value < low:
                raise UsageError(f"{name}: must be >= {low}, got {value}")
        check_waits(self.query_timeout, self.startup_timeout, self.startup_limit)
        if self.baseline_adapter:
            if not all(isinstance(part, str) and part for part in self.baseline_adapter):
                raise UsageError("--baseline-adapter: must be an adapter argv of non-empty strings")
            if self.workers > 1 or self.executor != "local":
                raise UsageError("--baseline-adapter: times one local adapter beside the baseline's; "
                                 "drop --workers and --executor ray")

    def settings(self) -> dict[str, object]:
        """What a report records of these options (provenance.settings): what changes a metric or a latency."""
        return {"k": self.k, "query_timeout_s": self.query_timeout, "startup_timeout_s": self.startup_timeout,
                "startup_limit_s": self.startup_limit, "warmup": self.warmup, "repeats": self.repeats,
                "workers": self.workers, "latency_under_concurrency": self.workers > 1,
                "max_window": self.max_window,
                **({"baseline_adapter": list(self.baseline_adapter)} if self.baseline_adapter else {})}

    def worker_log(self, index: int) -> Path:
        """Worker `index`'s stderr log: one per worker; a single worker keeps the plain name."""
        log_path = Path(self.log_path)
        if self.workers == 1:
            return log_path
        return log_path.with_name(f"{log_path.stem}.w{index + 1}{log_path.suffix}")

    def baseline_log(self) -> Path:
        """The baseline's adapter's stderr log (`--baseline-adapter`), beside the run's."""
        log_path = Path(self.log_path)
        return log_path.with_name(f"{log_path.stem}.baseline{log_path.suffix}")


def option_names(record_type: type) -> frozenset[str]:
    """The fields of an options record: what `harness.gate(**options)` may name."""
    return frozenset(field.name for field in fields(record_type))


def check_types(record: object, types: Mapping[str, tuple[type, ...]]) -> None:
    """UsageError naming the option whose value (from a Python caller) is not of its types, so
    `workers="2"` is one line and not a TypeError deep in the run; a bool is no int here."""
    for name, kinds in types.items():
        value = getattr(record, name)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            wanted = " or ".join("None" if kind is type(None) else kind.__name__ for kind in kinds)
            raise UsageError(f"{name}: must be {wanted}, got {type(value).__name__} {value!r:.60}")


# The types a Python caller may give each option (the command line's parser gives these).
_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "k": (int, type(None)), "expect_banner": (bool,), "query_timeout": (int, float),
    "startup_timeout": (int, float), "warmup": (int,), "repeats": (int,), "workers": (int,),
    "log_path": (str, os.PathLike), "startup_limit": (int, float), "executor": (str,),
    "ray_address": (str, type(None)), "worker_cpus": (int, float), "worker_gpus": (int, float),
    "max_window": (int,), "baseline_adapter": (str, list, tuple), "adapter_folder": (os.PathLike, type(None)),
    "baseline_adapter_folder": (os.PathLike, type(None))}
