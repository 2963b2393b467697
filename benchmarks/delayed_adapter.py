"""A stand-in backend whose per-query time is a knob: `python -m benchmarks.delayed_adapter --delay-ms 1.5`.

It answers every request with three ids derived from the query, after holding each answer for
`--delay-ms` milliseconds (times `--slowdown`): the last 2 ms spin on the clock, so sub-millisecond
delays are exact, and any time before that sleeps, so a slow stand-in leaves the CPU to others.
Standard library only: it stands for foreign code (benchmarks/paired_latency.py, tests).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

SPIN_SECONDS = 0.002  # spin the last 2 ms: time.sleep overshoots by 50-100 us, more under load


def hold(seconds: float) -> None:
    """Return `seconds` after the call: sleep the bulk, spin the rest."""
    until = time.perf_counter() + seconds
    if seconds > SPIN_SECONDS:
        time.sleep(seconds - SPIN_SECONDS)
    while time.perf_counter() < until:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay-ms", type=float, default=0.0, help="milliseconds held per query (default: 0)")
    parser.add_argument("--slowdown", type=float, default=1.0, help="multiplies --delay-ms (default: 1)")
    args = parser.parse_args(argv)
    if not (args.delay_ms >= 0 and args.slowdown >= 0):
        parser.error("--delay-ms and --slowdown must be >= 0")
    delay = args.delay_ms * args.slowdown / 1000
    out = sys.stdout
    out.write(json.dumps({"ready": True, "name": "delayed", "version": f"{args.delay_ms * args.slowdown:g}ms"}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        ids = [f"{request['query']}-{rank}" for rank in range(1, 4)][: request["k"]]
        hold(delay)
        out.write(json.dumps({"ids": ids, "scores": [float(10 - rank) for rank in range(len(ids))]}) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
