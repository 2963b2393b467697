"""`python -m harness calibrate --set S [--runs 5] ...`: run a backend N times, record each set's run-to-run noise in
its baseline (harness/gating/calibration.py), so the gates allow for it at a stated false-alarm rate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import api
from harness.commands.arguments import (add_source_options, add_timeout_options, command_parser, configured_source,
                                       parse_with_adapter, resolve_layout)
from harness.errors import EXIT_OK, BaselineError, UsageError
from harness.fsutil import SHIPPED_REFUSAL
from harness.gating.baseline import write_calibration
from harness.gating.calibration import DEFAULT_ALPHA, DEFAULT_RUNS, MIN_RUNS, SetCalibration, calibrate_runs
from harness.measured import RESOURCE_FIGURES, SetNumbers, resource_text
from harness.shipped import is_shipped_data
from harness.text import shortlist

MAX_RUNS = 1000
LOG_PATH = Path(".retrieval-gate/calibrate.adapter.log")


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "calibrate", "Run the backend N times on each set and record in the baseline how much every gated figure "
                     "moves between runs (each scope's metric means, the queries that vary, the contracts broken in "
                     "some runs only, latency p50/p95); the quality and contract gates then allow for that noise at "
                     "the stated false-alarm rate (docs/gate.md, \"Calibrated noise\"). The baseline must already "
                     "hold the sets (--update-baseline first).")
    what = parser.add_argument_group("what to run")
    add_source_options(what)
    what.add_argument("--baseline", type=Path, default=None,
                      help="the baseline to calibrate (default: as for a gate run); written atomically")
    what.add_argument("--allow-backend-change", action="store_true",
                      help="calibrate a baseline recorded for another backend or model")
    runs = parser.add_argument_group("calibration")
    runs.add_argument("--runs", type=int, default=DEFAULT_RUNS, metavar="N",
                      help=f"runs of the backend, each started afresh (default: {DEFAULT_RUNS})")
    runs.add_argument("--seed-option", default=None, metavar="OPT",
                      help="with --adapter: run i appends `OPT i` to the adapter command (i = 1..N), so an adapter "
                           "that builds its index from a seed rebuilds it each run (e.g. --seed-option=--seed)")
    runs.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                      help=f"the false-alarm rate per gated scope the gates allow for (default: {DEFAULT_ALPHA:g})")
    timing = parser.add_argument_group("timing")
    add_timeout_options(timing)
    timing.add_argument("--warmup", type=int, default=0, metavar="N", help="untimed queries before measuring (default: 0)")
    return parser


def main(argv: list[str]) -> int:
    """Run N times, compute each set's calibration, write it into the baseline, print what was calibrated."""
    args, adapter_argv = parse_with_adapter(build_parser(), argv)
    _check(args)
    team = resolve_layout(args, adapter_argv)
    if team.baseline is None:
        raise BaselineError("no baseline to calibrate: record one with --update-baseline first")
    if is_shipped_data(team.baseline):  # refused before the runs, not after them
        raise BaselineError(f"{team.baseline}: {SHIPPED_REFUSAL}")
    adapter_argv = configured_source(args, team, adapter_argv)
    if args.seed_option is not None and not args.adapter:  # checked once the config's adapter counts
        raise UsageError("--seed-option: only with an adapter (--adapter, or the config's `adapter`): the option is "
                         "appended to its command")
    inputs = api.load_inputs(args.sets or ["all"], layout=team, offline=args.offline, k=args.k)
    LOG_PATH.parent.mkdir(parents=True, exist_ok=True)
    options = api.RunOptions(k=args.k, expect_banner=args.expect_banner, query_timeout=args.timeout,
                             startup_timeout=args.startup_timeout, startup_limit=args.startup_limit,
                             warmup=args.warmup, log_path=LOG_PATH, adapter_folder=args.adapter_folder)
    gating = api.GateOptions(allow_backend_change=args.allow_backend_change)
    numbers: dict[str, list[SetNumbers]] = {s.name: [] for s in inputs.query_sets}
    judgments = {s.name: s.judgments_hash for s in inputs.query_sets}
    for run in range(1, args.runs + 1):
        seeded = adapter_argv + ([args.seed_option, str(run)] if args.seed_option else [])
        backend = seeded if args.adapter else args.backend
        print(f"calibrate: run {run} of {args.runs}" + (f" ({args.seed_option} {run})" if args.seed_option else ""),
              file=sys.stderr, flush=True)
        report = api.run_gate(inputs, backend=backend, options=options, gating=gating)
        if not report.complete:
            print(f"harness: error: run {run}: {report.error or 'incomplete'} (nothing was written)", file=sys.stderr)
            return report.exit_code
        for result in report.sets:
            numbers[result.name].append(result.numbers(judgments.get(result.name)))
    rebuild = f"{args.seed_option} 1..{args.runs}" if args.seed_option else None
    calibrations = {name: calibrate_runs(runs, inputs.policy.metrics, alpha=args.alpha,
                                          rebuild=rebuild) for name, runs in numbers.items()}
    write_calibration(team.baseline, calibrations)
    for name, calibration in calibrations.items():
        print(describe(name, calibration))
    print(f"calibrate: recorded in {team.baseline}")
    return EXIT_OK


