"""Comparison speed: `compare` on both statistics engines beside scipy's and ranx's tests, in one run.

Two workloads, each a base and 3 candidates at --resamples (default 10,000):

- **shipped**: the four shipped sets (their real queries, categories, splits and groups),
  per-query recall@10 and nDCG@10 and latencies drawn at random; the whole of
  `compare_many` (every scope, both tested metrics, equivalence CIs, movement, latency CIs).
- **1,000 queries**: one generated set of 1,000 queries (3 judged documents each, 8
  categories, 2 splits, no groups), runs of 10 documents; `compare_many` on recall@10 alone.

Ours is timed cold (the first comparison in the process, imports excluded, no cached draws) on
the numpy engine and on the pure-Python one; the two must print the same document (checked).
On the 1,000-query workload the pure-Python engine runs --python-resamples (default 1,000) and
its time is scaled to --resamples (time is linear in resamples), since it would take minutes.

Peers, on the 1,000-query workload's headline tests only (recall@10 of each candidate against
the base, paired per query): scipy.stats `bootstrap` (paired, percentile CI) plus
`permutation_test` (paired sign flips), and ranx `compare` (Fisher's randomization test; it
computes recall@10 from the qrels and runs itself, and tests every pair of the 4 runs). "ours
(headline)" runs the same tests as scipy: paired_test per candidate. Ratios are time / ours.

    python -m benchmarks.compare [--resamples 10000] [--python-resamples 1000] [--seed 0]

Targets (docs/performance.md): shipped under 2 s, 1,000 queries under 5 s, on the 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.arguments import at_least
from harness.scoring import stats
from harness.scoring.compare import RunView, compare_many
from harness.scoring.metrics import compute_many, parse_metric
from harness.sets.loader import load_set

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("code", "dedupe", "memory", "wiki")
CANDIDATES = 3
GRID = (0.0, 1 / 3, 0.5, 2 / 3, 1.0)


def shipped_views(seed: int) -> list[RunView]:
    """Base and candidates over the shipped sets' real queries, with random per-query values."""
    rng = random.Random(seed)
    sets = [load_set(ROOT / "sets" / name) for name in SHIPPED]
    views = []
    for index in range(CANDIDATES + 1):
        entries = {}
        for query_set in sets:
            rows = {}
            for query in query_set.queries:
                recall = rng.choice(GRID)
                rows[query.qid] = {"qid": query.qid, "query": query.query, "category": query.category,
                                   "split": query.split, "group": query.group, "found": [],
                                   "latency_ms": rng.uniform(0.5, 20.0),
                                   "metrics": {"recall@10": recall, "ndcg@10": recall * rng.uniform(0.5, 1.0)}}
            entries[query_set.name] = {"revision": query_set.revision, "corpus_hash": query_set.corpus_hash,
                                       "k": query_set.k, "queries": rows}
        views.append(RunView(f"run{index}", {"version": 1}, entries, condition="bench", machine={"cpus": 2}))
    return views


def generated_runs(queries: int, seed: int) -> tuple[dict, list[dict]]:
    """(qrels, runs): 3 judged documents per query; each run ranks 10 documents by strictly decreasing score."""
    rng = random.Random(seed)
    qrels, runs = {}, [{} for _ in range(CANDIDATES + 1)]
    for number in range(queries):
        qid = f"q{number:04d}"
        relevant = [f"{qid}-rel{i}" for i in range(3)]
        qrels[qid] = {doc: 1 for doc in relevant}
        base_hits = rng.randint(0, 3)
        for index, run in enumerate(runs):
            hits = base_hits if index == 0 else min(3, max(0, base_hits + rng.choice((-1, 0, 0, 0, 1))))
            docs = relevant[:hits] + [f"{qid}-other{i}" for i in range(10 - hits)]
            rng.shuffle(docs)
            run[qid] = {doc: float(10 - position) for position, doc in enumerate(docs)}
    return qrels, runs


def generated_views(qrels: dict, runs: list[dict], seed: int) -> list[RunView]:
    rng = random.Random(seed)
    recall = (parse_metric("recall@10"),)
    latency = {qid: rng.uniform(0.5, 20.0) for qid in qrels}
    views = []
    for index, run in enumerate(runs):
        rows = {qid: {"qid": qid, "query": qid, "category": f"c{int(qid[1:]) % 8}",
                      "split": ("development", "held-out")[int(qid[1:]) % 2], "group": None, "found": [],
                      "latency_ms": latency[qid] * (1.0 if index == 0 else rng.uniform(0.8, 1.3)),
                      "metrics": compute_many(recall, list(scores), qrels[qid])}
                for qid, scores in run.items()}
        views.append(RunView(f"run{index}", {"version": 1},
                             {"generated": {"revision": 1, "corpus_hash": "-", "k": 10, "queries": rows}},
                             condition="bench", machine={"cpus": 2}))
    return views


def cold_compare(views: list[RunView], engine: str, resamples: int, seed: int, tested: tuple[str, ...]):
    """(seconds, comparison document) of the first compare_many in this process for `engine`."""
    _forget_draws()
    start = time.perf_counter()
    suite = compare_many(views[0], views[1:], resamples=resamples, seed=seed, tested=tested, engine=engine)
    seconds = time.perf_counter() - start
    document = json.dumps(suite.to_dict()).replace(f'"{engine}"', '"ENGINE"')
    return seconds, document


def _forget_draws() -> None:
    stats.bootstrap_statistics.cache_clear()
    if stats.default_engine() == "numpy":
        from harness.scoring import numpy_engine
        numpy_engine._DRAWS.clear()
        numpy_engine.order_statistics.cache_clear()


