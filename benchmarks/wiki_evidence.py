"""Exposed-evidence figures of the reference adapters on the wiki set: passage mode beside whole documents.

    PYTHONPATH=$PWD python benchmarks/wiki_evidence.py [--backends bm25,onnx,hybrid]

Prints docs/shipped.md's Markdown table: answer_hit@10, ku@1, stale_before_current (window and whole
document), recall@10 and latency p50/p95, one row per adapter and mode, all from one run each
(`harness.gate` with no baseline). Latency is of this machine, under whatever else runs on it.
"""

from __future__ import annotations

import argparse
import sys

import harness

MODULES = {"bm25": "adapters.bm25", "onnx": "adapters.onnx_embed", "hybrid": "adapters.hybrid"}
MODES = ("auto", "off")  # auto: the set's windows (600/150); off: whole documents


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="bm25,onnx,hybrid")
    args = parser.parse_args()
    print("| backend | mode | answer_hit@10 | ku@1 | stale_before_current | full_answer_hit@10 | "
          "recall@10 | p50 ms | p95 ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.backends.split(","):
        for mode in MODES:
            argv = [sys.executable, "-m", MODULES[name], "--passages", mode]
            report = harness.gate(["wiki"], backend=argv, baseline=None)
            result = report.sets[0]
            figures = result.aggregates["evidence"]["overall"]

            def mean(metric: str) -> str:
                value = figures[metric]["mean"]
                return "-" if value is None else f"{value:.3f} (n={figures[metric]['judged']})"
            label = "windows 600/150" if mode == "auto" else "whole documents"
            print(f"| {name} | {label} | {mean('answer_hit@10')} | {mean('ku@1')} | {mean('stale_before_current')} | "
                  f"{mean('full_answer_hit@10')} | {result.aggregates['overall']['recall@10']:.3f} | "
                  f"{result.latency_ms['p50']:.2f} | {result.latency_ms['p95']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
