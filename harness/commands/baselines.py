"""`python -m harness baselines [FILE ...]`: committed baselines side by side, as a Markdown table."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.gating.baseline import read_baseline
from harness.scoring.evaluate import TABLE_METRICS
from harness.errors import EXIT_OK, UsageError
from harness.commands.arguments import parse_arguments



def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness baselines",
                                     description="Print baselines side by side (default: baselines/*.json), per set.")
    parser.add_argument("files", nargs="*", type=Path)
    args = parse_arguments(parser, argv)
    files = args.files or sorted(Path("baselines").glob("*.json"))
    if not files:
        raise UsageError("no baseline files given and none in baselines/")
    print(render_table([(path, read_baseline(path)) for path in files]), end="")
    return EXIT_OK


def render_table(baselines: list[tuple[Path, dict]]) -> str:
    lines = ["| set | backend | n | recall@5 | recall@10 | MRR | nDCG@10 | p95 ms |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    names = sorted({name for _, document in baselines for name in document["sets"]})
    for name in names:
        for path, document in baselines:
            entry = document["sets"].get(name)
            if entry is None:
                continue
            overall = entry["aggregates"]["overall"]
            backend = (document.get("backend") or {}).get("label") or path.stem
            cells = " | ".join(f"{overall[m]:.3f}" if m in overall else "-" for m in TABLE_METRICS)
            p95 = entry["latency_ms"].get("p95")
            latency = f"{p95:.1f}" if p95 is not None else "-"
            lines.append(f"| {name} | {backend} ({path.name}) | {overall['n']} | {cells} | {latency} |")
    return "\n".join(lines) + "\n"
