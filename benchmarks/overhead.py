"""Per-query overhead of AdapterProcess.ask over a raw pipe ping-pong with the same instant adapter.

Both sides talk to a fresh copy of the same child, which reads a line and writes a fixed
response line. The floor writes the request bytes with os.write and reads the reply with
os.read; the harness side calls `AdapterProcess.ask` (encode, write, poll, read, decode,
validate). Measurements alternate in blocks so machine noise hits both alike. Both children
and this process run pinned to one CPU (harness.adapter.placement, as paired latency pins its
adapters): a round trip across CPUs costs ~55 us more on a 2-CPU machine, and an unpinned floor and
harness landing on different placements made three runs print -40.7, +67.5 and +63.8 us.
The measurement runs `--runs` times (fresh children each), and prints each run's figure.

    python -m benchmarks.overhead [--runs 3] [--queries 20000] [--warmup 2000] [--block 1000]

Targets: the harness adds at most 20 us at p50 over the floor, and the runs agree within 5 us
(docs/performance.md, "Per-query overhead of the harness").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.arguments import at_least
from harness.adapter.driver import AdapterProcess
from harness.adapter.placement import pinned
from harness.adapter.protocol import Request, decode_response, encode_request
from harness.scoring.metrics import percentile

# The instant adapter: one fixed response line per request line, flushed.
INSTANT_ADAPTER = r"""
import sys
reply = b'{"ids":["pkg/a.py","pkg/b.py","pkg/c.py"],"scores":[3.0,2.0,1.0]}\n'  # REPLY
read, write, flush = sys.stdin.buffer.readline, sys.stdout.buffer.write, sys.stdout.buffer.flush
while True:
    line = read()
    if not line:
        break
    write(reply)
    flush()
"""

REQUEST = Request(kind="code", query="parse a config file", k=10, qid="code-017")
REPLY = b'{"ids":["pkg/a.py","pkg/b.py","pkg/c.py"],"scores":[3.0,2.0,1.0]}'


def protocol_only() -> None:
    """The share of ask() that is protocol.py's work: encode the request, decode the reply."""
    encode_request(REQUEST)
    decode_response(REPLY, qid="code-017", k=10)


class RawPingPong:
    """The floor: the least a client can do per query over the same kind of pipes."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", INSTANT_ADAPTER],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.stdin_fd = self.process.stdin.fileno()
        self.stdout_fd = self.process.stdout.fileno()
        self.request = encode_request(REQUEST)

    def ask(self) -> None:
        os.write(self.stdin_fd, self.request)
        data = os.read(self.stdout_fd, 65536)
        while not data.endswith(b"\n"):
            data += os.read(self.stdout_fd, 65536)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()
        self.process.stdout.close()


def time_block(ask, count: int, sink: list[float]) -> None:
    clock = time.perf_counter
    for _ in range(count):
        started = clock()
        ask()
        sink.append(clock() - started)


def percentiles(seconds: list[float]) -> tuple[float, float]:
    """(p50, p95) in microseconds, by the harness's own nearest-rank rule."""
    return percentile(seconds, 50) * 1e6, percentile(seconds, 95) * 1e6


AGREE_US = 5.0  # the runs' p50 overheads agree within this (target)
OVERHEAD_TARGET_US = 20.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=at_least(1), default=3, help="measurements, each with fresh children")
    parser.add_argument("--queries", type=at_least(1), default=20_000, help="timed queries per side")
    parser.add_argument("--warmup", type=at_least(0), default=2_000, help="untimed queries per side first")
    parser.add_argument("--block", type=at_least(1), default=1_000, help="queries per alternating block")
    args = parser.parse_args(argv)
    added = []
    with pinned() as cpu:
        print(f"placement: this process and both children on {f'cpu {cpu}' if cpu is not None else 'any cpu (unpinned)'}")
        for run in range(args.runs):
            print(f"-- run {run + 1} of {args.runs}")
            added.append(measure(args))
    spread = max(added) - min(added)
    print(f"harness adds at p50: {', '.join(f'{a:+.1f}' for a in added)} us over {args.runs} runs; spread {spread:.1f} us "
          f"(target: within {AGREE_US:g} us: {'met' if spread <= AGREE_US else 'NOT met'}); worst {max(added):+.1f} us "
          f"(target +{OVERHEAD_TARGET_US:g} us: {'met' if max(added) <= OVERHEAD_TARGET_US else 'NOT met'})")
    return 0


def measure(args: argparse.Namespace) -> float:
    """One measurement with fresh children: prints its table; returns what the harness adds at p50, us."""
    raw = RawPingPong()
    argv = [sys.executable, "-c", INSTANT_ADAPTER]
    with tempfile.TemporaryDirectory() as folder, \
            AdapterProcess(argv, log_path=Path(folder) / "adapter.log") as harness:
        def harness_ask() -> None:
            harness.ask(REQUEST)

        reported: list[float] = []

        def harness_ask_reported() -> None:
            reported.append(harness.ask(REQUEST)[1])

        warm: list[float] = []
        time_block(raw.ask, args.warmup, warm)
        time_block(harness_ask, args.warmup, warm)
        floor_times: list[float] = []
        harness_times: list[float] = []
        protocol_times: list[float] = []
        done = 0
        while done < args.queries:
            count = min(args.block, args.queries - done)
            time_block(raw.ask, count, floor_times)
            time_block(harness_ask_reported, count, harness_times)
            time_block(protocol_only, count, protocol_times)
            done += count
    raw.close()

    floor, whole = percentiles(floor_times), percentiles(harness_times)
    io_only, protocol = percentiles(reported), percentiles(protocol_times)
    print(f"{args.queries} queries per side after {args.warmup} warm-up, python "
          f"{sys.version.split()[0]}, {os.cpu_count()} cpus; microseconds")
    print(f"{'':44} {'p50':>7} {'p95':>7}")
    for name, (p50, p95) in [("raw ping-pong (the floor)", floor),
                             ("AdapterProcess.ask, whole call", whole),
                             ("  its reported latency (write..line read)", io_only),
                             ("  protocol encode+decode alone, no I/O", protocol)]:
        print(f"{name:44} {p50:7.1f} {p95:7.1f}")
    print(f"harness adds {whole[0] - floor[0]:.1f} us at p50 "
          f"({whole[0] / floor[0]:.2f}x the floor), "
          f"{whole[1] - floor[1]:.1f} us at p95 ({whole[1] / floor[1]:.2f}x); target +20 us at p50")
    return whole[0] - floor[0]


if __name__ == "__main__":
    sys.exit(main())