def headline_values(views: list[RunView]) -> list[list[float]]:
    rows = [view.sets["generated"]["queries"] for view in views]
    return [[row[qid]["metrics"]["recall@10"] for qid in sorted(rows[0])] for row in rows]


def ours_headline(values: list[list[float]], resamples: int, seed: int) -> Callable[[], list]:
    def run() -> list:
        _forget_draws()
        base = {str(i): v for i, v in enumerate(values[0])}
        return [stats.paired_test(base, {str(i): v for i, v in enumerate(candidate)}, resamples=resamples, seed=seed)
                for candidate in values[1:]]
    return run


def scipy_headline(values: list[list[float]], resamples: int, seed: int) -> Callable[[], list] | str:
    try:
        import numpy as np
        from scipy import stats as scipy_stats
    except ImportError as exc:
        return f"not installed ({exc}); pip install scipy"

    def mean_difference(x, y, axis=-1):
        return np.mean(y - x, axis=axis)

    def run() -> list:
        results = []
        base = np.array(values[0])
        for candidate in values[1:]:
            data = (base, np.array(candidate))
            interval = scipy_stats.bootstrap(data, mean_difference, paired=True, vectorized=True,
                                             n_resamples=resamples, method="percentile", rng=seed).confidence_interval
            test = scipy_stats.permutation_test(data, mean_difference, permutation_type="samples", vectorized=True,
                                                n_resamples=resamples, rng=seed)
            results.append((interval.low, interval.high, test.pvalue))
        return results
    return run


def ranx_headline(qrels: dict, runs: list[dict], resamples: int, seed: int) -> Callable[[], object] | str:
    try:
        import ranx
    except ImportError as exc:
        return f"not installed ({exc}); pip install ranx"

    def run() -> object:
        ranx_runs = [ranx.Run(run, name=f"run{index}") for index, run in enumerate(runs)]
        return ranx.compare(ranx.Qrels(qrels), ranx_runs, metrics=["recall@10"], stat_test="fisher",
                            n_permutations=resamples, random_seed=seed, make_comparable=True)
    return run


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=at_least(1), default=stats.RESAMPLES)
    parser.add_argument("--python-resamples", type=at_least(1), default=1_000,
                        help="resamples of the pure-Python engine on the 1,000-query workload (scaled)")
    parser.add_argument("--queries", type=at_least(2), default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if stats.default_engine() != "numpy":
        print("numpy is not importable: only the pure-Python engine can run (pip install -e '.[test]')")
        return 1
    resamples = args.resamples
    print(f"base + {CANDIDATES} candidates, {resamples} resamples, seed {args.seed}; cold = first comparison "
          f"(no cached draws), imports excluded")

    shipped = shipped_views(args.seed)
    queries = sum(len(entry["queries"]) for entry in shipped[0].sets.values())
    numpy_seconds, numpy_document = cold_compare(shipped, "numpy", resamples, args.seed, ("recall@10", "ndcg@10"))
    python_seconds, python_document = cold_compare(shipped, "python", resamples, args.seed, ("recall@10", "ndcg@10"))
    print(f"\nshipped sets ({', '.join(SHIPPED)}: {queries} queries), recall@10 and nDCG@10, whole compare_many")
    print(f"  numpy engine   {numpy_seconds:8.2f} s   (target < 2 s)")
    print(f"  python engine  {python_seconds:8.2f} s   {python_seconds / numpy_seconds:6.1f}x the numpy engine")
    print(f"  same document on both engines: {numpy_document == python_document}")

    qrels, runs = generated_runs(args.queries, args.seed)
    generated = generated_views(qrels, runs, args.seed)
    numpy_seconds, numpy_document = cold_compare(generated, "numpy", resamples, args.seed, ("recall@10",))
    few = args.python_resamples
    python_seconds, python_document = cold_compare(generated, "python", few, args.seed, ("recall@10",))
    _, numpy_few = cold_compare(generated, "numpy", few, args.seed, ("recall@10",))
    scaled = python_seconds * resamples / few
    print(f"\n{args.queries} generated queries (8 categories, 2 splits), recall@10, whole compare_many")
    print(f"  numpy engine   {numpy_seconds:8.2f} s   (target < 5 s)")
    print(f"  python engine  {scaled:8.2f} s   {scaled / numpy_seconds:6.1f}x the numpy engine "
          f"({python_seconds:.2f} s at {few} resamples, scaled)")
    print(f"  same document on both engines (at {few} resamples): {numpy_few == python_document}")

    values = headline_values(generated)
    tools: dict[str, Callable[[], object] | str] = {
        "ours (headline), numpy": ours_headline(values, resamples, args.seed),
        "scipy bootstrap+permutation": scipy_headline(values, resamples, args.seed),
        "ranx compare (fisher, 6 pairs)": ranx_headline(qrels, runs, resamples, args.seed),
    }
    print(f"\nheadline tests only: recall@10 of {CANDIDATES} candidates vs the base over {args.queries} queries "
          f"(CI + p per candidate; ranx: p only, every pair)")
    reference = None
    for label, tool in tools.items():
        if isinstance(tool, str):
            print(f"  {label:<32}{tool}")
            continue
        seconds = timed(tool)
        reference = reference or seconds
        print(f"  {label:<32}{seconds:8.2f} s   {seconds / reference:6.1f}x ours")
    return 0 if numpy_document and numpy_few == python_document else 1


if __name__ == "__main__":
    raise SystemExit(main())
