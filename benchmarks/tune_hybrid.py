"""Tune the hybrid adapter's fusion on the development split of query sets; report the held-out split.

    python -m benchmarks.tune_hybrid                  # the shipped sets, the default model
    python -m benchmarks.tune_hybrid --set memory --set /path/to/my-set --top 30
    python -m benchmarks.tune_hybrid --all            # print every configuration of the grid

For every set, BM25 (default settings) and the embedder rank every query once (top
`max(--candidates grid)` with scores), in this process; every fusion configuration of the
grid (method x weight x rrf_k x candidate depth, see adapters/fusion.py) is then scored
from those lists. recall@10 as the harness computes it (scored queries only). The chosen
configuration is the one that, on the development split only, (1) keeps the most sets at
or above their better part minus 1 point, then (2) has the highest mean recall@10 over the
sets, then (3) the simplest (rrf before score fusion, weight nearest 0.5, fewer
candidates). Its held-out figures are printed beside both parts'; held-out queries never
influence the choice. A team tunes on its own sets by passing them with --set.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPLITS = ("development", "held-out")
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
RRF_KS = (5.0, 10.0, 20.0, 60.0)
CANDIDATES = (10, 20, 50, 100)
TOLERANCE = 0.01
K = 10


@dataclass
class SetRuns:
    name: str
    queries: list  # scored harness Query objects
    lexical: list[list[tuple[str, float]]]
    semantic: list[list[tuple[str, float]]]


def rank_sets(names: list[str], depth: int, threads: int) -> list[SetRuns]:
    from adapters import onnx_embed
    from adapters.bm25_index import BM25Index, BM25Settings
    from adapters.embedding_cache import cached_passage_embeddings
    from harness.sets.loader import find_sets, load_set

    parser = argparse.ArgumentParser()
    onnx_embed.add_model_arguments(parser)
    model_args = parser.parse_args(["--threads", str(threads)])
    embedder, files = onnx_embed.build_embedder(model_args)
    print(f"embedder: {onnx_embed.model_summary(embedder, files)}", file=sys.stderr)
    runs = []
    for folder in find_sets(names, ROOT / "sets"):
        query_set = load_set(folder)
        ids = [doc.id for doc in query_set.documents]
        texts = [doc.text for doc in query_set.documents]
        lexical_index = BM25Index.build(ids, texts, BM25Settings())
        matrix, _ = cached_passage_embeddings(embedder, texts, query_set.corpus_hash)
        semantic_index = onnx_embed.EmbeddingIndex(ids, matrix)
        queries = [query for query in query_set.queries if query.scored]
        lexical = [lexical_index.search(query.query, depth) for query in queries]
        semantic = [semantic_index.search(embedder.embed_query(query.query), depth) for query in queries]
        runs.append(SetRuns(query_set.name, queries, lexical, semantic))
        print(f"{query_set.name}: {len(queries)} scored queries ranked", file=sys.stderr)
    return runs


def recall_by_split(runs: SetRuns, rankings: list[list[str]]) -> dict[str, float]:
    from harness.scoring.metrics import recall

    values: dict[str, list[float]] = {split: [] for split in SPLITS}
    for query, ranked in zip(runs.queries, rankings):
        values.setdefault(query.split, []).append(recall(ranked, query.relevant, K))
    return {split: statistics.fmean(found) if found else float("nan") for split, found in values.items()}


def grid():
    from adapters.fusion import FusionSettings

    for candidates, weight in itertools.product(CANDIDATES, WEIGHTS):
        for rrf_k in RRF_KS:
            yield FusionSettings("rrf", weight, rrf_k, candidates)
        for method in ("minmax", "zscore"):
            yield FusionSettings(method, weight, 60.0, candidates)


def simplicity(settings) -> tuple:
    return (settings.method != "rrf", abs(settings.weight - 0.5), settings.candidates, settings.rrf_k != 60.0)


def main(argv: list[str] | None = None) -> int:
    from adapters.fusion import FusionSettings, fuse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.tune_hybrid", description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", dest="sets", help="a set name or folder (repeatable; default all)")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime threads (default: automatic)")
    parser.add_argument("--top", type=int, default=15, help="grid rows to print, best first (default 15)")
    parser.add_argument("--all", action="store_true", help="print the whole grid")
    args = parser.parse_args(argv)
    runs = rank_sets(args.sets or ["all"], max(CANDIDATES), args.threads)

    parts = {}
    for run in runs:
        parts[run.name] = {
            "bm25": recall_by_split(run, [[doc for doc, _ in ranked] for ranked in run.lexical]),
            "onnx": recall_by_split(run, [[doc for doc, _ in ranked] for ranked in run.semantic]),
        }
    rows = []
    for settings in grid():
        figures = {run.name: recall_by_split(run, [[doc for doc, _ in fuse(lex, sem, settings)[:K]]
                                                   for lex, sem in zip(run.lexical, run.semantic)])
                   for run in runs}
        dev = {name: figure["development"] for name, figure in figures.items()}
        kept = sum(dev[name] >= max(parts[name]["bm25"]["development"], parts[name]["onnx"]["development"])
                   - TOLERANCE - 1e-12 for name in dev)
        rows.append((settings, figures, kept, statistics.fmean(dev.values())))
    rows.sort(key=lambda row: (-row[2], -row[3], simplicity(row[0])))
    names = [run.name for run in runs]

    print(f"# fusion grid on the development split ({len(rows)} configurations; recall@{K})")
    print(f"{'configuration':<46} {'sets ok':>7} {'dev mean':>8} " + " ".join(f"{name:>8}" for name in names))
    for name_of_part in ("bm25", "onnx"):
        dev = [parts[name][name_of_part]["development"] for name in names]
        print(f"{name_of_part + ' alone':<46} {'':>7} {statistics.fmean(dev):>8.3f} "
              + " ".join(f"{value:>8.3f}" for value in dev))
    for settings, figures, kept, mean in rows if args.all else rows[:args.top]:
        print(f"{settings.summary():<46} {kept:>5}/{len(names)} {mean:>8.3f} "
              + " ".join(f"{figures[name]['development']:>8.3f}" for name in names))

    from adapters import hybrid

    chosen, figures, _, _ = rows[0]
    default = FusionSettings(hybrid.DEFAULT_FUSION, hybrid.DEFAULT_WEIGHT, hybrid.DEFAULT_RRF_K,
                             hybrid.DEFAULT_CANDIDATES)
    print(f"\n# chosen on development: {chosen.summary()}")
    print(f"# held-out split (recall@{K}); never used to choose")
    print(f"{'set':<10} {'split':<12} {'bm25':>7} {'onnx':>7} {'better':>7} {'hybrid':>7} {'- better':>9}")
    means = {"bm25": [], "onnx": [], "hybrid": []}
    for split in SPLITS:
        for name in names:
            bm25, onnx = parts[name]["bm25"][split], parts[name]["onnx"][split]
            hybrid = figures[name][split]
            if split == "held-out":
                means["bm25"].append(bm25)
                means["onnx"].append(onnx)
                means["hybrid"].append(hybrid)
            print(f"{name:<10} {split:<12} {bm25:>7.3f} {onnx:>7.3f} {max(bm25, onnx):>7.3f} {hybrid:>7.3f} "
                  f"{hybrid - max(bm25, onnx):>+9.3f}")
    print(f"{'mean':<10} {'held-out':<12} {statistics.fmean(means['bm25']):>7.3f} "
          f"{statistics.fmean(means['onnx']):>7.3f} {'':>7} {statistics.fmean(means['hybrid']):>7.3f}")
    if chosen != default:
        print(f"# note: the adapter's default is {default.summary()}; pass the chosen options to use these figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
