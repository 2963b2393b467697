"""Tune the hybrid adapter's fusion on the development split of query sets; report the held-out split.

    python -m benchmarks.tune_hybrid                  # the shipped sets, the default model
    python -m benchmarks.tune_hybrid --set memory --set /path/to/my-set --top 30
    python -m benchmarks.tune_hybrid --all            # print every configuration of the grid

For every set, BM25 (default settings) and the embedder rank every query once (top
`max(--candidates grid)` with scores), in this process; every fusion configuration of the
grid (the embedder's input x method x weight x rrf_k x candidate depth, see
adapters/fusion.py) is then scored from those lists. The embedder's input is either each
document's first `--max-length` tokens ("first", what it reads of a long document when it
is not windowed) or its best window of 800 characters ("windows", adapters/passages.py); a
configuration's parts are BM25 and the embedder on that input. recall@10 as the harness computes it (scored queries only). The chosen
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

from benchmarks.arguments import at_least

ROOT = Path(__file__).resolve().parents[1]
SPLITS = ("development", "held-out")
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
RRF_KS = (5.0, 10.0, 20.0, 60.0)
CANDIDATES = (10, 20, 50, 100)
INPUTS = ("first", "windows")  # what the embedder reads of a long document: its first tokens, or every window
TOLERANCE = 0.01
K = 10


@dataclass
class SetRuns:
    name: str
    queries: list  # scored harness Query objects
    lexical: list[list[tuple[str, float]]]
    semantic: dict[str, list[list[tuple[str, float]]]]  # the embedder's input ("first", "windows") -> rankings


def load_sets(names: list[str]) -> list:
    """The sets to tune on, each with scored queries in both splits; a SetError otherwise (before any model loads)."""
    from harness.errors import SetError
    from harness.sets.loader import find_sets, load_set

    sets = [load_set(folder) for folder in find_sets(names, ROOT / "sets")]
    for query_set in sets:
        found = {query.split for query in query_set.queries if query.scored}
        for split in SPLITS:
            if split not in found:
                raise SetError(f"set {query_set.name!r}: no scored {split} queries; tuning chooses on the development "
                               f"split and reports the held-out one, so give queries \"split\": \"{split}\" "
                               f"(docs/sets.md)")
    return sets


def rank_sets(sets: list, depth: int, model_args: argparse.Namespace) -> list[SetRuns]:
    from adapters import onnx_embed
    from adapters.bm25_index import BM25Index, BM25Settings
    from adapters.embedding_cache import cached_passage_embeddings
    from adapters.passages import PassageCorpus, Windowed, WindowSettings

    embedder, files = onnx_embed.build_embedder(model_args)
    print(f"embedder: {onnx_embed.model_summary(embedder, files)}", file=sys.stderr)
    runs = []
    for query_set in sets:
        ids = [doc.id for doc in query_set.documents]
        texts = [doc.text for doc in query_set.documents]
        # As the adapter serves it: a set in passage mode has both parts read by its windows, whatever
        # --long-documents says; otherwise BM25 reads whole documents and the embedder either input.
        hint = query_set.extra.get("passages")
        shown = WindowSettings(hint["window"], hint["overlap"]) if hint else None
        window = shown or WindowSettings()
        cut = PassageCorpus.build(ids, texts, query_set.corpus_hash, window)
        windows_matrix, _ = cached_passage_embeddings(embedder, cut.texts, cut.content_hash)
        windows_index = Windowed(cut, onnx_embed.EmbeddingIndex(cut.passage_ids, windows_matrix), window)
        if shown:
            lexical_index = Windowed(cut, BM25Index.build(cut.passage_ids, cut.texts, BM25Settings()), shown)
            first_index = windows_index
        else:
            lexical_index = BM25Index.build(ids, texts, BM25Settings())
            matrix, _ = cached_passage_embeddings(embedder, texts, query_set.corpus_hash)
            first_index = onnx_embed.EmbeddingIndex(ids, matrix)
        queries = [query for query in query_set.queries if query.scored]
        lexical = [[hit[:2] for hit in lexical_index.search(query.query, depth)] for query in queries]
        vectors = [embedder.embed_query(query.query) for query in queries]
        semantic = {"first": [[hit[:2] for hit in first_index.search(vector, depth)] for vector in vectors],
                    "windows": [[hit[:2] for hit in windows_index.search(vector, depth)] for vector in vectors]}
        runs.append(SetRuns(query_set.name, queries, lexical, semantic))
        print(f"{query_set.name}: {len(queries)} scored queries ranked", file=sys.stderr)
    return runs


def recall_by_split(runs: SetRuns, rankings: list[list[str]]) -> dict[str, float]:
    from harness.scoring.metrics import make_measure

    recall = make_measure("recall", K)
    values: dict[str, list[float]] = {split: [] for split in SPLITS}
    for query, ranked in zip(runs.queries, rankings):
        values.setdefault(query.split, []).append(recall.compute(ranked, query.relevant))
    return {split: statistics.fmean(found) if found else float("nan") for split, found in values.items()}


def grid():
    """(the embedder's input, FusionSettings) for every configuration."""
    from adapters.fusion import FusionSettings

    for source, candidates, weight in itertools.product(INPUTS, CANDIDATES, WEIGHTS):
        for rrf_k in RRF_KS:
            yield source, FusionSettings("rrf", weight, rrf_k, candidates)
        for method in ("minmax", "zscore"):
            yield source, FusionSettings(method, weight, 60.0, candidates)


def simplicity(configuration) -> tuple:
    source, settings = configuration
    return (source != "first", settings.method != "rrf", abs(settings.weight - 0.5), settings.candidates,
            settings.rrf_k != 60.0)


def label(configuration) -> str:
    source, settings = configuration
    return f"{source}: {settings.summary()}"


def main(argv: list[str] | None = None) -> int:
    from adapters.fusion import FusionSettings, fuse

    from adapters import onnx_embed
    from adapters.startup import AdapterStartupError
    from harness.errors import HarnessError

    parser = argparse.ArgumentParser(prog="python -m benchmarks.tune_hybrid", description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", dest="sets", help="a set name or folder (repeatable; default all)")
    parser.add_argument("--top", type=at_least(1), default=15, help="grid rows to print, best first (default 15)")
    parser.add_argument("--all", action="store_true", help="print the whole grid")
    onnx_embed.add_model_arguments(parser)  # the embedder the hybrid would run: same options, same defaults
    args = parser.parse_args(argv)
    try:
        runs = rank_sets(load_sets(args.sets or ["all"]), max(CANDIDATES), args)
    except (HarnessError, AdapterStartupError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)

    parts = {}
    for run in runs:
        parts[run.name] = {"bm25": recall_by_split(run, [[doc for doc, _ in ranked] for ranked in run.lexical])}
        for source in INPUTS:
            parts[run.name][f"onnx {source}"] = recall_by_split(
                run, [[doc for doc, _ in ranked] for ranked in run.semantic[source]])
    # The bar on every set: the best of its parts, the embedder on either input (the strictest reading).
    best = {name: {split: max(part[split] for part in figures.values()) for split in SPLITS}
            for name, figures in parts.items()}
    rows = []
    for configuration in grid():
        source, settings = configuration
        figures = {run.name: recall_by_split(run, [[doc for doc, _ in fuse(lex, sem, settings)[:K]]
                                                   for lex, sem in zip(run.lexical, run.semantic[source])])
                   for run in runs}
        dev = {name: figure["development"] for name, figure in figures.items()}
        kept = sum(dev[name] >= best[name]["development"] - TOLERANCE - 1e-12 for name in dev)
        rows.append((configuration, figures, kept, statistics.fmean(dev.values())))
    rows.sort(key=lambda row: (-row[2], -row[3], simplicity(row[0])))
    names = [run.name for run in runs]
    part_names = list(parts[names[0]])

    print(f"# fusion grid on the development split ({len(rows)} configurations; recall@{K}; "
          f"sets ok = at or above the best part - {TOLERANCE * 100:g} pt)")
    print(f"{'configuration':<55} {'sets ok':>7} {'dev mean':>8} " + " ".join(f"{name:>8}" for name in names))
    for name_of_part in part_names:
        dev = [parts[name][name_of_part]["development"] for name in names]
        print(f"{name_of_part + ' alone':<55} {'':>7} {statistics.fmean(dev):>8.3f} "
              + " ".join(f"{value:>8.3f}" for value in dev))
    for configuration, figures, kept, mean in rows if args.all else rows[:args.top]:
        print(f"{label(configuration):<55} {kept:>5}/{len(names)} {mean:>8.3f} "
              + " ".join(f"{figures[name]['development']:>8.3f}" for name in names))

    from adapters import hybrid

    chosen, figures, _, _ = rows[0]
    default = (hybrid.DEFAULT_LONG_DOCUMENTS, FusionSettings(hybrid.DEFAULT_FUSION, hybrid.DEFAULT_WEIGHT,
                                                             hybrid.DEFAULT_RRF_K, hybrid.DEFAULT_CANDIDATES))
    print(f"\n# chosen on development: {label(chosen)}")
    print(f"# both splits (recall@{K}); the held-out split never used to choose")
    print(f"{'set':<10} {'split':<12} " + " ".join(f"{part:>12}" for part in part_names)
          + f" {'best part':>10} {'hybrid':>7} {'- best':>7}")
    means: dict[str, list[float]] = {part: [] for part in [*part_names, "hybrid"]}
    for split in SPLITS:
        for name in names:
            hybrid_value = figures[name][split]
            if split == "held-out":
                for part in part_names:
                    means[part].append(parts[name][part][split])
                means["hybrid"].append(hybrid_value)
            print(f"{name:<10} {split:<12} " + " ".join(f"{parts[name][part][split]:>12.3f}" for part in part_names)
                  + f" {best[name][split]:>10.3f} {hybrid_value:>7.3f} {hybrid_value - best[name][split]:>+7.3f}")
    print(f"{'mean':<10} {'held-out':<12} " + " ".join(f"{statistics.fmean(means[part]):>12.3f}" for part in part_names)
          + f" {'':>10} {statistics.fmean(means['hybrid']):>7.3f}")
    if chosen != default:
        print(f"# note: the adapter's default is {label(default)}; pass the chosen options to use these figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
