"""benchmarks/embed.py's per-round ratio: each round's row over the same round's naive loop, then the median."""

from __future__ import annotations

from benchmarks.embed import combine, paired_ratio


def _runs(*docs_per_s: float) -> list[dict]:
    return [{"docs_per_s": value, "docs_per_cpu_s": value, "p50_ms": 1.0, "p95_ms": 2.0, "gflops_per_s": 1.0,
             "peak_mib": 10.0} for value in docs_per_s]


def test_per_round_ratio_pairs_rounds_where_the_ratio_of_medians_does_not():
    # Round 3 was a slow spell for both: 92/72, 82/71, 78/57 -> 1.278, 1.155, 1.368.
    ours, naive = combine(_runs(92.0, 82.0, 78.0)), combine(_runs(72.0, 71.0, 57.0))
    assert ours["docs_per_s"] / naive["docs_per_s"] == 82.0 / 71.0  # medians 82 and 71
    assert paired_ratio(ours["round_docs_per_s"], naive["round_docs_per_s"]) == 92.0 / 72.0  # the median of the three ratios


def test_per_round_ratio_of_a_single_round_is_its_ratio():
    assert paired_ratio(combine(_runs(50.0))["round_docs_per_s"], combine(_runs(40.0))["round_docs_per_s"]) == 1.25


def _row(threads: int, method: str, rounds: list[float], **extra) -> dict:
    row = combine(_runs(*rounds))
    row.update(threads=threads, method=method, batch_size=32, batch_tokens=256, graph="fused", **extra)
    return row


def test_the_reference_line_compares_the_adapters_default_with_sentence_transformers():
    from benchmarks.embed import reference_ratios

    rows = [_row(1, "sorted", [50.0, 40.0, 60.0], adapter_default=True),
            _row(1, "sorted", [99.0, 99.0, 99.0], spinning=True),  # not the default: never the one compared
            _row(1, "st", [25.0, 25.0, 20.0]),
            _row(2, "sorted", [80.0], adapter_default=True)]  # no reference row at 2 threads: no line
    [line] = reference_ratios(rows)
    # wall: medians 50 / 25 = 2.00; per round: 2.0, 1.6, 3.0 -> 2.0 ... round pairs 50/25, 40/25, 60/20.
    assert line.startswith("# 1 thread(s): ours: fused graph, batch 32, <= 256 tokens (the adapter's default)")
    assert "2.00x wall, 2.00x per round" in line
    rows[0] = _row(1, "sorted", [40.0, 40.0, 60.0], adapter_default=True)
    assert "1.60x wall, 1.60x per round" in reference_ratios(rows)[0]