def _check(args: argparse.Namespace) -> None:
    """Usage errors, one line each, before anything is read or started."""
    if args.adapter and args.backend:
        raise UsageError("--adapter and --backend are exclusive: give one backend")
    if not MIN_RUNS <= args.runs <= MAX_RUNS:
        raise UsageError(f"--runs: must be from {MIN_RUNS} to {MAX_RUNS}, got {args.runs}")
    if not 0 < args.alpha < 0.5:
        raise UsageError(f"--alpha: must be above 0 and below 0.5, got {args.alpha:g}")


def describe(name: str, calibration: SetCalibration) -> str:
    """What was calibrated for one set, one line per figure that moved (the summary when none did)."""
    lines = [f"{name}: {calibration.summary()}"]
    for scope, metrics in calibration.quality.items():
        for metric, noise in metrics.items():
            if noise.sd:
                lines.append(f"  {scope} {metric}: sd {noise.sd * 100:.2f} points -> limit widened by "
                             f"{calibration.allowance(noise) * 100:.2f} points")
    for figure, noise in calibration.latency.items():
        lines.append(f"  latency {figure}: sd {noise.sd:.3f} ms over {calibration.runs} runs "
                     f"({min(noise.values):.3f} to {max(noise.values):.3f} ms)"
                     + (f" -> p95 comparison widened by {calibration.allowance(noise):.3f} ms" if figure == "p95" else ""))
    for field_name, unit, words in RESOURCE_FIGURES:
        spread = calibration.resources.get(field_name)
        if spread is not None and spread.sd:
            lines.append(f"  {words}: sd {resource_text(spread.sd, unit)} over {calibration.runs} runs "
                         f"({resource_text(min(spread.values), unit)} to {resource_text(max(spread.values), unit)}) -> "
                         f"comparison widened by {resource_text(calibration.allowance(spread), unit)}")
    if calibration.contracts:
        lines.append(f"  contracts broken in some runs, not all (noise to the contract gate): "
                     f"{shortlist(sorted(calibration.contracts), 10, counted=True)}")
    if calibration.breaks is not None and calibration.breaks.sd:
        lines.append(f"  broken contracts: {', '.join(f'{value:g}' for value in calibration.breaks.values)} in the runs "
                     f"-> +{calibration.allowance(calibration.breaks):.1f} allowed")
    if not any(noise.sd for metrics in calibration.quality.values() for noise in metrics.values()):
        lines.append("  quality: no run-to-run noise; its gates are unchanged")
    return "\n".join(lines)

