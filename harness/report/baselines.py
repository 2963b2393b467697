"""Committed baselines side by side: the Markdown table `python -m harness baselines` prints."""

from __future__ import annotations

from pathlib import Path

from harness.report.escape import markdown_text
from harness.scoring.evaluate import TABLE_METRICS


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
            lines.append(f"| {markdown_text(name)} | {markdown_text(f'{backend} ({path.name})')} | {overall['n']} | {cells} | {latency} |")
    return "\n".join(lines) + "\n"
